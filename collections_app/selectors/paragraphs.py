"""A document's paragraphs as its editors see them (hidden ones included) and its paragraph edits (issue 20).

Never a reader's door: searches, windows, parents, the corpus map and exports read through
ChunkQuerySet.live().paragraphs(), which leaves hidden paragraphs out.
"""

from __future__ import annotations

from django.db.models import QuerySet

from collections_app.models import Chunk, Document, EditStatus, ParagraphEdit


def document_paragraphs_for_editors(document: Document) -> QuerySet[Chunk]:
    """The live generation's paragraphs of the document in order, hidden ones included; vectors left unread.

    The document named on its places too: a page of a long document is read through their (document, generation,
    ordinal) index, that page's rows only, not every row of the document sorted."""
    return (
        Chunk.objects.filter(document=document, position__document=document)
        .editable()
        .defer("embedding", "search_vector")
        .order_by("position__ordinal")
    )


def document_paragraph_edits(document: Document) -> QuerySet[ParagraphEdit]:
    """The document's edit history, newest first."""
    return ParagraphEdit.objects.filter(document=document).order_by("-created_at", "-id")


def document_stale_edits(document: Document) -> QuerySet[ParagraphEdit]:
    """Edits that no longer apply (a new version of the file changed their paragraph), oldest first."""
    return ParagraphEdit.objects.filter(document=document, status=EditStatus.STALE).order_by("created_at", "id")
