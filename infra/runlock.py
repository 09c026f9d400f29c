"""One of each per machine: a pid file under var/run held with an fcntl lock.

The kernel drops the lock when the holder dies, however it dies (SIGKILL included), so a stale
file never blocks a start and no clean-up is needed. A cluster's forked sentinel and workers
share the lock with it: while any of them lives, a second cluster refuses to start.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path
from typing import IO


class AlreadyRunning(RuntimeError):
    def __init__(self, name: str, pid: str) -> None:
        super().__init__(f"{name} is already running (pid {pid or 'unknown'})")
        self.pid = pid


_held: dict[str, IO[str]] = {}


def run_lock(var_dir: Path, name: str, *, wait: float = 0) -> None:
    """Hold var/run/<name>.lock for the life of this process; AlreadyRunning if a live process holds it.

    `wait` gives a holder that is stopping (its parent was just killed) that many seconds to let go.
    """
    if name in _held:
        return
    run_dir = Path(var_dir) / "run"
    run_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = run_dir / f"{name}.lock"
    handle = open(path, "a+")  # noqa: SIM115 - held until the process ends
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() >= deadline:
                handle.seek(0)
                pid = handle.read().strip()
                handle.close()
                raise AlreadyRunning(name, pid) from None
            time.sleep(0.5)
    handle.seek(0)
    handle.truncate()
    handle.write(f"{os.getpid()}\n")
    handle.flush()
    _held[name] = handle


def run_lock_holder(var_dir: Path, name: str) -> int | None:
    """The pid holding var/run/<name>.lock, or None when nobody does."""
    path = Path(var_dir) / "run" / f"{name}.lock"
    if not path.exists():
        return None
    with open(path) as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = handle.read().strip()
            return int(text) if text.isdigit() else -1
        return None
