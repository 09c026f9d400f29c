"""kbsite/supervision.py with stand-ins: small processes that fork, and are killed.

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

import psutil
import pytest
from django.conf import settings

pytestmark = pytest.mark.ops

# Forks a child that forks a grandchild, printing both pids; every fork dies with its parent.
FORKING = """
import multiprocessing, time
from kbsite.supervision import forks_die_with_their_parent

def grandchild():
    time.sleep(600)

def child():
    process = multiprocessing.get_context("fork").Process(target=grandchild)
    process.start()
    print(process.pid, flush=True)
    time.sleep(600)

forks_die_with_their_parent()
process = multiprocessing.get_context("fork").Process(target=child)
process.start()
print(process.pid, flush=True)
process.join()
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


def test_what_a_process_forks_dies_with_it_and_what_that_forks_too(started):
    process = python(FORKING)
    started.append(process)
    assert process.stdout is not None
    child = psutil.Process(int(process.stdout.readline()))
    grandchild = psutil.Process(int(process.stdout.readline()))

    os.kill(child.pid, signal.SIGKILL)
    assert gone(grandchild)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
