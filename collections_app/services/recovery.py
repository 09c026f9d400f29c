"""Crash recovery: no document stays `parsing` without a live task.

A document's ingestion can die without a word: its worker is SIGKILLed (out of memory, a
person, a crash), the whole cluster is killed, or the task times out. django-q2 would hand
the lost task out again only when its queue row's lock expires (`retry`, over an hour,
because the timeout must stay large for big documents). Instead:

- the ingestion task holds a **lease** while it runs: a PostgreSQL advisory lock on a
  connection of its own. The server drops it the moment the worker's process dies, so
  "nobody holds the lease" means "no live worker is reading this document".
- when a worker starts an ingestion it marks the task's queue row as **started** (its lock
  pushed to `STARTED`), so a started task is told apart from one the cluster has taken
  from the queue but not yet handed to a worker.
- `documents_recover()` requeues every `parsing` document that nobody holds and whose task
  is started-and-dead, failed (timed out, crashed out of the task) or, at cluster start, held
  by the cluster that died. A `parsing` document with no task at all is left alone: an
  ingestion run in process (a folder sync, a script) holds no lease, so "no lease" alone
  proves nothing there. `manage.py run_cluster` runs it when the cluster starts and
  every KB_RECOVERY_SECONDS; a re-upload of a stuck document calls `document_recover()`.

A requeued task that finds the lease held (the original was alive after all) does nothing,
so recovering too eagerly costs a queue row, never a second ingestion running at once.
After KB_INGEST_MAX_ATTEMPTS deaths the document ends in `error` rather than looping.

On django-q2's ORM broker (the default) the queue is read from its table. On the Redis broker (KB_REDIS_URL,
many clusters on many machines) kbsite's own broker (infra/redis_broker.py) keeps every task a cluster has taken
in that cluster's list until it is acknowledged, and each cluster holds a liveness lock in PostgreSQL: a task
taken by a cluster that is gone, or started by a worker that no longer holds its document's lease, is dead, and
any surviving cluster requeues its document within the same bound. (`cluster_start` means nothing there: other
clusters may be alive.)

Deleted collections and tenants are removed by a task that holds a lease the same way; the hourly part of the
round queues again every removal nobody holds (services/deletion.py: deletions_resume).
"""

from __future__ import annotations

import datetime as dt
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from collections_app.models import DOCUMENT_IN_FLIGHT, Document, DocumentStatus
from infra.locks import session_lock, session_lock_held
from infra.redis_broker import REDIS_BROKER, ReliableRedis

logger = logging.getLogger(__name__)

INGEST_FUNC = "collections_app.tasks.ingest_document"
# A document waiting for its task (`queued`: a re-ingest) or being read (`parsing`) needs a live task.
# A queue row whose worker started it: far past any lock django-q2 sets itself (now + retry),
# so the broker never hands it out again; only the recovery or the monitor's acknowledgement removes it.
STARTED = dt.datetime(9000, 1, 1, tzinfo=dt.UTC)


def _lease_key(document_id: str) -> str:
    return f"kbsite-ingest:{document_id}"


@contextmanager
def document_lease(*, document_id: str) -> Iterator[bool]:
    """Hold the document's ingestion lease while the block runs; yields False if a live task holds it.

    The lock lives on a connection of its own so that nothing the ingestion does with the
    default connection (closing it, a rolled-back transaction) can drop it early. Session
    advisory locks need a direct connection or a session-mode pooler, not transaction pooling.
    """
    # Named after the worker's pid, so an operator (or a test) can see who holds what in pg_stat_activity.
    with session_lock(_lease_key(document_id), application_name=f"kbsite-ingest pid={os.getpid()}") as acquired:
        if not acquired:
            logger.info(
                "document %s is already being ingested by a live worker; this delivery does nothing", document_id
            )
        yield acquired


def document_lease_held(*, document_id: str) -> bool:
    """Whether a live process holds the document's lease (checked by taking it for an instant)."""
    return session_lock_held(_lease_key(document_id))


def ingest_task_started(*, queue_row_id: object) -> None:
    """Mark an ingestion's queue row (its task, on Redis) as started by a worker."""
    if _redis_broker():
        _reliable_redis().task_started(queue_row_id)
        return
    if not _orm_broker():
        return
    from django_q.models import OrmQ

    OrmQ.objects.using(_orm_alias()).filter(pk=queue_row_id).update(lock=STARTED)


# On Redis, a task a live cluster has taken and no worker has started yet: not waiting, not started.
_TAKEN = dt.datetime(8000, 1, 1, tzinfo=dt.UTC)
_WAITING = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


@dataclass
class _QueuedIngest:
    row_id: object  # the ORM queue's row; on Redis, the list that holds it
    lock: dt.datetime
    name: str
    payload: bytes = b""  # on Redis: the task as queued (removed from its list by value)

    @property
    def started(self) -> bool:
        return self.lock >= STARTED

    def waiting(self, now: dt.datetime) -> bool:
        return self.lock <= now


