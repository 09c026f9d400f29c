"""Deleting a document: its row, paragraphs and attachments in one transaction, its stored originals after.

An ingestion of the document under way notices within a second or two and stops (_watch.py).
"""

from __future__ import annotations

from django.db import transaction

from collections_app.models import Document


def document_delete(*, document: Document) -> None:
    """Remove a document, its paragraphs and its attachments; stored originals go once the deletion commits."""
    documents = [document, *_attachments_of(document)]
    storage = Document._meta.get_field("file").storage
    files = [d.file.name for d in documents if d.file and d.file.name]

    def remove_files() -> None:
        for name in files:
            storage.delete(name)

    with transaction.atomic():
        # Locked first, as a publish does (_publish.py): a publish under way finishes before this deletes its
        # rows; a publish coming after finds the document gone and publishes nothing.
        Document.objects.select_for_update().filter(pk=document.pk).values_list("pk", flat=True).first()
        document.delete()  # paragraphs and attachments cascade; builds keep their record (document set to null)
        transaction.on_commit(remove_files)


def _attachments_of(document: Document) -> list[Document]:
    found: list[Document] = []
    level = list(Document.objects.filter(parent=document))
    while level:
        found += level
        level = list(Document.objects.filter(parent__in=level))
    return found
