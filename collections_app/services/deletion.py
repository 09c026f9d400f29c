"""Deleting a collection or a tenant: gone for every reader at once, its rows removed in the background.

A collection of a million paragraphs took minutes to delete in one transaction (and a tenant's ORM cascade left
~10 minutes of VACUUM). Now a deletion is two steps (docs/DECISIONS.md, "Deletes in seconds"):

1. `collection_delete` / `tenant_delete`: one short transaction flags the row (`deleting_at`); for a tenant, every
   collection of it too. From its commit on no search, list, count, map, export, API detail or admin page reads
   it (Collection.objects, Document.objects and ChunkQuerySet.live() leave it out; the search stages' VISIBLE_SQL
   asks the same flag on the collection row they already join), its name is free, a tenant's keys answer 401, and
   an ingestion of one of its documents publishes nothing (it locks the collection through Collection.objects).
   The removal is queued on commit.
2. `collection_rows_remove` / `tenant_rows_remove` (the queued task's job): the rows go in batches, each its own
   short transaction (keyword rows and a few thousand paragraphs; then documents, their versions, edits and
   files; then the row itself), so nothing holds a lock or a snapshot for long and autovacuum cleans up behind
   each batch instead of one long VACUUM at the end. The task holds a lease (a session advisory lock) while it
   runs; the cluster's hourly recovery round (`deletions_resume`) queues it again for any deletion nobody holds,
   e.g. after a worker was killed. Every step is safe to run twice.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import OperationalError, connection, transaction
from django.db.models import Model
from django.utils import timezone
from psycopg import errors as pg_errors

from accounts.models import Agent, ApiKey, Membership, Reader, Tenant
from collections_app.models import (
    Chunk,
    ChunkKind,
    Collection,
    CollectionFile,
    Document,
    DocumentVersion,
    KeywordBlock,
    KeywordStats,
    KeywordTerm,
    RetiredParagraph,
)
from collections_app.services.vector_index import vector_indexes_rebuild_after_removal
from infra.errors import Conflict
from infra.locks import session_lock, session_lock_held
from infra.queueing import task_name_shown, task_queue_on_commit

logger = logging.getLogger(__name__)

REMOVE_COLLECTION = "collections_app.tasks.remove_collection"
REMOVE_TENANT = "collections_app.tasks.remove_tenant"
# One transaction of the removal: this many paragraphs, and keyword rows of up to this many postings (~100 a
# paragraph: 10,095,343 postings for 100,001 paragraphs). Measured at 20,000 paragraphs (bench/delete.py): a batch
# commits in well under a second, so a search or a publish never waits behind one for long.
PARAGRAPHS_PER_BATCH = 5000
KEYWORD_ROWS_PER_BATCH = 100 * PARAGRAPHS_PER_BATCH
# Documents go through the ORM (their versions, edits and attachments cascade): fewer at a time.
DOCUMENTS_PER_BATCH = 500
# A deleted tenant's other rows (search audits, keys, agents, ...), per transaction.
TENANT_ROWS_PER_BATCH = 5000
# How often a long removal says how far it got (in the cluster's log: ids and counts, never a name or a path).
PROGRESS_EVERY_SECONDS = 10.0


# --- step 1: gone at once ------------------------------------------------------------------------------------------

# How long a delete waits for a write holding the row it flags: a publish commits well within it; a collection
# import holds its collection's row for its whole transaction (minutes at a million paragraphs), and a delete that
# waited for it held a web thread that long (132.8 s for 30,000 paragraphs).
FLAG_WAIT = "3s"


class DeleteBusy(Conflict):
    """A long write (a collection import) holds the row a delete must flag."""


@contextmanager
def _flag_without_waiting(what: str) -> Iterator[None]:
    """One transaction that waits at most FLAG_WAIT for a row lock; after it, DeleteBusy saying what to do."""
    try:
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT current_setting('lock_timeout'), set_config('lock_timeout', %s, true)", [FLAG_WAIT]
                )
                before = cursor.fetchone()[0]
            yield
            with connection.cursor() as cursor:  # as it was, for the rest of a caller's transaction
                cursor.execute("SELECT set_config('lock_timeout', %s, true)", [before])
    except OperationalError as exc:
        if isinstance(exc.__cause__, pg_errors.LockNotAvailable):
            raise DeleteBusy(
                f"{what} is being written by a collection import: delete it once the import has finished or failed "
                "(its progress is on the collection's page)"
            ) from exc
        raise


def collection_delete(*, collection: Collection) -> None:
    """Delete a collection: invisible to every reader from this transaction's commit, its name free; its rows are
    removed in the background (collection_rows_remove, queued on commit). Deleting it again changes nothing."""
    now = timezone.now()
    with _flag_without_waiting("this collection"):
        # One UPDATE, which takes the row lock as a publish does (services/documents/_publish.py): a publish under
        # way commits first and its rows are removed with the rest; one coming after no longer finds the collection.
        flagged = Collection.all_objects.filter(pk=collection.pk, deleting_at__isnull=True).update(deleting_at=now)
        if flagged:
            collection.deleting_at = now
            _queue_collection_removal(collection.pk, collection.name)


def tenant_delete(*, tenant: Tenant) -> None:
    """Delete a tenant: its keys answer 401, its members see nothing of it and every collection of it leaves every
    search from this transaction's commit, its name free; its rows are removed in the background
    (tenant_rows_remove, queued on commit). Deleting it again changes nothing."""
    now = timezone.now()
    with _flag_without_waiting("a collection of this tenant"):
        if not Tenant.all_objects.filter(pk=tenant.pk, deleting_at__isnull=True).update(deleting_at=now):
            return
        tenant.deleting_at = now
        # Its collections are flagged in the same transaction: every read that leaves a deleted collection out
        # (searches above all) leaves the tenant's out without a second rule.
        Collection.all_objects.filter(tenant_id=tenant.pk, deleting_at__isnull=True).update(deleting_at=now)
        task_queue_on_commit(
            REMOVE_TENANT,
            str(tenant.pk),
            task_name=task_name_shown(tenant.name, f"remove tenant {tenant.pk}"),
            group="deletion",
        )


def _queue_collection_removal(collection_id: object, name: str) -> None:
    task_queue_on_commit(
        REMOVE_COLLECTION,
        str(collection_id),
        task_name=task_name_shown(name, f"remove collection {collection_id}"),
        group="deletion",
    )


# --- step 2: the rows, in the background ---------------------------------------------------------------------------


@dataclass
class Removed:
    """What one removal took away (the bench and the progress log read it)."""

    keyword_rows: int = 0
    paragraphs: int = 0
    documents: int = 0
    files: int = 0
    finished: bool = False


def _lease_key(kind: str, pk: object) -> str:
    return f"kbsite-remove-{kind}:{pk}"


@contextmanager
def _lease(kind: str, pk: object) -> Iterator[bool]:
    # Held by the task while it removes; PostgreSQL drops it the moment the worker dies, so "nobody holds it"
    # tells the recovery round the removal is not running (as an ingestion's lease does, services/recovery.py).
    with session_lock(_lease_key(kind, pk), application_name=f"kbsite-remove {kind}") as held:
        yield held


def collection_rows_remove(
    *,
    collection_id: uuid.UUID | str,
    after_batch: Callable[[], object] | None = None,
    rebuild_vector_index: bool = True,
) -> Removed:
    """Remove the rows of a collection being deleted, batch by batch, then its row; after a large removal, the
    vector index is built again from the rows left (services/vector_index.py; a tenant's removal does that once,
    at its end). Safe to run twice: a second run while one holds the lease does nothing; one after it finds the
    collection gone. A collection not being deleted is left alone. `after_batch` is called after each committed
    batch (the tests stop a removal there)."""
    removed = Removed()
    with _lease("collection", collection_id) as held:
        if not held:
            logger.info("collection %s is already being removed by a live worker; this run does nothing", collection_id)
            return removed
        if not Collection.all_objects.deleting().filter(pk=collection_id).exists():
            removed.finished = True
            return removed  # removed already (a second delivery), or never deleted
        started = shown = time.monotonic()
        while True:
            keyword_rows, paragraphs = _paragraphs_batch(collection_id)
            removed.keyword_rows += keyword_rows
            removed.paragraphs += paragraphs
            if not keyword_rows and not paragraphs:
                documents, files = _documents_batch(collection_id)
                if not documents:
                    break
                removed.documents += documents
                removed.files += files
            if after_batch is not None:
                after_batch()
            if time.monotonic() - shown >= PROGRESS_EVERY_SECONDS:
                shown = time.monotonic()
                _log_progress(collection_id, removed, shown - started)
        _collection_row_remove(collection_id)
        removed.finished = True
        _log_progress(collection_id, removed, time.monotonic() - started, done=True)
    if rebuild_vector_index:
        vector_indexes_rebuild_after_removal(removed_paragraphs=removed.paragraphs)
    return removed


def _log_progress(collection_id: object, removed: Removed, seconds: float, *, done: bool = False) -> None:
    logger.info(
        "collection %s %s: %d paragraphs, %d keyword rows, %d documents and %d files removed in %.1f s",
        collection_id,
        "removed" if done else "being removed",
        removed.paragraphs,
        removed.keyword_rows,
        removed.documents,
        removed.files,
        seconds,
    )


def collection_keyword_rows_drop(*, collection_id: uuid.UUID | str, rows: int) -> int:
    """Remove the next share of a collection's keyword index, inside the caller's transaction: whole words, taken
    in their order until their postings reach `rows`, with their word counts; the totals with the last ones.
    Returns how many rows went (0: none was left). Stateless, so a removal that died resumes where it stopped.

    By the collection id and a range of each table's primary key, never by paragraph: a paragraph's postings are
    spread over every word it holds, and looking them up one by one cost as much as reading ten.
    """
    with connection.cursor() as cursor:
        # The words whose postings fit in `rows` (at least one), from the word counts (`paragraphs` is how many
        # postings a word has); a word holding more postings than `rows` goes alone.
        cursor.execute(
            f"""SELECT lexeme FROM (
                    SELECT lexeme,
                           sum(paragraphs) OVER (ORDER BY lexeme ROWS UNBOUNDED PRECEDING) - paragraphs AS before
                    FROM (SELECT lexeme, paragraphs FROM {KeywordTerm._meta.db_table}
                          WHERE collection_id = %s ORDER BY lexeme LIMIT %s) t
                ) r WHERE before < %s""",
            [collection_id, rows, rows],
        )
        words = [row[0] for row in cursor.fetchall()]
        if words:
            cursor.execute(
                f"DELETE FROM {KeywordBlock._meta.db_table} WHERE collection_id = %s AND lexeme = ANY(%s)",
                [collection_id, words],
            )
            postings = cursor.rowcount
            cursor.execute(
                f"DELETE FROM {KeywordTerm._meta.db_table} WHERE collection_id = %s AND lexeme = ANY(%s)",
                [collection_id, words],
            )
            return postings + cursor.rowcount
        # No word left: postings without a word count (none, when the triggers kept them) and the totals.
        cursor.execute(
            f"""DELETE FROM {KeywordBlock._meta.db_table} WHERE ctid = ANY(ARRAY(
                    SELECT ctid FROM {KeywordBlock._meta.db_table} WHERE collection_id = %s LIMIT %s))""",
            [collection_id, rows],
        )
        left = cursor.rowcount
        cursor.execute(f"DELETE FROM {KeywordStats._meta.db_table} WHERE collection_id = %s", [collection_id])
        return left + cursor.rowcount


def _paragraphs_batch(collection_id: uuid.UUID | str) -> tuple[int, int]:
    """One transaction: the next share of the keyword index and the next PARAGRAPHS_PER_BATCH rows of the chunk
    table (paragraphs before parent sections, which they point at). (keyword rows, chunk rows) removed."""
    with transaction.atomic(), connection.cursor() as cursor:
        # The chunk table's delete trigger leaves this collection's rows out of the keyword statistics (migration
        # 0028): subtracting them from an index on its way out joined every paragraph's words with their postings.
        cursor.execute("SELECT set_config('kb.dropped_collections', %s, true)", [f"{{{collection_id}}}"])
        keyword_rows = collection_keyword_rows_drop(collection_id=collection_id, rows=KEYWORD_ROWS_PER_BATCH)
        chunks = 0
        for parents in (False, True):
            kind = "=" if parents else "<>"
            cursor.execute(
                f"""DELETE FROM {Chunk._meta.db_table} WHERE id = ANY(ARRAY(
                        SELECT id FROM {Chunk._meta.db_table}
                        WHERE collection_id = %s AND kind {kind} %s LIMIT %s))""",
                [collection_id, ChunkKind.PARENT.value, PARAGRAPHS_PER_BATCH],
            )
            chunks = cursor.rowcount
            if chunks:
                break
        # At once: nothing else this transaction deletes is left out (in a test, the transaction goes on).
        cursor.execute("SELECT set_config('kb.dropped_collections', '', true)")
    return keyword_rows, chunks


def _documents_batch(collection_id: uuid.UUID | str) -> tuple[int, int]:
    """One transaction: the next DOCUMENTS_PER_BATCH documents (their paragraphs are gone: the ORM's cascade takes
    their versions, edits and attachments), their stored originals once it commits. (documents, files)."""
    storage = Document._meta.get_field("file").storage
    with transaction.atomic():
        documents = Document.all_objects.filter(collection_id=collection_id).values_list("pk", flat=True)
        ids = list(documents[:DOCUMENTS_PER_BATCH])
        if not ids:
            return 0, 0
        files = _stored_files(ids)
        Document.all_objects.filter(pk__in=ids).delete()
        _remove_on_commit(storage, files, "a stored file could not be removed; storage_cleanup will find it")
    return len(ids), len(files)


def _remove_on_commit(storage: Any, names: list[str], failed: str) -> None:
    """Remove stored files once the transaction that dropped their rows commits (a rollback keeps them); one that
    cannot be removed is logged (`failed`, never its name) and the rest go on."""

    def remove() -> None:
        for name in names:
            try:
                storage.delete(name)
            except OSError:
                logger.warning(failed)

    transaction.on_commit(remove)


def _stored_files(document_ids: list[uuid.UUID]) -> list[str]:
    # Every version's, the trash's included (Document.objects would see none of a collection being deleted).
    names = [
        *Document.all_objects.filter(pk__in=document_ids).values_list("file", flat=True),
        *DocumentVersion.objects.filter(document_id__in=document_ids).values_list("file", flat=True),
    ]
    return sorted({name for name in names if name})


def _collection_row_remove(collection_id: uuid.UUID | str) -> None:
    """The collection's row and what is left of it (builds, collection files, golden questions, evaluations,
    ...: a few rows beside its paragraphs), by the ORM's cascade; its collection files' stored files on commit."""
    with transaction.atomic():
        collection = Collection.all_objects.deleting().select_for_update().filter(pk=collection_id).first()
        if collection is None:
            return
        # Export files wait in the default storage under these names (services/collection_file).
        files = CollectionFile.objects.filter(collection_id=collection_id).values_list("stored", flat=True)
        stored = [name for name in files if name]
        collection.delete()
        _remove_on_commit(default_storage, stored, "a stored collection file could not be removed")


def tenant_rows_remove(*, tenant_id: uuid.UUID | str) -> Removed:
    """Remove a tenant being deleted: each of its collections (collection_rows_remove), then its other rows in
    batches (search audits first, then its keys, agents, readers and memberships), then its row. Safe to run twice;
    a collection another worker is removing leaves the tenant for the recovery round's next pass."""
    removed = Removed()
    with _lease("tenant", tenant_id) as held:
        if not held:
            logger.info("tenant %s is already being removed by a live worker; this run does nothing", tenant_id)
            return removed
        if not Tenant.all_objects.deleting().filter(pk=tenant_id).exists():
            removed.finished = True
            return removed
        # A collection made while the tenant was flagged (its transaction began before) is flagged now.
        Collection.all_objects.filter(tenant_id=tenant_id, deleting_at__isnull=True).update(deleting_at=timezone.now())
        for collection_id in Collection.all_objects.filter(tenant_id=tenant_id).values_list("pk", flat=True):
            part = collection_rows_remove(collection_id=collection_id, rebuild_vector_index=False)
            removed.paragraphs += part.paragraphs
            removed.keyword_rows += part.keyword_rows
            removed.documents += part.documents
            removed.files += part.files
            if not part.finished:
                logger.info("tenant %s waits for collection %s, removed by another worker", tenant_id, collection_id)
                return removed
        for model in _tenant_models():
            _tenant_rows_of(model, tenant_id)
        _retired_paragraphs_of(tenant_id)
        with transaction.atomic():
            tenant = Tenant.all_objects.deleting().select_for_update().filter(pk=tenant_id).first()
            if tenant is not None:
                tenant.delete()
        removed.finished = True
        logger.info("tenant %s removed", tenant_id)
    vector_indexes_rebuild_after_removal(removed_paragraphs=removed.paragraphs)
    return removed


