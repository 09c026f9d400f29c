"""Turning windows into cited results: fetch only the paragraphs the answer returns, stitch them, mark the matches.

Stitching (the collection format's): paragraphs in document order. Two paragraphs cut inside one block (a
`fixed` cut, a long block split by `structure`: `Chunk.continues`) are rejoined with a single space, the
overlap they share printed once; two that meet at a block boundary (a heading, a new paragraph, a page) are
joined with a paragraph break, so a heading never sticks to the sentence before it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db.models import Q

from collections_app.models import Chunk, ChunkPosition, Collection

from ._window import Window, window_split

BLOCK_BREAK = "\n\n"
# Paragraphs built before the chunker recorded `continues` (null): a shared run of at least this many characters
# between one's end and the next one's start is an overlap, so the two were cut from one block.
INFERRED_OVERLAP_CHARS = 20
# ... and so is a paragraph that stops mid-sentence followed by one that starts in lower case.
_SENTENCE_END = re.compile(r"[.!?:;…)\]\"'»”]\s*$")

Key = tuple[str, int]  # (document id, ordinal)


@dataclass(frozen=True)
class Stitched:
    text: str
    spans: dict[int, tuple[int, int]]  # each paragraph's (start, end) in `text`, by ordinal


def window_paragraphs(windows: list[Window]) -> dict[Key, Chunk]:
    """The readable paragraphs the windows hold, in one query, by (document id, ordinal)."""
    if not windows:
        return {}
    wanted = Q()
    for window in windows:
        wanted |= Q(document_id=window.document_id, ordinal__in=window.ordinals)
    # Found by their places (ChunkPosition's unique (document, generation, ordinal) index), then their rows.
    places = ChunkPosition.objects.filter(wanted).values("chunk_id")
    rows = (
        # The generation searches read (a re-index stages the next beside it, same documents and ordinals).
        Chunk.objects.filter(pk__in=places)
        .live()
        .paragraphs()
        .select_related("document")
        .only("id", "text", "page", "section", "language", "metadata", "continues", "document__id",
              "document__filename", "document__source_uri", "document__version", "collection_id")
    )  # fmt: skip
    return {(str(r.document_id), r.ordinal): r for r in rows}


def stitch(pieces: list[Chunk]) -> Stitched:
    """Paragraphs (in document order) as one text, and where each of them lies in it."""
    text = ""
    spans: dict[int, tuple[int, int]] = {}
    previous: Chunk | None = None
    for piece in pieces:
        if previous is None:
            start, text = 0, piece.text
        elif _continues(previous, piece):
            # A single space, and the overlap the cut repeated printed once: the paragraph starts inside the text.
            shared = shared_overlap(previous.text, piece.text)
            start = len(text) - shared if shared else len(text) + 1
            rest = piece.text[shared:].lstrip()
            text = f"{text} {rest}" if rest else text
        else:
            text += BLOCK_BREAK
            start, text = len(text), text + piece.text
        spans[piece.ordinal] = (start, len(text))
        previous = piece
    return Stitched(text, spans)


def shared_overlap(before: str, after: str) -> int:
    """The length of the longest run of whole words that ends `before` and starts `after` (what a cut with
    overlap repeats), 0 when none does."""
    longest = min(len(before), len(after))
    for size in range(longest, 0, -1):
        if not before.endswith(after[:size]):
            continue
        starts_at_word = size == len(before) or before[-size - 1].isspace()
        ends_at_word = size == len(after) or after[size].isspace()
        if starts_at_word and ends_at_word and after[:size].strip():
            return size
    return 0


def _continues(previous: Chunk, piece: Chunk) -> bool:
    if piece.continues is not None:
        return piece.continues
    # Built before the chunker said: a new section or page is a block boundary; within one, a shared run (an
    # overlap) or a sentence broken across the two says they were cut from one block.
    if previous.section != piece.section or previous.page != piece.page:
        return False
    if shared_overlap(previous.text, piece.text) >= INFERRED_OVERLAP_CHARS:
        return True
    return not _SENTENCE_END.search(previous.text) and piece.text[:1].islower()


def render_results(
    windows: list[Window], collections: dict[str, Collection], rows: dict[Key, Chunk] | None = None
) -> list[dict[str, Any]]:
    """One result per window: its paragraphs stitched in document order, what matched marked in its text, and
    cited by its best-scoring matched paragraph (section, page, id, language, metadata)."""
    if rows is None:
        rows = window_paragraphs(windows)
    results = []
    for window in windows:
        pieces = [rows[(window.document_id, o)] for o in window.ordinals if (window.document_id, o) in rows]
        stitched = stitch(pieces)
        cited = rows[(window.document_id, window.cited.ordinal)]
        results.append(
            {
                "text": stitched.text,
                "score": round(window.score, 4) if window.score is not None else None,
                "collection": collections[window.best.collection_id].name,
                "document": {
                    "id": str(cited.document.id),
                    "filename": cited.document.filename,
                    "source_uri": cited.document.source_uri,
                    "version": cited.document.version,  # the version whose paragraphs answer
                },
                "page": cited.page,
                "section": cited.section,
                "chunk_id": str(cited.id),
                "language": cited.language or None,  # null: undetected (mostly numbers)
                "passages": len(pieces),
                "matches": _matches(window, stitched),
                # A record's fields, an email's subject/author/date: the agent reads the row it found.
                "metadata": cited.metadata,
            }
        )
    return results


def _matches(window: Window, stitched: Stitched) -> list[dict[str, Any]]:
    """Each matched paragraph's place in the text, best score first."""
    matches = []
    for hit in sorted(window.hits, key=lambda h: -1.0 if h.semantic is None else -h.semantic):
        span = stitched.spans.get(hit.ordinal)
        if span is None:
            continue
        score = round(hit.semantic, 4) if hit.semantic is not None else None
        matches.append({"paragraph_id": hit.chunk_id, "start": span[0], "end": span[1], "score": score})
    return matches


def windows_within_ceiling(
    windows: list[Window],
    rows: dict[Key, Chunk],
    *,
    ceiling: Callable[[Window], int],
    semantic: Callable[[str, list[str]], dict[str, float]],
) -> list[Window]:
    """Each window whose stitched text is longer than its `ceiling` split at its weakest gaps (window_split).

    `semantic(collection id, paragraph ids)` scores the neighbours no hit scored (one query per split window):
    a gap's strength is what the question has to do with the paragraphs on either side of it.
    """
    kept: list[Window] = []
    for window in windows:
        present = {o: rows[(window.document_id, o)] for o in window.ordinals if (window.document_id, o) in rows}
        limit = ceiling(window)

        def fits(ordinals: list[int], present: dict[int, Chunk] = present, limit: int = limit) -> bool:
            return len(stitch([present[o] for o in ordinals if o in present]).text) <= limit

        if fits(window.ordinals):
            kept.append(window)
            continue
        scores: dict[int, float | None] = {h.ordinal: h.semantic for h in window.hits}
        unscored = {str(row.id): o for o, row in present.items() if scores.get(o) is None}
        for paragraph_id, score in semantic(window.best.collection_id, list(unscored)).items():
            scores[unscored[paragraph_id]] = score
        kept.extend(window_split(window, fits=fits, scores=scores))
    return kept
