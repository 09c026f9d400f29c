"""Pipeline stages. Each takes plain data and returns plain data plus a Stage record."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import connection

from collections_app.ingestion import text_search_config

from ._filters import NO_FILTERS, Filters
from ._trace import Stage
from ._visibility import FROM_VISIBLE, VISIBLE_SQL, Visibility

__all__ = ["Stage"]  # re-exported: stages used to live here


@dataclass
class Hit:
    chunk_id: str
    document_id: str
    collection_id: str
    ordinal: int
    semantic: float | None = None
    fused: float = 0.0
    ranks: dict[str, int] = field(default_factory=dict)


def keyword_retrieve(
    *,
    visible: Visibility,
    query: str,
    language: str,
    limit: int,
    filters: Filters = NO_FILTERS,
) -> list[Hit]:
    """PostgreSQL full text: the question in its own language's stemmer, OR'd with 'simple'."""
    config = text_search_config(language)
    sql = f"""
        WITH q AS (
            SELECT websearch_to_tsquery(%(config)s::regconfig, %(query)s)
                || websearch_to_tsquery('simple', %(query)s) AS tsq
        )
        SELECT c.id, c.document_id, c.collection_id, c.ordinal
        FROM {FROM_VISIBLE}, q
        WHERE {VISIBLE_SQL} AND {filters.sql} AND c.search_vector @@ q.tsq
        ORDER BY ts_rank_cd(c.search_vector, q.tsq) DESC, c.id
        LIMIT %(limit)s
    """
    params = {
        "config": config,
        "query": query,
        **visible.params,
        "limit": limit,
        **filters.params,
    }
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    return [Hit(str(r[0]), str(r[1]), str(r[2]), r[3]) for r in rows]


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
    """
    dims = len(vector)
    distance = f"(c.embedding::vector({dims})) <=> %(vector)s::vector({dims})"
    order = f"({distance}) + 0" if exact else distance  # "+ 0": an expression the HNSW index cannot serve
    sql = f"""
        SELECT c.id, c.document_id, c.collection_id, c.ordinal, 1 - ({distance}) AS similarity
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
    with connection.cursor() as cursor:
        # Tenant and collection filters run after the index scan; relaxed
        # iterative scans keep going until enough rows pass them.
        cursor.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    return [Hit(str(r[0]), str(r[1]), str(r[2]), r[3], semantic=float(r[4])) for r in rows]


class EmbeddingWidthMismatch(ValueError):
    """Paragraphs were embedded with a model of another width than the collection's model now."""


def check_embedding_width(*, collections: list, dims: int) -> None:  # type: ignore[type-arg]
    """Refuse to search vectors of another width than the query's: they would silently never match."""
    from collections_app.models import Chunk

    stale = (
        Chunk.objects.filter(collection__in=collections)
        .exclude(embedding_dims=dims)
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


def semantic_scores(*, chunk_ids: list[str], vector: list[float]) -> dict[str, float]:
    """Cosine similarity for hits that only the keyword side found, so the floor can judge them too."""
    if not chunk_ids:
        return {}
    dims = len(vector)
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT id, 1 - ((embedding::vector({dims})) <=> %s::vector({dims}))
            FROM collections_app_chunk WHERE id = ANY(%s::uuid[]) AND embedding_dims = {dims}
            """,
            [str(vector), chunk_ids],
        )
        return {str(r[0]): float(r[1]) for r in cursor.fetchall()}


def reciprocal_rank_fusion(
    ranked: dict[str, list[Hit]], k: int = 60, weights: dict[str, float] | None = None
) -> list[Hit]:
    """RRF: score = Σ weight / (k + rank). Rank-based, so cosine and ts_rank need no common scale."""
    fused: dict[str, Hit] = {}
    for source, hits in ranked.items():
        weight = (weights or {}).get(source, 1.0)
        for rank, hit in enumerate(hits, start=1):
            current = fused.setdefault(hit.chunk_id, hit)
            if hit.semantic is not None:
                current.semantic = hit.semantic
            current.ranks[source] = rank
            current.fused += weight / (k + rank)
    return sorted(fused.values(), key=lambda h: (-h.fused, h.chunk_id))


def passes_floor(hit: Hit, floor: float) -> bool:
    """A floor of 0 turns the floor off; otherwise the semantic score must reach it."""
    return floor <= 0 or (hit.semantic is not None and hit.semantic >= floor)
