"""Two clusters on "two machines" sharing one Redis queue, one database and one storage folder.

A real Redis server (Debian's redis-server) is started on a loopback port for this module. Each cluster runs
`manage.py run_cluster` from a working folder of its own (its own KB_VAR_DIR: run locks, secret key file), as a
second machine would, with KB_REDIS_URL, the test database and the test's storage folder (KB_STORAGE_DIR) in
common. 200 small documents are queued; one whole cluster is SIGKILLed mid-batch; the other finishes
everything, and no document was built twice.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from django.conf import settings
from django.db import connection
from django.db.models import Count
from django_q.conf import Conf

from bench._pg_pair import free_port
from collections_app.models import Build, Document, DocumentStatus
from collections_app.services.documents import document_create
from infra.redis_broker import REDIS_BROKER
from tests.ops.test_crash_recovery import Cluster, paragraphs, seconds_until_done, worker_holding_a_lease

pytestmark = [pytest.mark.ops, pytest.mark.django_db(transaction=True)]

DOCUMENTS = 200
FINISH_BOUND = 240  # seconds for the survivor to finish the batch (2 busy cores)
REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory) -> Iterator[str]:
    if not Path(REDIS_SERVER).exists():
        if os.environ.get("CI"):
            pytest.fail("redis-server is missing: .ci/run installs it (apt-get install redis-server)")
        pytest.skip("redis-server is not installed (apt-get install redis-server; .ci/run installs it)")
    folder = tmp_path_factory.mktemp("redis")
    port = free_port()
    server = subprocess.Popen(
        [REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(folder), "--protected-mode", "yes"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    import redis

    client = redis.Redis(host="127.0.0.1", port=port)
    deadline = time.monotonic() + 20
    while True:
        try:
            client.ping()
            break
        except redis.ConnectionError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                raise
            time.sleep(0.1)
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            server.wait(timeout=10)
        if server.poll() is None:
            server.kill()
            server.wait()


@pytest.fixture
def redis_queue(redis_url, monkeypatch) -> str:
    """This process queues to Redis through kbsite's broker, as the web server would with KB_REDIS_URL."""
    import redis

    redis.Redis.from_url(redis_url).flushdb()
    monkeypatch.setattr(Conf, "SYNC", False)
    monkeypatch.setattr(Conf, "ORM", None)
    monkeypatch.setattr(Conf, "REDIS", redis_url)
    monkeypatch.setattr(Conf, "BROKER_CLASS", REDIS_BROKER)
    return redis_url


def machine(tmp_path: Path, name: str, redis_url: str) -> Cluster:
    """A cluster as another machine runs it: its own working folder, the shared database, storage and Redis."""
    cluster = Cluster(tmp_path / name / "var", tmp_path / f"{name}.log")
    cluster.env.update(
        {
            "KB_REDIS_URL": redis_url,
            "KB_STORAGE_DIR": str(settings.MEDIA_ROOT),
            "KB_Q_WORKERS": "2",
            "KB_RECOVERY_SECONDS": "3",
            "KB_RECOVERY_GRACE_SECONDS": "1",
            # Speed switches: tiny notes read as text streams (no parser child process) and embedded on one
            # thread per worker (four workers share two cores).
            "KB_STREAM_TEXT_ABOVE": "0",
            "KB_EMBED_THREADS": "1",
        }
    )
    return cluster


def note(i: int) -> bytes:
    return f"# Note {i}\n\nNote {i} says that shelf {i % 13} holds item {i * 7} of the cellar.".encode()


