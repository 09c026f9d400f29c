"""Turning windows into cited results: fetch only the paragraphs the answer returns."""

from __future__ import annotations

from typing import Any

from django.db.models import Q

from collections_app.models import Chunk, Collection

from ._window import Window


def render_results(windows: list[Window], collections: dict[str, Collection]) -> list[dict[str, Any]]:
    """One result per window: its paragraphs stitched in document order, cited by its best paragraph."""
    if not windows:
        return []
    wanted = Q()
    for window in windows:
        wanted |= Q(document_id=window.document_id, ordinal__in=window.ordinals)
    rows = (
        # The generation searches read (a re-index stages the next beside it, same documents and ordinals).
        Chunk.objects.filter(wanted)
        .live()
        .paragraphs()
        .select_related("document")
        .only("id", "text", "ordinal", "page", "section", "language", "metadata", "document__id",
              "document__filename", "document__source_uri", "document__version", "collection_id")
    )  # fmt: skip
    by_key = {(str(r.document_id), r.ordinal): r for r in rows}
    results = []
    for window in windows:
        pieces = [by_key[(window.document_id, o)] for o in window.ordinals if (window.document_id, o) in by_key]
        best = by_key[(window.document_id, window.best.ordinal)]
        results.append(
            {
                "text": " ".join(p.text for p in pieces),
                "score": round(window.score, 4) if window.score is not None else None,
                "collection": collections[window.best.collection_id].name,
                "document": {
                    "id": str(best.document.id),
                    "filename": best.document.filename,
                    "source_uri": best.document.source_uri,
                    "version": best.document.version,  # the version whose paragraphs answer
                },
                "page": best.page,
                "section": best.section,
                "chunk_id": str(best.id),
                "language": best.language or None,  # null: undetected (mostly numbers)
                "passages": len(pieces),
                # A record's fields, an email's subject/author/date: the agent reads the row it found.
                "metadata": best.metadata,
            }
        )
    return results
