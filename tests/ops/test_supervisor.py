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
import psycopg
import pytest
import requests
from django.conf import settings

from infra.runlock import run_lock_holder

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
        # XDG_RUNTIME_DIR: the test run's own var/run (set by its embedded PostgreSQL), where gunicorn would put
        # its control socket; each platform gets its var/run instead, as `make run` does.
        for name in ("KB_DEBUG", "KB_SECRET_KEY", "DATABASE_URL", "XDG_RUNTIME_DIR"):
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

    def start(self, *args: str) -> subprocess.Popen[bytes]:
        """Start the supervisor in a process group of its own (as `make run` has) and wait until it serves."""
        with open(self.log, "ab") as log:
            process = subprocess.Popen(
                [sys.executable, "manage.py", "serve", *args],
                cwd=settings.BASE_DIR,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert process.poll() is None, self.log.read_text()[-3000:]
            if self.answers() and self.cluster_started_by(process):
                return process
            time.sleep(0.5)
        raise AssertionError(f"not serving after 120s:\n{self.log.read_text()[-3000:]}")

    def cluster_started_by(self, supervisor: subprocess.Popen[bytes]) -> bool:
        """Whether the cluster holding the lock is this supervisor's (not one an earlier run left behind)."""
        holder = run_lock_holder(self.var_dir, "cluster")
        try:
            return holder is not None and holder > 0 and psutil.Process(holder).ppid() == supervisor.pid
        except psutil.NoSuchProcess:
            return False

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


def pgid(process: psutil.Process) -> int | None:
    try:
        return os.getpgid(process.pid)
    except ProcessLookupError:
        return None


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


def book(topic: str, sections: int) -> bytes:
    """A Markdown document whose ingestion takes a while: every section is a paragraph to embed."""
    lines = [f"# {topic}"]
    for i in range(sections):
        lines.append(
            f"## Section {i}\n\nParagraph {i} about {topic}: item {i * 7} is kept on shelf {i % 13}, "
            f"next to box {i * 3 % 17}, and is counted every {i % 5 + 1} weeks by the {topic} team."
        )
    return "\n\n".join(lines).encode()


class Api:
    """The management API of a running platform, with an editor's key."""

    def __init__(self, platform: Platform, key: str) -> None:
        self.base = f"http://127.0.0.1:{platform.port}/api/manage"
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {key}"

    def collection(self, name: str) -> str:
        answer = self.session.post(f"{self.base}/collections", json={"name": name}, timeout=60)
        assert answer.status_code == 201, answer.text
        return str(answer.json()["id"])

    def upload(self, collection: str, filename: str, content: bytes) -> str:
        answer = self.session.post(
            f"{self.base}/collections/{collection}/documents", files={"file": (filename, content)}, timeout=60
        )
        assert answer.status_code == 202, answer.text
        return str(answer.json()["document_id"])

    def document(self, collection: str, document: str) -> dict:
        answer = self.session.get(f"{self.base}/collections/{collection}/documents/{document}", timeout=60)
        assert answer.status_code == 200, answer.text
        return dict(answer.json())


def editor_key(platform: Platform) -> str:
    created = platform.manage("create_api_key", "--tenant", "ops", "--role", "editor", timeout=300)
    assert created.returncode == 0, created.stderr[-3000:]
    return created.stdout.strip().splitlines()[-1]


def ingesting_worker(platform: Platform, timeout: float = 120) -> int:
    """The pid of the cluster worker holding an ingestion lease (it names itself in pg_stat_activity)."""
    # postmaster.pid: pid, data directory, start time, port, socket directory, ...
    lines = (platform.var_dir / "pgdata" / "postmaster.pid").read_text().splitlines()
    deadline = time.monotonic() + timeout
    with psycopg.connect(host=lines[4], port=lines[3], user="postgres", dbname="kbsite", autocommit=True) as db:
        while time.monotonic() < deadline:
            names = db.execute(
                "SELECT application_name FROM pg_stat_activity WHERE application_name LIKE 'kbsite-ingest pid=%'"
            ).fetchall()
            if names:
                return int(names[0][0].split("=", 1)[1])
            time.sleep(0.2)
    raise AssertionError(f"no worker took the ingestion in {timeout}s:\n{platform.log.read_text()[-3000:]}")


def test_sigkill_of_the_group_mid_ingest_leaves_nothing_and_the_next_start_finishes_the_document(platform, capsys):
    key = editor_key(platform)
    supervisor = platform.start()
    api = Api(platform, key)
    collection = api.collection("shelves")
    # About a minute of embedding on a busy 2-core machine: far longer than the 20 s the old run gets to go.
    document = api.upload(collection, "shelves.md", book("shelves", 150))
    worker = psutil.Process(ingesting_worker(platform))

    # `kill -9 -PGID` of `make run` while a worker is embedding the document: the cluster, its workers, the web
    # server and the embedded PostgreSQL all go within seconds (a cluster left running would refuse the next start).
    killed_at = time.monotonic()
    os.killpg(supervisor.pid, signal.SIGKILL)
    supervisor.wait()
    left = platform.wait_until_nothing_runs(timeout=20)
    assert left == [], "still running 20 s after the kill:\n" + "\n".join(left)
    assert gone(worker)
    stopped = time.monotonic() - killed_at

    # The next start serves within a minute, and its cluster requeues the document the killed worker had taken.
    started_at = time.monotonic()
    platform.start()
    serving = time.monotonic() - started_at
    assert serving < 60
    deadline = time.monotonic() + 300
    while (status := api.document(collection, document)["status"]) in (
        "queued",
        "parsing",
    ) and time.monotonic() < deadline:
        time.sleep(1)
    assert status == "done", f"{api.document(collection, document)}\n{platform.log.read_text()[-5000:]}"
    with capsys.disabled():
        print(
            f"\nkilled mid-ingest: nothing left after {stopped:.1f}s; serving again {serving:.1f}s after the start, "
            f"document done {time.monotonic() - started_at:.1f}s after it"
        )


# The Procfile's cluster with its parent-death signal cleared: it outlives a supervisor killed alone, as a cluster
# left by a kbsite without one did, or one whose signal was lost.
DEATHLESS_PROCFILE = """\
web: .venv/bin/gunicorn --config kbsite/gunicorn_conf.py kbsite.wsgi
cluster: .venv/bin/python -c "import ctypes, os, sys; ctypes.CDLL(None).prctl(1, 0, 0, 0, 0); \
os.execv(sys.executable, [sys.executable, 'manage.py', 'run_cluster', '--wait', '30'])"
"""


def test_a_start_stops_the_cluster_a_killed_supervisor_left_running_and_says_so(platform):
    procfile = platform.var_dir / "Procfile"
    procfile.write_text(DEATHLESS_PROCFILE)
    supervisor = platform.start("--procfile", str(procfile))
    [stale] = platform.clusters()
    web = [p for p in platform.processes() if "kbsite.wsgi" in p.cmdline()]
    supervisor.kill()  # the supervisor alone
    supervisor.wait()
    psutil.wait_procs(web, timeout=60)
    assert stale.is_running() and run_lock_holder(platform.var_dir, "cluster") == stale.pid
    stale_group = [p for p in platform.processes() if pgid(p) == stale.pid]
    assert len(stale_group) > 2  # the cluster, its sentinel and the sentinel's workers

    said = len(platform.log.read_text())
    platform.start()
    assert (
        f"stopping the cluster (pid {stale.pid}) left running by a supervisor that died (pid {supervisor.pid})"
        in platform.log.read_text()[said:]
    )
    assert all(gone(p) for p in stale_group)
    [cluster] = platform.clusters()
    assert run_lock_holder(platform.var_dir, "cluster") == cluster.pid != stale.pid