@dataclass
class RecoveryReport:
    requeued: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def documents_recover(*, cluster_start: bool = False) -> RecoveryReport:
    """Requeue every `parsing` document whose task died; fail those that died too often.

    `cluster_start=True` is for the one cluster of this broker, starting: every queue row a
    cluster had taken but not finished was taken by one that is gone.
    """
    report = RecoveryReport()
    # Only the ORM broker's one cluster knows, at its start, that every taken row is a dead cluster's; on Redis
    # the dead clusters' tasks are told apart by their liveness locks.
    cluster_start = cluster_start and _orm_broker()
    grace = timezone.now() - dt.timedelta(seconds=settings.KB_RECOVERY_GRACE_SECONDS)
    in_flight = dict(Document.objects.filter(status__in=DOCUMENT_IN_FLIGHT).values_list("pk", "updated_at"))
    candidates = [pk for pk, updated_at in in_flight.items() if updated_at < grace]
    queued = _queued_ingests()
    # Swept on every pass, with or without documents to recover: rows nothing will ever finish. A document
    # inside the grace (read a moment ago by a worker killed since, as after a quick restart) is not finished:
    # its rows stay for the pass that recovers it.
    _forget_finished(queued, parsing={str(pk) for pk in in_flight})
    for document_id in candidates:
        outcome = _recover_one(str(document_id), queued.get(str(document_id), []), cluster_start=cluster_start)
        if outcome == "requeued":
            report.requeued.append(str(document_id))
        elif outcome == "failed":
            report.failed.append(str(document_id))
    if report.requeued or report.failed:
        logger.warning(
            "recovery: %d document(s) requeued, %d failed after repeated deaths",
            len(report.requeued),
            len(report.failed),
        )
    return report


def _forget_finished(queued: dict[str, list[_QueuedIngest]], *, parsing: set[str]) -> None:
    """Delete rows nothing would ever remove or finish: started rows of documents that finished anyway (a
    later delivery did the work, or the worker died between publishing and the acknowledgement), and any row
    of a document deleted since (a crashed cluster's taken rows would otherwise stay locked for `retry`,
    hours), unless a live worker still holds its lease."""
    existing = {str(pk) for pk in Document.objects.filter(pk__in=list(queued)).values_list("pk", flat=True)}
    stale = [
        row
        for document_id, rows in queued.items()
        if document_id not in parsing
        for row in rows
        if (row.started or document_id not in existing) and not document_lease_held(document_id=document_id)
    ]
    _forget_rows(stale)


def document_recover(*, document: Document) -> bool:
    """Requeue one document if it is `parsing` with no live task (for a re-upload of a stuck file).

    Returns True when it was requeued. A document uploaded moments ago is left alone: its task
    may not be written yet.
    """
    grace = timezone.now() - dt.timedelta(seconds=settings.KB_RECOVERY_GRACE_SECONDS)
    if document.status not in DOCUMENT_IN_FLIGHT or document.updated_at >= grace:
        return False
    document_id = str(document.pk)
    outcome = _recover_one(document_id, _queued_ingests().get(document_id, []), cluster_start=False)
    if outcome == "unknown":
        # No task anywhere and no worker holding it: the periodic recovery leaves such a document alone
        # (it may be read in process), but a person uploading it again is asking for it to be read.
        with transaction.atomic():
            if Document.objects.select_for_update().filter(pk=document_id, status__in=DOCUMENT_IN_FLIGHT).exists():
                _queue(document_id, 1)
                return True
    return outcome == "requeued"


def _recover_one(document_id: str, rows: list[_QueuedIngest], *, cluster_start: bool) -> str:
    now = timezone.now()
    if document_lease_held(document_id=document_id):
        return "alive"  # a worker is reading it
    # Waiting rows are handed out by the broker; rows a live cluster took but has not started are its own.
    if any(r.waiting(now) or (not r.started and not cluster_start) for r in rows):
        return "alive"
    failed = _failed_since(document_id)
    if not rows and not failed:
        # No task of the queue's took it: it is ingested in process (a folder sync, a script), which holds
        # no lease, or its task has not been written yet. Without a dead task to show, it is left alone.
        return "unknown"
    attempt = max([_recovery_number(r.name) for r in rows] + [_recovery_number(name) for name in failed]) + 1
    with transaction.atomic():
        document = Document.objects.select_for_update().filter(pk=document_id, status__in=DOCUMENT_IN_FLIGHT).first()
        if document is None:
            return "gone"
        _forget_rows(rows)
        if attempt > settings.KB_INGEST_MAX_ATTEMPTS:
            document.status = DocumentStatus.ERROR
            document.error = (
                f"ingestion of {document.filename} stopped {attempt - 1} times before finishing "
                "(the worker was killed or ran out of time); upload it again to retry"
            )
            document.save(update_fields=["status", "error", "updated_at"])
            logger.warning("document %s failed after %d interrupted ingestions", document_id, attempt - 1)
            return "failed"
        _queue(document_id, attempt)
    logger.warning("document %s had no live ingestion task; requeued (attempt %d)", document_id, attempt)
    return "requeued"


