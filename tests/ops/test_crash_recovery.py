"""A worker SIGKILLed mid-ingest: the document still reaches `done`, within two minutes.

A real cluster (`manage.py run_cluster`, the one `make run` starts) runs against the test
database in a process of its own; the test queues an upload through the ORM broker, waits until
a worker holds the document's lease, and kills that worker with SIGKILL.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

import psutil
import pytest
from django.conf import settings
from django.db import connection
from django_q.conf import Conf

from collections_app.models import Document, DocumentStatus
from collections_app.services.documents import document_create

pytestmark = [pytest.mark.ops, pytest.mark.django_db(transaction=True)]

RECOVERY_BOUND = 120  # seconds: the promise made in the README


def paragraphs(topic: str, n: int = 24) -> bytes:
    """A document that takes a few seconds to embed (a freshly started worker first loads the model)."""
    lines = [f"# {topic}"]
    for i in range(n):
        lines.append(f"## Section {i}\n\nParagraph {i} about {topic}: item {i * 7} is kept on shelf {i % 13}.")
    return "\n\n".join(lines).encode()


class Cluster:
    def __init__(self, var_dir: Path, log: Path) -> None:
        db = connection.settings_dict
        host = quote(str(db["HOST"]), safe="")
        self.env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "kbsite.settings",
            "DATABASE_URL": f"postgres://{db['USER']}@{host}:{db['PORT']}/{db['NAME']}",
            "KB_VAR_DIR": str(var_dir),
            "KB_STORAGE_ROOT": str(settings.MEDIA_ROOT),
            "KB_SECRET_KEY": settings.SECRET_KEY,  # the queue's payloads are signed with it
            "KB_RECOVERY_SECONDS": "5",
            "KB_RECOVERY_GRACE_SECONDS": "1",
        }
        self.env.pop("KB_DEBUG", None)
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "manage.py", "run_cluster", "--wait", "30"],
                cwd=settings.BASE_DIR,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def kill(self) -> None:
        """SIGKILL the cluster and everything it forked (its process group), and wait until they are gone."""
        assert self.process is not None
        members = [p for p in psutil.process_iter() if _pgid(p.pid) == self.process.pid]
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        psutil.wait_procs(members, timeout=30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=30)
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


def worker_holding_a_lease(cluster: Cluster, document: Document | None = None, timeout: float = 60) -> int:
    """The pid of the cluster worker that holds an ingestion lease (it names itself in pg_stat_activity).

    Given a document, also waits until it reads `parsing`: a worker takes the lease first and marks the
    document a moment later, and a kill in between leaves it `queued` (recovered all the same).
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT application_name FROM pg_stat_activity"
                " WHERE datname = current_database() AND application_name LIKE 'kbsite-ingest pid=%%'"
            )
            names = [row[0] for row in cursor.fetchall()]
        if document is not None:
            document.refresh_from_db()
        if names and (document is None or document.status == DocumentStatus.PARSING):
            return int(names[0].split("=", 1)[1])
        assert cluster.process is not None and cluster.process.poll() is None, cluster.log.read_text()[-3000:]
        time.sleep(0.05)
    raise AssertionError(f"no worker took the ingestion in {timeout}s:\n{cluster.log.read_text()[-3000:]}")


def seconds_until_done(document: Document, cluster: Cluster) -> float:
    started = time.monotonic()
    while time.monotonic() - started < RECOVERY_BOUND:
        document.refresh_from_db()
        assert document.status != DocumentStatus.ERROR, document.error
        if document.status == DocumentStatus.DONE:
            return time.monotonic() - started
        time.sleep(0.5)
    raise AssertionError(f"still {document.status} after {RECOVERY_BOUND}s:\n{cluster.log.read_text()[-3000:]}")


@pytest.fixture
def cluster(tmp_path, monkeypatch):
    # Uploads go to the ORM broker's queue for the cluster, instead of running inline as in the other tests.
    monkeypatch.setattr(Conf, "SYNC", False)
    running = Cluster(tmp_path / "var", tmp_path / "cluster.log")
    running.start()
    yield running
    running.stop()


def test_a_worker_killed_mid_ingest_is_recovered_by_the_live_cluster_and_after_a_restart(cluster, collection, capsys):
    # 1. The worker dies; the cluster lives on (django-q2 starts a new worker) and requeues the document.
    first = document_create(collection=collection, filename="shelves.md", content=io.BytesIO(paragraphs("shelves")))
    worker = worker_holding_a_lease(cluster, first.document)
    # Ingestion is batch work: the worker yields the CPU to searches (KB_CLUSTER_NICE, 10 by default).
    assert psutil.Process(worker).nice() == min(19, os.nice(0) + settings.KB_CLUSTER_NICE)
    os.kill(worker, signal.SIGKILL)
    first.document.refresh_from_db()
    assert first.document.status == DocumentStatus.PARSING  # killed mid-ingest
    live = seconds_until_done(first.document, cluster)

    # 2. The worker dies with the whole cluster (SIGKILL to its process group); the next cluster, at its
    # start, requeues the document the dead one had taken.
    second = document_create(collection=collection, filename="ledgers.md", content=io.BytesIO(paragraphs("ledgers")))
    worker_holding_a_lease(cluster, second.document)
    cluster.kill()
    second.document.refresh_from_db()
    assert second.document.status == DocumentStatus.PARSING
    cluster.start()
    restarted = seconds_until_done(second.document, cluster)

    assert Document.objects.get(pk=first.document.pk).chunks.exists()
    assert Document.objects.get(pk=second.document.pk).chunks.exists()
    with capsys.disabled():
        print(f"\nrecovered: {live:.1f}s with the cluster alive, {restarted:.1f}s after a cluster restart")
