"""Parent sections (hierarchical collections): a matched paragraph handed back as the section it belongs to.

Per collection, `parent_return` decides, at search time (nothing stored changes):
- `child`: the paragraph only (with its `around` neighbours, as in any collection);
- `parent`: always its section;
- `auto`: its section once at least `merge_threshold` of the section's readable paragraphs matched.
A search's `expand: true` asks for the section whatever the setting.

A section is put together from its children, never read from the parent row: only paragraphs the reader
may read and the search's filters pass, in document order, and only the unbroken run of them around the
match — a restricted paragraph breaks the section rather than being closed over (windows never leak). The
section carries its best child's score, and the citation (chunk_id) is that child's.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from collections_app.models import ChunkStrategy, Collection, ParentReturn
from infra.db_routing import read_connection

from ._filters import Filters
from ._stages import Hit
from ._visibility import FROM_VISIBLE, ORDINAL_SQL, VISIBLE_SQL, Visibility
from ._window import Window


@dataclass
class Sections:
    windows: list[Window]  # one per section handed back, in the order of its best hit
    rest: list[Hit]  # hits handed back as paragraphs
    merged: int  # hits folded into a section


def section_mode(collection: Collection, expand: bool) -> str:
    if collection.chunk_strategy != ChunkStrategy.HIERARCHICAL:
        return ParentReturn.CHILD
    return ParentReturn.PARENT if expand else collection.parent_return


def sections(
    *, hits: list[Hit], collections: dict[str, Collection], visible: Visibility, filters: Filters, expand: bool
) -> Sections:
    modes = {cid: section_mode(c, expand) for cid, c in collections.items()}
    candidates = [h for h in hits if modes[h.collection_id] != ParentReturn.CHILD]
    if not candidates:
        return Sections([], hits, 0)
    parent_of, children = _readable_children(candidates, visible, filters)
    by_parent: dict[str, list[Hit]] = defaultdict(list)
    for hit in candidates:
        if hit.chunk_id in parent_of:
            by_parent[parent_of[hit.chunk_id]].append(hit)
    taken: dict[str, Window] = {}
    rest: list[Hit] = []
    merged = 0
    for hit in hits:
        parent = parent_of.get(hit.chunk_id)
        if parent is None or modes[hit.collection_id] == ParentReturn.CHILD:
            rest.append(hit)
            continue
        readable = children[parent]
        threshold = collections[hit.collection_id].merge_threshold
        if modes[hit.collection_id] == ParentReturn.AUTO and len(by_parent[parent]) / len(readable) < threshold:
            rest.append(hit)
            continue
        merged += 1
        window = taken.get(parent)
        if window is None:
            taken[parent] = Window(hit.document_id, _run_around(readable, hit.ordinal), hit, hit.semantic)
            continue
        # Another child of a section already handed back: its run joins in; the best score stays.
        window.ordinals = sorted(set(window.ordinals) | set(_run_around(readable, hit.ordinal)))
        window.hits.append(hit)
        if hit.semantic is not None and (window.score is None or hit.semantic > window.score):
            window.score, window.best = hit.semantic, hit
    return Sections(list(taken.values()), rest, merged)


def _run_around(ordinals: list[int], ordinal: int) -> list[int]:
    """The unbroken run of readable ordinals that holds `ordinal` (a gap is a paragraph the reader may not read)."""
    present = set(ordinals)
    low = high = ordinal
    while low - 1 in present:
        low -= 1
    while high + 1 in present:
        high += 1
    return list(range(low, high + 1))


def _readable_children(
    hits: list[Hit], visible: Visibility, filters: Filters
) -> tuple[dict[str, str], dict[str, list[int]]]:
    """Each hit's parent, and each of those parents' children that this reader may read, by ordinal."""
    sql = f"""
        SELECT h.id, c.parent_id, {ORDINAL_SQL}
        FROM collections_app_chunk h
        JOIN {FROM_VISIBLE} ON c.parent_id = h.parent_id AND c.document_id = h.document_id
        WHERE h.id = ANY(%(hits)s::uuid[]) AND h.parent_id IS NOT NULL AND {VISIBLE_SQL} AND {filters.sql}
    """
    parent_of: dict[str, str] = {}
    children: dict[str, set[int]] = defaultdict(set)
    with read_connection().cursor() as cursor:
        cursor.execute(sql, {"hits": [h.chunk_id for h in hits], **visible.params, **filters.params})
        for hit_id, parent_id, ordinal in cursor.fetchall():
            parent_of[str(hit_id)] = str(parent_id)
            children[str(parent_id)].add(ordinal)
    return parent_of, {parent: sorted(ordinals) for parent, ordinals in children.items()}
