"""django-q2 tasks: take primitive ids, call one service, safe to run twice."""

import logging

from collections_app.services.documents import document_ingest

logger = logging.getLogger(__name__)


def ingest_document(document_id: str) -> None:
    document_ingest(document_id=document_id)


def record_archive_build(
    collection_id: str,
    document_ids: list[str],
    refused: list[str],
    built_from: str,
    warnings: list[str],
    attempt: int = 0,
) -> None:
    from collections_app.services.archives import archive_build_record

    archive_build_record(
        collection_id=collection_id,
        document_ids=document_ids,
        refused=refused,
        built_from=built_from,
        warnings=warnings,
        attempt=attempt,
    )


def sync_folder_source(collection_id: str) -> None:
    from collections_app.models import Collection
    from collections_app.services.folder_sources import FolderSourceError, folder_sync

    collection = Collection.objects.filter(pk=collection_id).first()
    if collection is None:
        return  # deleted since the schedule was made
    try:
        folder_sync(collection=collection)
    except FolderSourceError as exc:
        # Not configured any more, or the folder is not there: say so in the cluster's log, without a path.
        logger.warning("folder sync of collection %s skipped: %s", collection.pk, exc)
