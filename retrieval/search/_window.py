"""Windows: neighbouring paragraphs around each hit, stitched in document order.

Neighbours come only from rows the reader may read, never from another
document, and a window stops at a paragraph the reader may not read rather
than closing over it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from django.db import connection

from ._filters import NO_FILTERS, Filters
from ._stages import Hit
from ._visibility import FROM_VISIBLE, VISIBLE_SQL, Visibility


@dataclass
class Window:
    document_id: str
    ordinals: list[int]
    best: Hit
    score: float | None


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
    sql = f"""
        SELECT c.document_id, c.ordinal
        FROM {FROM_VISIBLE}
        JOIN unnest(%(docs)s::uuid[], %(ords)s::int[]) AS w(doc, ord)
             ON w.doc = c.document_id AND w.ord = c.ordinal
        WHERE {VISIBLE_SQL} AND {filters.sql}
    """
    params = {
        "docs": [p[0] for p in pairs],
        "ords": [p[1] for p in pairs],
        **visible.params,
        **filters.params,
    }
    readable: dict[str, set[int]] = defaultdict(set)
    with connection.cursor() as cursor:
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
                if hit.semantic is not None and (window.score is None or hit.semantic > window.score):
                    window.score = hit.semantic
                merged = True
                break
        if not merged:
            windows.append(Window(hit.document_id, span, hit, hit.semantic))
    return windows
