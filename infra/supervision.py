"""`make run`'s processes live and die with their supervisor (`manage.py serve`), however it dies.

The supervisor runs each process in a session of its own, so a signal to make's process group (Ctrl-C, `kill -9
-PGID`) reaches only the supervisor, which stops each process exactly once. A supervisor killed outright stops
nothing itself: its processes learn of it from the kernel, through the parent-death signal (Linux's
PR_SET_PDEATHSIG), which the supervisor sets on each, and which the cluster sets on every process it forks (its
sentinel, and the sentinel's workers). A cluster whose supervisor was killed stops at once (run_cluster), and one
that outlived its supervisor anyway (a death signal lost, or left by a version without this module) is stopped by
the next start: it carries its supervisor's pid in its environment, so a start that finds it knows whose it is.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from infra.runlock import run_lock_holder

PR_SET_PDEATHSIG = 1
PR_GET_PDEATHSIG = 2
# Set by the supervisor in the environment of the processes it starts (read back with psutil, never os.environ).
SUPERVISOR_VARIABLE = "KBSITE_SUPERVISOR_PID"
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


@dataclass(frozen=True)
class StaleCluster:
    pid: int  # the cluster's first process: the leader of its process group
    supervisor: int  # the supervisor that started it, now dead


def stale_cluster(var_dir: Path) -> StaleCluster | None:
    """The cluster a dead supervisor left running on `var_dir`, or None (no cluster, or one started by hand).

    Ask only while holding the supervisor's lock: then the supervisor the cluster names is dead.
    """
    pid = run_lock_holder(var_dir, "cluster")
    if pid is None or pid <= 0:
        return None
    # The lock is shared by everything the cluster forked, so its first process may be gone while its sentinel or
    # workers hold it; they are still in its process group (a group's id is not reused while the group lives).
    for process in _process_group(pid):
        with contextlib.suppress(psutil.Error):
            supervisor = process.environ().get(SUPERVISOR_VARIABLE, "")
            if supervisor.isdigit():
                return StaleCluster(pid=pid, supervisor=int(supervisor))
    return None


def stale_cluster_stop(var_dir: Path, cluster: StaleCluster, *, grace: float) -> bool:
    """SIGTERM the cluster's process group, SIGKILL it after `grace` seconds; True once its lock is free."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 30.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(cluster.pid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if run_lock_holder(var_dir, "cluster") is None:
                return True
            time.sleep(0.2)
    return run_lock_holder(var_dir, "cluster") is None


def _process_group(pgid: int) -> list[psutil.Process]:
    members = []
    for process in psutil.process_iter():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if os.getpgid(process.pid) == pgid:
                members.append(process)
    return members
