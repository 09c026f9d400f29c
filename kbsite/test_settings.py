"""Test settings: the real settings with speed switches flipped, nothing else."""

import fcntl
import os

os.environ.setdefault("KB_DEBUG", "1")
os.environ.setdefault("KB_SECRET_KEY", "test-only")
# One embedding thread per process: the suite runs two workers (and the platforms some tests start) on two cores,
# whose OpenMP threads spun on each other's time at two threads each. Measured once each, 2,902 tests: 16:57 with
# every core per build, 13:51 with one (docs/DECISIONS.md). The thread tests pass their own counts.
os.environ.setdefault("KB_EMBED_THREADS", "1")

from kbsite.settings import *  # noqa: F403
from kbsite.settings import DATABASES, Q_CLUSTER, VAR_DIR

# Tasks run inline when their transaction commits, so a test sees the result.
Q_CLUSTER["sync"] = True
MEDIA_ROOT = VAR_DIR / "test-storage"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def _free_test_database_name() -> str:
    """test_kbsite, or test_kbsite_N when another test run already holds it (two runs on one server)."""
    (VAR_DIR / "run").mkdir(parents=True, exist_ok=True)
    for n in range(16):
        handle = open(VAR_DIR / "run" / f"test-db-{n}.lock", "w")  # noqa: SIM115 - held for the whole run
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            continue
        globals()["_TEST_DB_LOCK"] = handle
        return "test_kbsite" if n == 0 else f"test_kbsite_{n}"
    raise RuntimeError("16 test runs already share this database server")


if "NAME" not in DATABASES["default"].get("TEST", {}):
    DATABASES["default"]["TEST"] = {"NAME": _free_test_database_name()}
