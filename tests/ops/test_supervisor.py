"""`make run`'s supervisor (`manage.py serve`): killed however, it leaves nothing running behind.

It runs here on a var/ of its own, so the embedded PostgreSQL it uses is one it started.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import psutil
import pytest
from django.conf import settings

from kbsite.runlock import run_lock_holder

pytestmark = pytest.mark.ops


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Platform:
    def __init__(self, var_dir: Path) -> None:
        self.var_dir = var_dir
        self.port = free_port()
        self.env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "kbsite.settings",
            "KB_VAR_DIR": str(var_dir),
            "PORT": str(self.port),
            "KB_ACCESS_LOG": "",
            "KB_STOP_SECONDS": "20",
        }
        for name in ("KB_DEBUG", "KB_SECRET_KEY", "DATABASE_URL"):
            self.env.pop(name, None)
        self.log = var_dir / "serve.log"

    def manage(self, *args: str, **kwargs) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=settings.BASE_DIR,
            env=self.env,
            capture_output=True,
            text=True,
            **kwargs,
        )

    def start(self) -> subprocess.Popen[bytes]:
        """Start the supervisor in a process group of its own (as `make run` has) and wait until it serves."""
        with open(self.log, "ab") as log:
            process = subprocess.Popen(
                [sys.executable, "manage.py", "serve"],
                cwd=settings.BASE_DIR,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert process.poll() is None, self.log.read_text()[-3000:]
            if self.answers() and run_lock_holder(self.var_dir, "cluster"):
                return process
            time.sleep(0.5)
        raise AssertionError(f"not serving after 120s:\n{self.log.read_text()[-3000:]}")

    def answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/admin/login/", timeout=5) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    def processes(self) -> list[psutil.Process]:
        """Every process running on this var/: the supervisor's, the web server's, the cluster's, PostgreSQL's."""
        found = []
        for process in psutil.process_iter():
            try:
                mine = process.environ().get("KB_VAR_DIR") == str(self.var_dir)
                serves_it = str(self.var_dir / "pgdata") in " ".join(process.cmdline())
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
            if mine or serves_it:
                found.append(process)
        return found

    def clusters(self) -> list[psutil.Process]:
        """Cluster main processes (not the sentinel and workers they fork)."""
        return [
            p
            for p in self.processes()
            if "run_cluster" in p.cmdline() and "run_cluster" not in psutil.Process(p.ppid()).cmdline()
        ]

    def postmaster(self) -> psutil.Process:
        pid = int((self.var_dir / "pgdata" / "postmaster.pid").read_text().split()[0])
        return psutil.Process(pid)

    def wait_until_nothing_runs(self, timeout: float = 60) -> list[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            left = [p for p in self.processes() if p.status() != psutil.STATUS_ZOMBIE]
            if not left:
                return []
            time.sleep(0.5)
        return [" ".join(p.cmdline()) for p in left]


def gone(process: psutil.Process) -> bool:
    """Exited (a zombie waiting for a parent that may never reap it, in a container, counts as exited)."""
    try:
        return process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.fixture
def platform():
    # A short path: PostgreSQL's socket lives in it and socket paths are limited to 107 bytes.
    var_dir = Path(tempfile.mkdtemp(prefix="kbops-"))
    running = Platform(var_dir)
    migrated = running.manage("migrate", "--noinput", timeout=300)
    assert migrated.returncode == 0, migrated.stderr[-3000:]
    yield running
    for process in running.processes():  # whatever a failed test left
        with contextlib.suppress(psutil.NoSuchProcess):
            process.kill()
    shutil.rmtree(var_dir, ignore_errors=True)


def test_killing_make_runs_group_leaves_nothing_running_and_a_second_start_is_refused(platform):
    supervisor = platform.start()
    postmaster = platform.postmaster()
    assert postmaster.is_running()
    assert len(platform.clusters()) == 1

    second = platform.manage("serve", timeout=60)
    assert second.returncode != 0
    assert "already running" in second.stderr
    assert len(platform.clusters()) == 1

    # SIGKILL to the whole process group, as `kill -9 -PGID` or a closed terminal's hang-up would do.
    os.killpg(supervisor.pid, signal.SIGKILL)
    supervisor.wait()
    assert platform.wait_until_nothing_runs() == []
    assert gone(postmaster)

    # The next start has exactly one cluster; SIGKILL of the top process alone stops it all too.
    supervisor = platform.start()
    clusters = platform.clusters()
    assert len(clusters) == 1
    assert run_lock_holder(platform.var_dir, "cluster") == clusters[0].pid
    postmaster = platform.postmaster()
    supervisor.kill()
    supervisor.wait()
    assert platform.wait_until_nothing_runs() == []
    assert gone(postmaster)