def _queue(document_id: str, attempt: int) -> None:
    from django_q.tasks import async_task

    # The same queue row name as an upload's, plus the attempt, which is how the next recovery counts.
    name = f"ingest document {document_id} (recovery {attempt})"
    transaction.on_commit(lambda: async_task(INGEST_FUNC, document_id, task_name=name[:100], group="ingestion"))


def _failed_since(document_id: str) -> list[str]:
    """Names of this document's ingestion tasks that django-q2 recorded as failed (timed out, or an error
    out of the task) since the document was last set to `parsing`."""
    from django_q.models import Task

    since = Document.objects.filter(pk=document_id).values_list("updated_at", flat=True).first()
    # Upload tasks are named "<file name> (ingest document <id>)", recoveries "ingest document <id> (recovery n)".
    failed = Task.objects.filter(name__contains=f"ingest document {document_id}", success=False)
    if since is not None:
        failed = failed.filter(stopped__gte=since)
    return list(failed.values_list("name", flat=True))


def _recovery_number(name: str) -> int:
    """Which attempt a task was: the upload's is 1, a recovery's carries its number in its name."""
    marker = "(recovery "
    if marker not in name:
        return 1
    try:
        return int(name.rsplit(marker, 1)[1].rstrip(")"))
    except ValueError:
        return 1


def _queued_ingests() -> dict[str, list[_QueuedIngest]]:
    """The ingestion tasks in the broker's queue (and, on Redis, taken by clusters), by document id."""
    if _redis_broker():
        return _redis_ingests()
    if not _orm_broker():
        return {}
    from django_q.models import OrmQ

    found: dict[str, list[_QueuedIngest]] = {}
    for row in OrmQ.objects.using(_orm_alias()).only("id", "payload", "lock"):
        task = _ingest_task(row.payload)
        if task is not None:
            found.setdefault(task[0], []).append(_QueuedIngest(row_id=row.pk, lock=row.lock, name=task[1]))
    return found


def _redis_ingests() -> dict[str, list[_QueuedIngest]]:
    """The Redis broker's ingestion tasks: waiting in the queue, taken by a live cluster, or dead (started by a
    worker, or taken by a cluster that is gone: then started or not, nobody will finish it)."""
    found: dict[str, list[_QueuedIngest]] = {}
    for taken in _reliable_redis().taken_tasks():
        task = _ingest_task(taken.payload)
        if task is None:
            continue
        if taken.waiting:
            lock = _WAITING
        elif taken.started or not taken.alive:
            lock = STARTED
        else:
            lock = _TAKEN
        found.setdefault(task[0], []).append(
            _QueuedIngest(row_id=taken.where, lock=lock, name=task[1], payload=taken.payload)
        )
    return found


def _ingest_task(payload: object) -> tuple[str, str] | None:
    """(document id, task name) of a queued ingestion; None for any other task, or one we cannot read."""
    from django_q.signing import BadSignature, SignedPackage

    try:
        task = SignedPackage.loads(payload)
    except (BadSignature, ValueError, TypeError, AttributeError, ImportError):
        return None  # signed with another key or not ours to read
    if task.get("func") != INGEST_FUNC or not task.get("args"):
        return None
    return str(task["args"][0]), str(task.get("name") or "")


def _forget_rows(rows: list[_QueuedIngest]) -> None:
    """Remove these tasks from the broker: the ORM queue's rows, or Redis lists' entries."""
    if not rows:
        return
    if _redis_broker():
        broker = _reliable_redis()
        for row in rows:
            broker.forget(str(row.row_id), row.payload)
        return
    from django_q.models import OrmQ

    OrmQ.objects.using(_orm_alias()).filter(pk__in=[r.row_id for r in rows]).delete()


def recovery_reads_redis() -> bool:
    """Whether the queue is kbsite's Redis broker (clusters on many machines, each with a liveness lock)."""
    return settings.Q_CLUSTER.get("broker_class") == REDIS_BROKER


_redis_broker = recovery_reads_redis


def _reliable_redis() -> ReliableRedis:
    from django_q.brokers import get_broker

    broker = get_broker()
    assert isinstance(broker, ReliableRedis), "KB_REDIS_URL is set but the broker is not kbsite's"
    return broker


def _orm_broker() -> bool:
    return "orm" in settings.Q_CLUSTER and "redis" not in settings.Q_CLUSTER


def _orm_alias() -> str:
    return str(settings.Q_CLUSTER.get("orm", "default"))
