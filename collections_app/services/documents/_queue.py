"""Queueing a document's ingestion: a django-q2 task, written once the transaction commits."""

from __future__ import annotations

from django.conf import settings
from django.utils import timezone

from collections_app.models import Document, DocumentStatus
from infra.queueing import task_name_shown, task_queue_on_commit

INGEST_FUNC = "collections_app.tasks.ingest_document"


def document_queue_ingest(*, document: Document, reingest: bool = False) -> None:
    """Queue the document's ingestion once the transaction commits.

    A new upload is created `queued` (services/documents/_upload.py); `reingest=True` (an editor's re-ingest)
    shows it `queued` at once too; the task sets `parsing` when it starts reading. A re-ingested document's
    paragraphs stay searchable meanwhile. The task is named after the file, with the document's id for the
    recovery (services/recovery.py finds a document's tasks by "ingest document <id>").
    """
    document_id = str(document.pk)
    if reingest:
        document.status, document.progress, document.error = DocumentStatus.QUEUED, 0, ""
        Document.objects.filter(pk=document.pk).update(
            status=DocumentStatus.QUEUED, progress=0, error="", updated_at=timezone.now()
        )
    task_queue_on_commit(INGEST_FUNC, document_id, **ingest_task_options(document))


def ingest_task_options(document: Document) -> dict[str, str]:
    """The task's name and group, and its cluster when the document is large and a cluster of its own is set up."""
    document_id = str(document.pk)
    options = {"task_name": task_name_shown(document.filename, f"ingest document {document_id}"), "group": "ingestion"}
    large_queue = settings.KB_LARGE_DOCUMENT_QUEUE
    if large_queue and document.size > settings.KB_LARGE_DOCUMENT_BYTES:
        # A large document is read by a cluster of its own (django-q2's named clusters: Q_CLUSTER_NAME), so
        # hours of embedding never hold up the small documents behind it. Off unless that cluster is set up.
        options["cluster"] = large_queue
    return options
