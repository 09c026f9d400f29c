"""Pipeline stages. Each takes plain data and returns plain data plus a Stage record."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from django.db.models import Q, Sum

from collections_app.models import Chunk, Collection, KeywordStats
from infra.db_routing import read_connection
from infra.errors import Conflict

from ._filters import NO_FILTERS, Filters
from ._trace import Stage
from ._visibility import FROM_VISIBLE, ORDINAL_SQL, VISIBLE_SQL, Visibility

__all__ = ["Stage"]  # re-exported: stages used to live here


@dataclass
class Hit:
    chunk_id: str
    document_id: str
    collection_id: str
    ordinal: int
    semantic: float | None = None
    keyword: float | None = None  # BM25 score, when the keyword stage found it
    rerank: float | None = None  # the reranker's relevance, when one ran
    fused: float = 0.0
    ranks: dict[str, int] = field(default_factory=dict)
    config: str = ""  # the text search configuration its paragraph is indexed under (keyword hits)
    language: str = ""  # its paragraph's language label ("" undetected): which floor and weight apply


def vector_retrieve(
    *,
    visible: Visibility,
    vector: list[float],
    limit: int,
    filters: Filters = NO_FILTERS,
    exact: bool = False,
) -> list[Hit]:
    """pgvector cosine over the HNSW index of this width; iterative scan keeps filtered recall.

    `exact` ranks every row that passes the filters instead: when a filter leaves few rows, the graph walk
    would skip nearly all it meets and may give up (hnsw.max_scan_tuples) before it has found them.
    Otherwise the walk is the only plan: PostgreSQL's planner prices sorting a tenant's rows by distance far
    below its cost (each vector is read out of TOAST), and chose that sort for an 11,700-paragraph collection
    alone in its database: 100-150 ms a search against ~5 ms for the walk.
    """
    dims = len(vector)
    distance = f"(c.embedding::vector({dims})) <=> %(vector)s::vector({dims})"
    order = f"({distance}) + 0" if exact else distance  # "+ 0": an expression the HNSW index cannot serve
    sql = f"""
        SELECT c.id, c.document_id, c.collection_id, {ORDINAL_SQL}, 1 - ({distance}) AS similarity, c.language
        FROM {FROM_VISIBLE}
        WHERE {VISIBLE_SQL} AND {filters.sql} AND c.embedding_dims = {dims}
        ORDER BY {order}
        LIMIT %(limit)s
    """
    params = {
        "vector": str(vector),
        **visible.params,
        "limit": limit,
        **filters.params,
    }
    with read_connection().cursor() as cursor:
        # Tenant and collection filters run after the index scan; relaxed
        # iterative scans keep going until enough rows pass them.
        # The walk's candidate list (ef_search) as long as the list asked for: pgvector's range 1-1000, default 40.
        # enable_sort off: the walk returns rows in distance order, so it wins every plan that sorts instead.
        cursor.execute(
            "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), set_config('hnsw.ef_search', %s, true),"
            " set_config('enable_sort', %s, true)",
            [str(min(1000, max(40, limit))), "on" if exact else "off"],
        )
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    return [Hit(str(r[0]), str(r[1]), str(r[2]), r[3], semantic=float(r[4]), language=r[5] or "") for r in rows]


def indexed_paragraphs(collections: Sequence[Collection]) -> int:
    """Paragraphs in the collections' keyword index (KeywordStats, one row each): about as many as have vectors."""
    found = KeywordStats.objects.filter(collection__in=collections).aggregate(n=Sum("paragraphs"))["n"]
    return int(found or 0)


class EmbeddingWidthMismatch(Conflict):
    """Paragraphs were embedded with a model of another width than the collection's model now."""


def check_embedding_width(*, collections: list[Collection], dims: int) -> None:
    """Refuse to search vectors of another width than the query's: they would silently never match.

    "Narrower or wider" rather than "not equal": two range scans of the (collection, embedding_dims)
    index, which find nothing at once when every row fits, instead of reading every row's width.
    """

    stale = (
        # Only what searches read: a re-index building the next generation with another model is not stale.
        # (Parent sections are live too, but carry no width.)
        Chunk.objects.filter(collection__in=collections)
        .live()
        .filter(Q(embedding_dims__lt=dims) | Q(embedding_dims__gt=dims))
        .order_by()
        .values_list("collection__name", "embedding_dims")
        .distinct()[:5]
    )
    if stale:
        names = ", ".join(f"{name} ({width} dimensions)" for name, width in stale)
        raise EmbeddingWidthMismatch(
            f"the question is embedded with {dims} dimensions but {names} were built with another model; "
            "rebuild those collections with their current embedding model"
        )


def semantic_scores(*, chunk_ids: list[str], vector: list[float], finite_only: bool = True) -> dict[str, float]:
    """Cosine similarity for hits that only the keyword side found, so the floor can judge them too.

    A row whose vector has no length scores NaN against every question: left out (unscored) unless
    `finite_only` is False, for fusion, which drops such a paragraph and counts it in the trace."""
    if not chunk_ids:
        return {}
    dims = len(vector)
    with read_connection().cursor() as cursor:
        cursor.execute(
            f"""
            SELECT id, 1 - ((embedding::vector({dims})) <=> %s::vector({dims}))
            FROM collections_app_chunk WHERE id = ANY(%s::uuid[]) AND embedding_dims = {dims}
            """,
            [str(vector), chunk_ids],
        )
        scores = {str(r[0]): float(r[1]) for r in cursor.fetchall()}
    return scores if not finite_only else {key: score for key, score in scores.items() if math.isfinite(score)}


def chunk_texts(chunk_ids: list[str]) -> dict[str, str]:
    """The text of each candidate, for the reranker."""

    return {str(pk): text for pk, text in Chunk.objects.filter(pk__in=chunk_ids).values_list("pk", "text")}


def passes_floor(hit: Hit, floor: float) -> bool:
    """A floor of 0 turns the floor off; otherwise the semantic score must reach it.

    `floor` is the one that applies to this hit's language situation (see _pipeline.floor_for)."""
    return floor <= 0 or (hit.semantic is not None and hit.semantic >= floor)
