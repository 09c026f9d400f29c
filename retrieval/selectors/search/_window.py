"""Windows: neighbouring paragraphs around each hit, stitched in document order.

Neighbours come only from rows the reader may read, never from another
document, and a window stops at a paragraph the reader may not read rather
than closing over it. A window longer than its collection's ceiling splits
at its weakest gap (`window_split`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from infra.db_routing import read_connection

from ._filters import NO_FILTERS, Filters
from ._stages import Hit
from ._visibility import FROM_VISIBLE, VISIBLE_SQL, Visibility


@dataclass
class Window:
    document_id: str
    ordinals: list[int]
    best: Hit  # the hit that ranks it (its first in the search's order)
    score: float | None
    hits: list[Hit] = field(default_factory=list)  # every hit inside it, in the search's order

    def __post_init__(self) -> None:
        if not self.hits:
            self.hits = [self.best]

    @property
    def cited(self) -> Hit:
        """Its best-scoring matched paragraph: the one whose section, page and id the result cites."""
        return max(self.hits, key=lambda h: -1.0 if h.semantic is None else h.semantic)


def readable_neighbours(
    *,
    visible: Visibility,
    hits: list[Hit],
    around: int,
    filters: Filters = NO_FILTERS,
) -> dict[str, set[int]]:
    """Ordinals the reader may read and the search's filters pass, per document, within `around` of any hit."""
    if not hits or around <= 0:
        return {h.document_id: {h.ordinal} for h in hits}
    wanted: dict[str, set[int]] = defaultdict(set)
    for hit in hits:
        wanted[hit.document_id].update(range(max(0, hit.ordinal - around), hit.ordinal + around + 1))
    pairs = [(doc, o) for doc, ords in wanted.items() for o in ords]
    # Each wanted place looked up in the places' unique (document, generation, ordinal) index, the generation the
    # searches read taken from the document's collection first: a window reads its neighbours' rows only.
    sql = f"""
        SELECT p.document_id, p.ordinal
        FROM unnest(%(docs)s::uuid[], %(ords)s::int[]) AS w(doc, ord)
        JOIN collections_app_document wd ON wd.id = w.doc
        JOIN collections_app_collection wc ON wc.id = wd.collection_id
        JOIN collections_app_chunkposition p
             ON p.document_id = w.doc AND p.generation = wc.active_generation AND p.ordinal = w.ord
        JOIN {FROM_VISIBLE} ON c.id = p.chunk_id
        WHERE {VISIBLE_SQL} AND {filters.sql}
    """
    params = {
        "docs": [p[0] for p in pairs],
        "ords": [p[1] for p in pairs],
        **visible.params,
        **filters.params,
    }
    readable: dict[str, set[int]] = defaultdict(set)
    with read_connection().cursor() as cursor:
        cursor.execute(sql, params)
        for document_id, ordinal in cursor.fetchall():
            readable[str(document_id)].add(ordinal)
    return readable


def build_windows(hits: list[Hit], readable: dict[str, set[int]], around: int) -> list[Window]:
    """One window per hit, grown outwards while neighbours are readable; overlapping windows merge."""
    windows: list[Window] = []
    for hit in hits:
        allowed = readable.get(hit.document_id, set()) | {hit.ordinal}
        low = high = hit.ordinal
        while low - 1 in allowed and hit.ordinal - (low - 1) <= around:
            low -= 1
        while high + 1 in allowed and (high + 1) - hit.ordinal <= around:
            high += 1
        span = list(range(low, high + 1))
        merged = False
        # Windows that touch are stitched; with around=0 nothing is stitched, so
        # two neighbouring hits (two rows of a sheet) stay two results.
        reach = 1 if around > 0 else 0
        for window in windows:
            if (
                window.document_id == hit.document_id
                and span[0] <= window.ordinals[-1] + reach
                and window.ordinals[0] <= span[-1] + reach
            ):
                window.ordinals = sorted(set(window.ordinals) | set(span))
                window.hits.append(hit)
                if hit.semantic is not None and (window.score is None or hit.semantic > window.score):
                    window.score = hit.semantic
                merged = True
                break
        if not merged:
            windows.append(Window(hit.document_id, span, hit, hit.semantic))
    return windows


def window_split(
    window: Window, *, fits: Callable[[list[int]], bool], scores: Mapping[int, float | None]
) -> list[Window]:
    """A window whose stitched text does not `fit` the ceiling, split at its weakest gaps until every part does.

    The weakest gap is the boundary between neighbours whose two paragraphs score lowest together (the mean of
    their semantic scores, `scores` by ordinal: what the question has least to do with); on a tie, the one
    nearer the middle. Each part becomes a window of its own with its own hits, best hit and best score; a part
    holding no hit (context only) is dropped. A single paragraph is never cut, whatever its length.
    """
    parts: list[Window] = []
    for ordinals in _split(window.ordinals, fits, scores):
        hits = [h for h in window.hits if h.ordinal in ordinals]
        if not hits:
            continue
        scored = [h.semantic for h in hits if h.semantic is not None]
        parts.append(Window(window.document_id, ordinals, hits[0], max(scored) if scored else None, hits))
    return parts


def _split(
    ordinals: list[int], fits: Callable[[list[int]], bool], scores: Mapping[int, float | None]
) -> list[list[int]]:
    if len(ordinals) < 2 or fits(ordinals):
        return [ordinals]
    middle = (len(ordinals) - 1) / 2

    def strength(gap: int) -> tuple[float, float]:  # the boundary before ordinals[gap]
        pair = [scores.get(ordinals[gap - 1]), scores.get(ordinals[gap])]
        return (sum(s or 0.0 for s in pair) / 2, abs(gap - 0.5 - middle))

    gap = min(range(1, len(ordinals)), key=strength)
    return _split(ordinals[:gap], fits, scores) + _split(ordinals[gap:], fits, scores)