# Removed last: the audit rows refer to them (set to null on their deletion), so those go first.
_PEOPLE_AND_KEYS: tuple[type[Model], ...] = (ApiKey, Agent, Reader, Membership)


def _tenant_models() -> list[type[Model]]:
    """Every model with a foreign key to the tenant, collections aside (removed above), people and keys last."""
    models = {
        relation.related_model
        for relation in Tenant._meta.related_objects
        if relation.one_to_many and relation.related_model is not Collection
    }
    first = sorted((m for m in models if m not in _PEOPLE_AND_KEYS), key=lambda m: m._meta.label)
    return [*first, *(m for m in _PEOPLE_AND_KEYS if m in models)]


def _tenant_rows_of(model: type[Model], tenant_id: uuid.UUID | str) -> None:
    rows = model._base_manager.filter(tenant_id=tenant_id)
    while True:
        with transaction.atomic():
            ids = list(rows.values_list("pk", flat=True)[:TENANT_ROWS_PER_BATCH])
            if not ids:
                return
            model._base_manager.filter(pk__in=ids).delete()


def _retired_paragraphs_of(tenant_id: uuid.UUID | str) -> None:
    # One per paragraph the tenant ever had removed (the chunk table's trigger keeps them for citation checks):
    # a plain table nothing refers to, taken TENANT_ROWS_PER_BATCH at a time by its tenant index.
    table = RetiredParagraph._meta.db_table
    while True:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                f"""DELETE FROM {table} WHERE ctid = ANY(ARRAY(
                        SELECT ctid FROM {table} WHERE tenant_id = %s LIMIT %s))""",
                [tenant_id, TENANT_ROWS_PER_BATCH],
            )
            if not cursor.rowcount:
                return


