"""infra/supervision.py with stand-ins: small processes that fork, or hold the cluster's lock, and are killed.

The whole platform, killed for real, is tests/ops/test_supervisor.py.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from django.conf import settings

from infra.runlock import run_lock_holder
from infra.supervision import SUPERVISOR_VARIABLE, StaleCluster, stale_cluster, stale_cluster_stop

pytestmark = pytest.mark.ops

# Forks a child that forks a grandchild, printing both pids; every fork dies with its parent.
# Each pid is one write(2) of a whole line: parent and child share the pipe, and under PYTHONUNBUFFERED (make
# exports it) print() writes the number and its newline apart, so two pids could interleave into one line.
FORKING = """
import multiprocessing, os, time
from infra.supervision import forks_die_with_their_parent

def grandchild():
    time.sleep(600)

def child():
    process = multiprocessing.get_context("fork").Process(target=grandchild)
    process.start()
    os.write(1, b"%d\\n" % process.pid)
    time.sleep(600)

forks_die_with_their_parent()
process = multiprocessing.get_context("fork").Process(target=child)
process.start()
os.write(1, b"%d\\n" % process.pid)
process.join()
"""

# Holds var/run/cluster.lock as a cluster does, sharing it with a forked child (a cluster's sentinel and workers).
HOLDER = """
import os, signal, sys, time
from pathlib import Path
from infra.runlock import run_lock

run_lock(Path(sys.argv[1]), "cluster")
if "--deaf" in sys.argv:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = os.fork()
if child == 0:
    time.sleep(600)
    os._exit(0)
print(child, flush=True)
if "--leader-dies" in sys.argv:
    os._exit(0)
time.sleep(600)
"""


def python(script: str, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", script, *args],
        cwd=settings.BASE_DIR,
        env=env or dict(os.environ),
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,  # as the supervisor starts the cluster
    )


def gone(process: psutil.Process, timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if process.status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.1)
    return False


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen[str]]]:
    processes: list[subprocess.Popen[str]] = []
    yield processes
    for process in processes:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def holder(var_dir: Path, started: list, *args: str, supervisor: str | None = "4242") -> tuple[int, psutil.Process]:
    """Start a lock holder (with a supervisor named in its environment, or none); its pid and its forked child."""
    env = dict(os.environ)
    if supervisor is not None:
        env[SUPERVISOR_VARIABLE] = supervisor
    process = python(HOLDER, str(var_dir), *args, env=env)
    started.append(process)
    assert process.stdout is not None
    child = psutil.Process(int(process.stdout.readline()))
    return process.pid, child


def test_what_a_process_forks_dies_with_it_and_what_that_forks_too(started):
    process = python(FORKING)
    started.append(process)
    assert process.stdout is not None
    # Parent and child each write one pid, in either order: the child is the one the script forked itself.
    child, grandchild = sorted(
        (psutil.Process(int(process.stdout.readline())) for _ in range(2)), key=lambda p: p.ppid() != process.pid
    )

    os.kill(child.pid, signal.SIGKILL)
    assert gone(grandchild)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()


def test_the_cluster_a_dead_supervisor_left_is_found_and_stopped(tmp_path, started):
    pid, child = holder(tmp_path, started)
    assert stale_cluster(tmp_path) == StaleCluster(pid=pid, supervisor=4242)

    assert stale_cluster_stop(tmp_path, StaleCluster(pid=pid, supervisor=4242), grace=30)
    assert run_lock_holder(tmp_path, "cluster") is None
    assert gone(child)


def test_one_that_ignores_sigterm_is_killed_after_the_grace(tmp_path, started):
    pid, child = holder(tmp_path, started, "--deaf")
    began = time.monotonic()
    assert stale_cluster_stop(tmp_path, StaleCluster(pid=pid, supervisor=4242), grace=1)
    assert time.monotonic() - began < 20
    assert gone(child)


def test_one_whose_first_process_died_is_found_by_what_it_forked(tmp_path, started):
    pid, child = holder(tmp_path, started, "--leader-dies")
    assert gone(psutil.Process(pid))
    assert run_lock_holder(tmp_path, "cluster") == pid  # the file names the dead leader; its fork holds the lock

    assert stale_cluster(tmp_path) == StaleCluster(pid=pid, supervisor=4242)
    assert stale_cluster_stop(tmp_path, StaleCluster(pid=pid, supervisor=4242), grace=30)
    assert gone(child)


def test_a_cluster_started_by_hand_is_left_alone(tmp_path, started):
    holder(tmp_path, started, supervisor=None)
    assert stale_cluster(tmp_path) is None
    assert stale_cluster(tmp_path / "nothing-here") is None
