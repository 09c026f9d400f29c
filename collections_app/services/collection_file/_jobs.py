"""What an export and an import share as background jobs: queued after the commit that creates their record, and
taken by a task that leaves a finished (or failed) record alone, so a second delivery of the task does nothing."""

from __future__ import annotations

import uuid

from django.core.files import File
from django.core.files.storage import default_storage
from django.db import transaction

from collections_app.models import CollectionFile, CollectionFileKind, CollectionFileStatus

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


def collection_file_pending(collection_file_id: str, kind: CollectionFileKind) -> CollectionFile | None:
    """The record a task is to work on, or None when it is gone or already finished."""
    record = CollectionFile.objects.select_related("collection").filter(pk=collection_file_id, kind=kind).first()
    if record is None or record.status in (CollectionFileStatus.DONE, CollectionFileStatus.ERROR):
        return None
    return record


def collection_file_store(file: File, *, tenant_id: object) -> str:
    """Keep a collection file under a storage name of its own (a random one: never the uploaded file's name)."""
    return default_storage.save(f"collection-files/{tenant_id}/{uuid.uuid4().hex}.db", file)
