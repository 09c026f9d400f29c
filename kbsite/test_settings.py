"""Test settings: the real settings with speed switches flipped, nothing else."""

import os

os.environ.setdefault("KB_DEBUG", "1")
os.environ.setdefault("KB_SECRET_KEY", "test-only")

from kbsite.settings import *  # noqa: F403
from kbsite.settings import Q_CLUSTER, VAR_DIR

# Tasks run inline when their transaction commits, so a test sees the result.
Q_CLUSTER["sync"] = True
MEDIA_ROOT = VAR_DIR / "test-storage"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
