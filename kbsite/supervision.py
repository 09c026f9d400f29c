"""`make run`'s processes live and die with their supervisor (`manage.py serve`), however it dies.

The supervisor runs each process in a session of its own, so a signal to make's process group (Ctrl-C, `kill -9
-PGID`) reaches only the supervisor, which stops each process exactly once. A supervisor killed outright stops
nothing itself: its processes learn of it from the kernel, through the parent-death signal (Linux's
PR_SET_PDEATHSIG), which the supervisor sets on each, and which the cluster sets on every process it forks (its
sentinel, and the sentinel's workers). A cluster whose supervisor was killed stops at once (run_cluster).
"""

from __future__ import annotations

import ctypes
import os
import signal

PR_SET_PDEATHSIG = 1
PR_GET_PDEATHSIG = 2
# Resolved here, not in a forked child: loading a library between fork and exec can deadlock.
_prctl = ctypes.CDLL(None, use_errno=True).prctl


def die_with_parent(sig: int = signal.SIGTERM) -> None:
    """Ask the kernel to send `sig` to this process when the thread that started it ends (Linux)."""
    _prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)


def death_signal() -> int:
    """The signal this process gets when its parent dies; 0 when none was asked for."""
    sig = ctypes.c_int(0)
    _prctl(PR_GET_PDEATHSIG, ctypes.byref(sig), 0, 0, 0)
    return sig.value


_forking: dict[str, int] = {}


def forks_die_with_their_parent(sig: int = signal.SIGKILL) -> None:
    """Every process this one forks from now on (and they fork, and so on) gets `sig` when its parent dies.

    The death signal is not inherited across fork, and django-q2 forks its sentinel, which forks the workers:
    without this, a cluster process that dies leaves its workers running, holding the cluster's lock.
    """

    def remember_parent() -> None:
        _forking["parent"] = os.getpid()

    def die_with_it() -> None:
        die_with_parent(sig)
        if os.getppid() != _forking.get("parent"):  # it died before the line above took effect
            os.kill(os.getpid(), sig)

    os.register_at_fork(before=remember_parent, after_in_child=die_with_it)
