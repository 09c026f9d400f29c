"""Pipeline stages. Each takes plain data and returns plain data plus a Stage record."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from django.db.models import Q, Sum

from collections_app.exceptions import Conflict
from collections_app.ingestion import text_search_config
from collections_app.models import Chunk, Collection, KeywordStats
from kbsite.db_routing import read_connection

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
    config: str = ""  # the text search configuration its paragraph is indexed under (keyword hits)
    language: str = ""  # its paragraph's language label ("" undetected): which floor and weight apply


# BM25 parameters: the values Anserini and the BEIR baselines use for short passages.
BM25_K1 = 0.9
BM25_B = 0.4
# A word in more than half of the paragraphs, and in more than this many, scores but does not make a
# paragraph a candidate by itself: scoring every paragraph holding "the" would read a whole large collection's
# postings for a word that barely moves the ranking. Below this size the ranking is exact BM25.
COMMON_WORD_PARAGRAPHS = 5000
# Candidates ranked by their score from the candidate-making words before the common words are added: the
# first KEYWORD_WINDOW_MIN (or 4 * the limit) are scored in full, and the window widens until the result
# provably equals ranking every candidate in full (see keyword_retrieve).
KEYWORD_WINDOW_MIN = 200
KEYWORD_WINDOW_GROWTH = 8

# One BM25 term weight of posting `p` (tf, length) for word `k` (idf) under `stats` (avgdl).
_TERM_SCORE = "k.idf * p.tf * (%(k1)s + 1) / (p.tf + %(k1)s * (1 - %(b)s + %(b)s * p.length / stats.avgdl))"

_KEYWORD_SQL = f"""
    WITH RECURSIVE languages AS (
        -- With `present`, the searched collections' document languages: one index probe per (collection,
        -- language) on document_collection_language, however many documents there are.
        SELECT c.id, (SELECT min(d.language) FROM collections_app_document d WHERE d.collection_id = c.id) AS language
        FROM unnest(%(collections)s::uuid[]) c(id) WHERE %(present)s
        UNION ALL
        SELECT l.id, (
            SELECT min(d.language) FROM collections_app_document d
            WHERE d.collection_id = l.id AND d.language > l.language
        ) FROM languages l WHERE l.language IS NOT NULL
    ), configs AS MATERIALIZED (
        -- The configurations asked for, and with `present` those of the searched collections' documents.
        SELECT unnest(%(configs)s::regconfig[]) AS cfg
        UNION SELECT kb_ts_config(language) FROM languages WHERE language IS NOT NULL
    ), terms AS (
        SELECT DISTINCT u.lexeme FROM configs, unnest(to_tsvector(configs.cfg, %(query)s)) u
    ), stats AS MATERIALIZED (
        SELECT coalesce(sum(paragraphs), 0)::float8 AS n,
               coalesce(sum(total_length)::float8 / nullif(sum(paragraphs), 0), 1) AS avgdl
        FROM collections_app_keywordstats WHERE collection_id = ANY(%(collections)s::uuid[])
    ), idf AS MATERIALIZED (
        SELECT t.lexeme, ln(1 + (s.n - t.df + 0.5) / (t.df + 0.5)) AS idf,
               t.df <= greatest(s.n / 2, %(common)s) AS rare
        FROM (
            SELECT k.lexeme, sum(k.paragraphs)::float8 AS df
            FROM collections_app_keywordterm k JOIN terms ON terms.lexeme = k.lexeme
            WHERE k.collection_id = ANY(%(collections)s::uuid[]) AND k.paragraphs > 0
            GROUP BY k.lexeme
        ) t, stats s
    ), words AS MATERIALIZED (
        -- Candidate-making words: the rare ones, or every word when the question has only common ones.
        SELECT lexeme, idf, rare OR NOT EXISTS (SELECT 1 FROM idf WHERE rare) AS making FROM idf
    ), partial AS (
        SELECT p.collection_id, p.chunk_id, sum({_TERM_SCORE}) AS score
        FROM words k
        JOIN collections_app_keywordposting p
          ON p.collection_id = ANY(%(collections)s::uuid[]) AND p.lexeme = k.lexeme
        CROSS JOIN stats
        WHERE k.making
        GROUP BY p.collection_id, p.chunk_id
    ), window_ AS MATERIALIZED (
        SELECT * FROM partial ORDER BY score DESC, chunk_id LIMIT %(window)s
    ), scored AS (
        SELECT w.chunk_id, w.score + coalesce((
            SELECT sum({_TERM_SCORE})
            FROM words k JOIN collections_app_keywordposting p
              ON p.collection_id = w.collection_id AND p.lexeme = k.lexeme AND p.chunk_id = w.chunk_id
            WHERE NOT k.making
        ), 0) AS score
        FROM window_ w CROSS JOIN stats
    ), kept AS (
        SELECT c.id, c.document_id, c.collection_id, c.ordinal, s.score,
               (SELECT count(*) FROM window_) AS window_size, (SELECT min(score) FROM window_) AS lowest,
               (SELECT coalesce(sum(idf), 0) * (%(k1)s + 1) FROM words WHERE NOT making) AS common_bound,
               kb_ts_config(c.language)::text AS config, c.language
        FROM scored s
        JOIN {FROM_VISIBLE} ON c.id = s.chunk_id
        WHERE {VISIBLE_SQL} AND {{filters}}
        ORDER BY s.score DESC, c.id
        LIMIT %(limit)s
    )
    SELECT * FROM kept
    -- Nothing kept: one row of NULLs still says how full the window was, so a window that held every
    -- candidate (nothing matched at all, say) is final without asking again.
    UNION ALL SELECT NULL, NULL, NULL, NULL, NULL, (SELECT count(*) FROM window_), NULL, NULL, NULL, NULL
    WHERE NOT EXISTS (SELECT 1 FROM kept)
    ORDER BY 5 DESC, 1