# --- recovery ------------------------------------------------------------------------------------------------------


def deletions_resume() -> list[str]:
    """Queue the removal of every collection and tenant being deleted that no live worker is removing (its worker
    died, or the queue lost it), once its deletion is older than KB_RECOVERY_GRACE_SECONDS (its task may not have
    started yet). For the cluster's recovery round; a removal queued twice does nothing the second time.
    Returns what was queued, as "collection <id>" / "tenant <id>"."""
    since = timezone.now() - dt.timedelta(seconds=settings.KB_RECOVERY_GRACE_SECONDS)
    queued: list[str] = []
    for tenant_id, name in Tenant.all_objects.filter(deleting_at__lt=since).values_list("pk", "name"):
        if not session_lock_held(_lease_key("tenant", tenant_id)):
            task_queue_on_commit(
                REMOVE_TENANT, str(tenant_id), task_name=task_name_shown(name, f"remove tenant {tenant_id}"),
                group="deletion",
            )  # fmt: skip
            queued.append(f"tenant {tenant_id}")
    collections = Collection.all_objects.filter(deleting_at__lt=since, tenant__deleting_at__isnull=True)
    for collection_id, name in collections.values_list("pk", "name"):  # a deleted tenant's go with it
        if not session_lock_held(_lease_key("collection", collection_id)):
            _queue_collection_removal(collection_id, name)
            queued.append(f"collection {collection_id}")
    if queued:
        logger.warning("recovery: %d unfinished deletion(s) queued again", len(queued))
    return queued
