"""`python -m kbsite.refuse_second_run NAME`: exit 1, saying who, when var/run/NAME.lock is held.

No Django is needed, so `make run` can refuse before it migrates a database a live server is using. The lock
itself is infrastructure (infra/runlock.py); this is the wiring that knows where var/ is.
"""

from __future__ import annotations

import sys

from infra.runlock import run_lock_holder
from kbsite.env import var_dir

if __name__ == "__main__":
    name = sys.argv[1] if len(sys.argv) > 1 else "kbsite"
    holder = run_lock_holder(var_dir(), name)
    if holder is not None:
        sys.exit(f"{name} is already running (pid {holder}): stop it first")
