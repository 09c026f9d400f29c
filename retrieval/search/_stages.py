"""Pipeline stages. Each takes plain data and returns plain data plus a Stage record."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import connection
from django.db.models import F, Q

from collections_app.exceptions import Conflict
from collections_app.ingestion import text_search_config
from collections_app.models import Chunk, Collection

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
    keyword: float | None = None  # BM25 score, when the keyword stage found it
    rerank: float | None = None  # the reranker's relevance, when one ran
    fused: float = 0.0
    ranks: dict[str, int] = field(default_factory=dict)


# BM25 parameters: the values Anserini and the BEIR baselines use for short passages.
BM25_K1 = 0.9
BM25_B = 0.4
# A word in more than half of the paragraphs, and in more than this many, scores but does not make a
# paragraph a candidate by itself: scoring every paragraph holding "the" would scan a whole large collection
# for a word that barely moves the ranking. Below this size the ranking is exact BM25.
COMMON_WORD_PARAGRAPHS = 5000

# One question word as tsquery text: quoted, with backslashes and quotes escaped, so a lexeme such as
# o'clock is matched as it was indexed (a cast to tsquery does not stem or split it again).
_LEXEME_AS_QUERY = r"""'''' || replace(replace(lexeme, E'\\', E'\\\\'), '''', '''''') || ''''"""


def keyword_retrieve(
    *,
    visible: Visibility,
    query: str,
    language: str,
    limit: int,
    filters: Filters = NO_FILTERS,
) -> list[Hit]:
    """BM25 over PostgreSQL full text: any question word matches, rarer words weigh more, long paragraphs less.

    Question words are taken under the question's language stemmer and under 'simple', as paragraphs are
    indexed. Document frequencies and lengths come from the collections' KeywordStats/KeywordTerm, which
    database triggers keep current with every build. In a large collection, a word found in more than half
    of the paragraphs (a stop word 'simple' keeps) still scores, but does not make a candidate on its own.
    """
    sql = f"""
        WITH terms AS (
            SELECT DISTINCT u.lexeme
            FROM unnest(to_tsvector(%(config)s::regconfig, %(query)s) || to_tsvector('simple', %(query)s)) u
        ), stats AS (
            SELECT coalesce(sum(paragraphs), 0) AS n,
                   coalesce(sum(total_length)::float8 / nullif(sum(paragraphs), 0), 1) AS avgdl
            FROM collections_app_keywordstats WHERE collection_id = ANY(%(collections)s::uuid[])
        ), idf AS (
            SELECT t.lexeme, t.df, ln(1 + (s.n - t.df + 0.5) / (t.df + 0.5)) AS idf
            FROM (
                SELECT k.lexeme, sum(k.paragraphs)::float8 AS df
                FROM collections_app_keywordterm k JOIN terms ON terms.lexeme = k.lexeme
                WHERE k.collection_id = ANY(%(collections)s::uuid[]) AND k.paragraphs > 0
                GROUP BY k.lexeme
            ) t, stats s
        ), matching AS (
            SELECT coalesce(
                (SELECT string_agg({_LEXEME_AS_QUERY}, ' | ') FROM idf, stats
                 WHERE idf.df <= greatest(stats.n / 2, %(common)s)),
                (SELECT string_agg({_LEXEME_AS_QUERY}, ' | ') FROM idf)
            )::tsquery AS tsq
        ), candidates AS (
            SELECT c.id, c.document_id, c.collection_id, c.ordinal, c.search_vector,
                   kb_tsvector_length(c.search_vector) AS dl
            FROM {FROM_VISIBLE}, matching
            WHERE {VISIBLE_SQL} AND {filters.sql} AND c.search_vector @@ matching.tsq
        )
        SELECT c.id, c.document_id, c.collection_id, c.ordinal,
               sum(idf.idf * tf.n * (%(k1)s + 1)
                   / (tf.n + %(k1)s * (1 - %(b)s + %(b)s * c.dl / stats.avgdl))) AS score
        FROM candidates c
        CROSS JOIN LATERAL (
            SELECT u.lexeme, coalesce(array_length(u.positions, 1), 1) AS n FROM unnest(c.search_vector) u
        ) tf
        JOIN idf ON idf.lexeme = tf.lexeme
        CROSS JOIN stats
        GROUP BY c.id, c.document_id, c.collection_id, c.ordinal
        ORDER BY score DESC, c.id
        LIMIT %(limit)s
    """
    params = {
        "config": text_search_config(language),
        "query": query,
        "k1": BM25_K1,
        "b": BM25_B,
        "common": COMMON_WORD_PARAGRAPHS,
        **visible.params,
        "limit": limit,
        **filters.params,
    }
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    return [Hit(str(r[0]), str(r[1]), str(r[2]), r[3], keyword=float(r[4])) for r in rows]


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


class EmbeddingWidthMismatch(Conflict):
    """Paragraphs were embedded with a model of another width than the collection's model now."""


def check_embedding_width(*, collections: list[Collection], dims: int) -> None:
    """Refuse to search vectors of another width than the query's: they would silently never match.

    "Narrower or wider" rather than "not equal": two range scans of the (collection, embedding_dims)
    index, which find nothing at once when every row fits, instead of reading every row's width.
    """

    stale = (
        # Only what searches read: a re-index building the next generation with another model is not stale.
        Chunk.objects.filter(collection__in=collections, generation=F("collection__active_generation"))
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


def chunk_texts(chunk_ids: list[str]) -> dict[str, str]:
    """The text of each candidate, for the reranker."""

    return {str(pk): text for pk, text in Chunk.objects.filter(pk__in=chunk_ids).values_list("pk", "text")}


def passes_floor(hit: Hit, floor: float) -> bool:
    """A floor of 0 turns the floor off; otherwise the semantic score must reach it."""
    return floor <= 0 or (hit.semantic is not None and hit.semantic >= floor)
