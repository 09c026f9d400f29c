"""What an export and an import share as background jobs: queued after the commit that creates their record, taken
by a task that leaves a finished (or failed) record alone, so a second delivery of the task does nothing, and
their progress, written as they go on a connection of their own."""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.core.files import File
from django.core.files.storage import default_storage
from django.db import connections, router, transaction
from django.utils import timezone

from collections_app.models import CollectionFile, CollectionFileKind, CollectionFileStatus
from infra.errors import DomainError
from infra.locks import session_lock, session_lock_held

logger = logging.getLogger(__name__)

# Seconds between two progress writes of one job (a new phase, and the last paragraph, are written at once).
PROGRESS_EVERY = 0.5

TASKS = {
    CollectionFileKind.EXPORT: "collections_app.tasks.export_collection_file",
    CollectionFileKind.IMPORT: "collections_app.tasks.import_collection_file",
}


def collection_file_queue(record: CollectionFile) -> None:
    """Queue `record`'s task once the transaction that created the record commits (never for a rolled-back one)."""
    from django_q.tasks import async_task

    record_id = str(record.pk)
    kind = CollectionFileKind(record.kind)
    transaction.on_commit(
        lambda: async_task(
            TASKS[kind],
            record_id,
            task_name=f"{kind.label} of a collection file ({record_id})",
            group="collection-files",
        )
    )


def _lease_key(record_id: object) -> str:
    return f"kbsite-collection-file:{record_id}"


@contextmanager
def collection_file_lease(record_id: object) -> Iterator[bool]:
    """Hold a job's lease while it runs (a session advisory lock on a connection of its own, which the server drops
    when the worker's process dies); yields False when a live worker holds it already. A job marks its record
    `running` only inside it, so a `running` record nobody holds is a job whose worker died."""
    with session_lock(_lease_key(record_id), application_name=f"kbsite-collection-file pid={os.getpid()}") as taken:
        yield taken


def collection_files_sweep() -> int:
    """The recovery round's sweep: imports and exports left `running` by a worker that died (nobody holds their
    lease) are marked failed, saying what to do; a dead import's upload is removed. Before, such a record said
    "importing" for ever (the task is never run twice). Returns how many."""
    failed = 0
    for record in CollectionFile.objects.filter(status=CollectionFileStatus.RUNNING):
        if session_lock_held(_lease_key(record.pk)):
            continue
        again = "import the file again" if record.kind == CollectionFileKind.IMPORT else "export again"
        failed += CollectionFile.objects.filter(pk=record.pk, status=CollectionFileStatus.RUNNING).update(
            status=CollectionFileStatus.ERROR, phase="", finished_at=timezone.now(),
            error=f"the worker running this {record.get_kind_display()} stopped; {again}",
        )  # fmt: skip
        if record.kind == CollectionFileKind.IMPORT and record.stored:
            default_storage.delete(record.stored)
            CollectionFile.objects.filter(pk=record.pk).update(stored="")
        logger.info("collection file %s: its worker stopped, marked failed", record.pk)
    return failed


def collection_file_pending(collection_file_id: str, kind: CollectionFileKind) -> CollectionFile | None:
    """The record a task is to work on, or None when it is gone or already finished."""
    record = CollectionFile.objects.select_related("collection").filter(pk=collection_file_id, kind=kind).first()
    if record is None or record.status in (CollectionFileStatus.DONE, CollectionFileStatus.ERROR):
        return None
    return record


class ExportExpired(DomainError):
    """A finished export whose file is no longer stored (removed since): the collection is exported again."""

    meaning = "not_found"


def collection_file_open(record: CollectionFile) -> Any:
    """The stored file of `record`, open for reading; ExportExpired when it is gone (never the path)."""
    try:
        return default_storage.open(record.stored, "rb")
    except FileNotFoundError:
        raise ExportExpired("this export has expired (its file is no longer stored): export again.") from None


def collection_files_stored() -> set[str]:
    """The stored files collection-file records name (finished exports, imports not yet run): not orphans."""
    return set(CollectionFile.objects.exclude(stored="").values_list("stored", flat=True).iterator())


def collection_file_store(file: File, *, tenant_id: object) -> str:
    """Keep a collection file under a storage name of its own (a random one: never the uploaded file's name)."""
    return default_storage.save(f"collection-files/{tenant_id}/{uuid.uuid4().hex}.db", file)


class JobProgress:
    """A job's phase and `done` / `total`, written as it goes on a database connection of its own.

    An export reads in one READ ONLY transaction (an UPDATE there fails the export) and an import writes in one
    transaction (an UPDATE there is seen by nobody until it commits): progress written on the job's own
    connection was an error, or stood at 0 until the end. Written at most every PROGRESS_EVERY seconds (and at each new
    phase), in autocommit, never waiting for a lock: progress is worth less than the job, which may hold the row.
    """

    def __init__(self, record: CollectionFile) -> None:
        self._record_id = record.pk
        self._last = 0.0
        self._phase: str | None = None
        self._raw: Any = None  # a psycopg connection, opened at the first write

    def __enter__(self) -> JobProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._raw is not None:
            self._raw.close()
            self._raw = None

    def __call__(self, done: int, total: int | None = None, *, phase: str | None = None) -> None:
        now = time.monotonic()
        new_phase = phase is not None and phase != self._phase
        if not new_phase and now - self._last < PROGRESS_EVERY and done != total:
            return
        self._last = now
        self._phase = phase if phase is not None else self._phase
        try:
            self._write(done, total)
        except Exception as exc:  # never the reason a job fails: the next beat tries again
            logger.warning("progress of collection file %s not written: %s", self._record_id, type(exc).__name__)
            self.__exit__()

    def _write(self, done: int, total: int | None) -> None:
        if self._raw is None:
            wrapper = connections[router.db_for_write(CollectionFile)]
            raw = wrapper.get_new_connection(wrapper.get_connection_params())
            raw.autocommit = True
            self._raw = raw
        table = CollectionFile._meta.db_table
        with self._raw.cursor() as cursor:
            # SKIP LOCKED: the row is left alone (this beat skipped) while the job's own transaction holds it.
            cursor.execute(
                f"""
                UPDATE {table} SET done = %s, total = COALESCE(%s, total), phase = COALESCE(%s, phase)
                WHERE id = (SELECT id FROM {table} WHERE id = %s AND status IN ('queued', 'running')
                            FOR UPDATE SKIP LOCKED)
                """,
                [done, total, self._phase, self._record_id],
            )
