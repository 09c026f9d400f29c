"""django-q2 tasks: take primitive ids, call one service, safe to run twice."""

import logging
from typing import Any

from django.dispatch import receiver
from django_q.signals import post_execute_in_worker, pre_execute

from collections_app.models import Collection, Document, DocumentStatus
from collections_app.services.archives import archive_build_record
from collections_app.services.collection_file import collection_export_run, collection_import_run
from collections_app.services.deletion import collection_rows_remove, tenant_rows_remove
from collections_app.services.documents import document_ingest
from collections_app.services.folder_sources import FolderSourceError, folder_sources_adopt_legacy, folder_sync
from collections_app.services.paragraph_edits import paragraph_edit_finish
from collections_app.services.recovery import document_lease, ingest_task_started
from collections_app.services.reindex import collection_reindex_run

logger = logging.getLogger(__name__)


def ingest_document(document_id: str, large: bool = False) -> None:
    # Started, then leased (services/recovery.py): the lease tells the recovery that a live worker reads
    # this document; marking first means a worker killed in between is recovered (at worst twice, never
    # not at all). A second delivery of the same document while the lease is held does nothing.
    # `large`: sent back to the queue for a large-document lane (services/documents/_lane.py).
    if _queue_row is not None:
        ingest_task_started(queue_row_id=_queue_row)
    with document_lease(document_id=document_id) as held:
        if held:
            document_ingest(document_id=document_id, queued=True, large=large)


# The queue row of the task this worker is running: django-q2 hands it only to its pre_execute
# signal, and the recovery needs it to tell a started task from one still waiting in the cluster.
_queue_row: object | None = None


@receiver(pre_execute, dispatch_uid="kbsite-ingest-queue-row")
def _remember_queue_row(sender: Any, func: Any, task: dict[str, Any], **kwargs: Any) -> None:
    global _queue_row
    _queue_row = task.get("ack_id") if func is ingest_document else None


@receiver(post_execute_in_worker, dispatch_uid="kbsite-ingest-outcome")
def _errored_ingestion_is_a_failure(sender: Any, func: Any, task: dict[str, Any], **kwargs: Any) -> None:
    # A document that ended in `error` is listed among django-q2's failed tasks (with its reason), not its
    # successes. Not raised from the task: django-q2's synchronous mode (tests, in-process runs) would hand
    # the exception to whoever queued it. The recovery requeues only queued/parsing documents, so this
    # failure never brings an errored document back.
    if func is not ingest_document or not task.get("success") or not task.get("args"):
        return
    error = Document.objects.filter(pk=task["args"][0], status=DocumentStatus.ERROR).values_list("error", flat=True)
    reason = error.first()
    if reason is not None:
        task["success"], task["result"] = False, reason


def finish_paragraph_edit(edit_id: str) -> None:
    # An edit too long to embed in its request (services/paragraph_edits.py); nothing to do once it is not pending.
    paragraph_edit_finish(edit_id=edit_id)


def record_archive_build(
    collection_id: str,
    document_ids: list[str],
    refused: list[str],
    built_from: str,
    warnings: list[str],
    attempt: int = 0,
) -> None:
    archive_build_record(
        collection_id=collection_id,
        document_ids=document_ids,
        refused=refused,
        built_from=built_from,
        warnings=warnings,
        attempt=attempt,
    )


def sync_folder_source(collection_id: str) -> None:
    try:
        folder_sources_adopt_legacy()  # before the row is read: adopting may give it its folder
    except FolderSourceError as exc:
        logger.warning("folder sync of collection %s skipped: %s", collection_id, exc)
        return
    collection = Collection.objects.filter(pk=collection_id).first()
    if collection is None:
        return  # deleted since the schedule was made
    try:
        folder_sync(collection=collection)
    except FolderSourceError as exc:
        # Not configured any more, or the folder is not there: say so in the cluster's log, without a path.
        logger.warning("folder sync of collection %s skipped: %s", collection.pk, exc)


def reindex_collection(collection_id: str) -> None:
    # Resumable: documents already staged in the re-index's generation are skipped (services/reindex.py).
    collection_reindex_run(collection_id=collection_id)


def import_collection_file(collection_file_id: str) -> None:
    # One transaction writes the whole import; a finished one is left alone (services/collection_file).
    collection_import_run(collection_file_id=collection_file_id)


def export_collection_file(collection_file_id: str) -> None:
    collection_export_run(collection_file_id=collection_file_id)


def remove_collection(collection_id: str) -> None:
    # A deleted collection's rows, in batches (services/deletion.py); a second delivery does nothing.
    collection_rows_remove(collection_id=collection_id)


def remove_tenant(tenant_id: str) -> None:
    tenant_rows_remove(tenant_id=tenant_id)
