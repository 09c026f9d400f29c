"""Deleting a document: its row, paragraphs (their keyword postings and statistics follow, by the chunk table's
triggers), versions and attachments in one transaction; its stored originals, every version's, after the commit,
so a rollback never loses a file. Builds and search audits stay (they keep no reference that cascades).

An ingestion of the document under way notices within a second or two and stops (_watch.py); one publishing
at that moment holds the row, and the deletion waits for its commit.
"""

from __future__ import annotations

import logging

from django.db import transaction

from collections_app.models import Document
from collections_app.services.documents._versions import stored_files_of

logger = logging.getLogger(__name__)


def document_delete(*, document: Document) -> None:
    """Remove a document, its paragraphs and its attachments; stored originals go once the deletion commits."""
    storage = Document._meta.get_field("file").storage

    with transaction.atomic():
        # Locked first, as a publish does (_publish.py): a publish under way finishes before this deletes its
        # rows; a publish coming after finds the document gone and publishes nothing. A new version's upload
        # locks it too: the files read next are all there are.
        Document.objects.select_for_update().filter(pk=document.pk).values_list("pk", flat=True).first()
        files = stored_files_of([document, *_attachments_of(document)])

        def remove_files() -> None:
            for name in files:
                try:
                    storage.delete(name)
                except OSError:
                    logger.warning("a stored file could not be removed; storage_cleanup will find it")

        document.delete()  # paragraphs and attachments cascade; builds keep their record (document set to null)
        transaction.on_commit(remove_files)


def _attachments_of(document: Document) -> list[Document]:
    found: list[Document] = []
    level = list(Document.objects.filter(parent=document))
    while level:
        found += level
        level = list(Document.objects.filter(parent__in=level))
    return found