"""


def keyword_retrieve(
    *,
    visible: Visibility,
    query: str,
    language: str = "",
    limit: int,
    filters: Filters = NO_FILTERS,
    configs: Sequence[str] = (),
    present: bool = False,
) -> list[Hit]:
    """BM25 over PostgreSQL full text: any question word matches, rarer words weigh more, long paragraphs less.

    Paragraphs are indexed under their own language's configuration and under 'simple'. Question words are
    taken under 'simple', under each of `configs` (else the question's `language`'s) and, with `present`,
    under every configuration present in the searched collections (their documents' languages, read in the
    same query: documents are few beside paragraphs, and no paragraph is scanned for it). The BM25 query is
    the set of lexemes all of them give, so a German question's inflected word meets German paragraphs'
    stems, a Serbian one meets Serbian paragraphs in either script, and a word of a language without a
    stemmer (Macedonian, Hebrew, unknown) matches as a whole word. A section in another language than its
    document's is indexed under its own, and met through 'simple' (or its configuration when another
    document of the collections is in that language).

    Document frequencies and lengths come from the collections' KeywordStats/KeywordTerm, and each
    (word, paragraph) pair from KeywordPosting, all of which database triggers keep current with every build.
    In a large collection, a word found in more than half of the paragraphs (a stop word 'simple' keeps)
    still scores, but does not make a candidate on its own.

    How it stays fast and exact: the postings of the candidate-making words give every candidate its
    partial score; only a window of the best partial scores gets the common words' share added (read by
    primary key per paragraph) and the visibility check. A common word adds less than idf * (k1 + 1), so
    when the last kept hit scores at least the window's lowest partial score plus that bound (or the window
    held every candidate), no paragraph outside the window could have ranked: otherwise the window widens.
    """
    window: int | None = max(KEYWORD_WINDOW_MIN, 4 * limit)
    params = {
        "configs": sorted({*(configs or [text_search_config(language)]), "simple"}),
        "present": present,
        "query": query,
        "k1": BM25_K1,
        "b": BM25_B,
        "common": COMMON_WORD_PARAGRAPHS,
        **visible.params,
        "limit": limit,
        **filters.params,
    }
    sql = _KEYWORD_SQL.replace("{filters}", filters.sql)
    with read_connection().cursor() as cursor:
        while True:
            cursor.execute(sql, {**params, "window": window})
            rows = cursor.fetchall()
            if window is None or rows[0][5] < window:
                break  # the window held every candidate
            if rows[0][0] is None:  # nothing visible in a full window: ask for every candidate
                window = None
                continue
            lowest_partial, common_bound = rows[0][6], rows[0][7]
            if len(rows) == limit and rows[-1][4] >= lowest_partial + common_bound:
                break  # nothing outside the window can reach the last kept hit
            window = window * KEYWORD_WINDOW_GROWTH if window < 100_000 else None
    return [
        Hit(str(r[0]), str(r[1]), str(r[2]), r[3], keyword=float(r[4]), config=r[8], language=r[9] or "")
        for r in rows
        if r[0]
    ]


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
        SELECT c.id, c.document_id, c.collection_id, c.ordinal, 1 - ({distance}) AS similarity, c.language
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


def semantic_scores(*, chunk_ids: list[str], vector: list[float]) -> dict[str, float]:
    """Cosine similarity for hits that only the keyword side found, so the floor can judge them too."""
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
        return {str(r[0]): float(r[1]) for r in cursor.fetchall()}


def chunk_texts(chunk_ids: list[str]) -> dict[str, str]:
    """The text of each candidate, for the reranker."""

    return {str(pk): text for pk, text in Chunk.objects.filter(pk__in=chunk_ids).values_list("pk", "text")}


def passes_floor(hit: Hit, floor: float) -> bool:
    """A floor of 0 turns the floor off; otherwise the semantic score must reach it.

    `floor` is the one that applies to this hit's language situation (see _pipeline.floor_for)."""
    return floor <= 0 or (hit.semantic is not None and hit.semantic >= floor)