def lease_holders() -> list[int]:
    """The pids of the workers that hold an ingestion lease now (they name themselves in pg_stat_activity)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT application_name FROM pg_stat_activity"
            " WHERE datname = current_database() AND application_name LIKE 'kbsite-ingest pid=%%'"
        )
        return [int(row[0].split("=", 1)[1]) for row in cursor.fetchall()]


def members(cluster: Cluster) -> set[int]:
    assert cluster.process is not None
    found = set()
    for process in psutil.process_iter():
        with contextlib.suppress(psutil.Error, ProcessLookupError):
            if os.getpgid(process.pid) == cluster.process.pid:
                found.add(process.pid)
    return found


def test_two_clusters_on_redis_share_the_queue_and_the_survivor_of_a_sigkill_finishes_every_document(
    redis_queue, collection, tmp_path, capsys
):
    import redis

    first, second = machine(tmp_path, "machine-a", redis_queue), machine(tmp_path, "machine-b", redis_queue)
    first.start()
    second.start()
    try:
        ids = [
            str(
                document_create(collection=collection, filename=f"note-{i}.md", content=io.BytesIO(note(i))).document.pk
            )
            for i in range(DOCUMENTS)
        ]
        # Both machines take documents from the one queue: each is seen holding a lease.
        seen: dict[str, set[int]] = {"first": set(), "second": set()}
        deadline = time.monotonic() + 120
        while not (seen["first"] and seen["second"]) or _done(ids) < DOCUMENTS // 5:
            holders = set(lease_holders())
            seen["first"] |= holders & members(first)
            seen["second"] |= holders & members(second)
            assert time.monotonic() < deadline, (seen, _done(ids), first.log.read_text()[-2000:])
            time.sleep(0.05)
        # Mid-batch, while it holds a lease: the whole first machine dies at once.
        while not set(lease_holders()) & members(first):
            assert time.monotonic() < deadline, "the first machine took no more documents"
            time.sleep(0.02)
        done_at_kill = _done(ids)
        killed = time.monotonic()
        first.kill()
        assert done_at_kill < DOCUMENTS, "the batch was over before the kill: nothing was shown"

        while _done(ids) < DOCUMENTS:
            assert not Document.objects.filter(pk__in=ids, status=DocumentStatus.ERROR).exists(), list(
                Document.objects.filter(pk__in=ids, status=DocumentStatus.ERROR).values_list("error", flat=True)[:3]
            )
            assert time.monotonic() - killed < FINISH_BOUND, (
                f"{_done(ids)}/{DOCUMENTS} done {FINISH_BOUND}s after the kill:\n{second.log.read_text()[-3000:]}"
            )
            time.sleep(0.5)
        finished = time.monotonic() - killed
    finally:
        second.stop()
        first.stop()

    # The dead machine's taken documents were requeued by the survivor (before kbsite's broker, lost for good).
    assert "requeued" in second.log.read_text()
    # None lost, none built twice: one build record per document, and each has its paragraphs.
    builds: dict[object, int] = dict(
        Build.objects.filter(document_id__in=ids).values_list("document").annotate(n=Count("id"))
    )
    assert len(builds) == DOCUMENTS
    twice = {str(pk): n for pk, n in builds.items() if n != 1}
    assert not twice, twice
    assert Document.objects.filter(pk__in=ids, chunks__isnull=True).count() == 0
    # Nothing left behind in Redis: the queue is empty, and the dead machine's taken tasks were requeued.
    client = redis.Redis.from_url(redis_queue)
    assert client.llen("django_q:kbsite:q") == 0
    assert [key for key in client.scan_iter(match="django_q:kbsite:q:taken:*") if client.llen(key)] == []
    with capsys.disabled():
        print(f"\n{done_at_kill}/{DOCUMENTS} done at the kill; the survivor finished the rest in {finished:.1f}s")


def _done(ids: list[str]) -> int:
    return Document.objects.filter(pk__in=ids, status=DocumentStatus.DONE).count()


def test_a_worker_killed_mid_ingestion_on_redis_is_requeued_by_its_own_live_cluster(redis_queue, collection, tmp_path):
    """The task is in the live cluster's taken list, started; its worker is gone, and so is the lease."""
    cluster = machine(tmp_path, "machine-a", redis_queue)
    cluster.env["KB_STREAM_TEXT_ABOVE"] = str(4 * 1024 * 1024)  # parsed in a child process: a few seconds' work
    cluster.start()
    try:
        created = document_create(
            collection=collection, filename="shelves.md", content=io.BytesIO(paragraphs("shelves", 40))
        )
        worker = worker_holding_a_lease(cluster)
        os.kill(worker, signal.SIGKILL)
        created.document.refresh_from_db()
        assert created.document.status in (DocumentStatus.QUEUED, DocumentStatus.PARSING)  # killed mid-ingest
        seconds_until_done(created.document, cluster)
    finally:
        cluster.stop()
    assert "requeued (attempt 2)" in cluster.log.read_text()
    assert Build.objects.filter(document=created.document).count() == 1
