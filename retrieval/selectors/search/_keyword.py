"""Keyword retrieval: exact BM25 over the keyword blocks, reading a bounded share of the postings.

The postings are stored as search engines store them (migration 0034): per word, blocks of up to 128 paragraph
numbers with their term frequencies and lengths, about 8 bytes a posting; a paragraph's number
(`collections_app_chunk.keyword_no`) leads back to it through a unique index, for the few thousand paragraphs a
question scores in full.

The split of the question's words (MaxScore, Turtle & Flood 1995): every word has an upper bound on what it
can add to a paragraph's score, idf * (k1 + 1) (the BM25 term weight as tf grows without end). The words
whose bounds together stay well below the score the limit-th hit will have cannot put a paragraph into
the result on their own; their postings are never scanned. Their share is read only for the paragraphs the
other words (the candidate-making ones) ranked near the top, from each paragraph's own keyword index: its
tsvector filtered to those words, one row per paragraph however many words were left out (a primary-key
probe per word and paragraph cost 2.8 µs, as much as reading ten postings). The limit-th score is estimated
beforehand, inside the same statement: the rarest words' postings (a few thousand) pick their best
paragraphs, which are scored in full; the limit-th of those full scores is the estimate.

The candidate-making words' partial scores rank the candidates. Those below the floor, the estimate less
the non-making words' bounds, cannot reach the estimate and are dropped before the ranking (sorting tens of
thousands of one-word candidates took a quarter of a long question's time). The best KEYWORD_WINDOW_MIN are
scored in full, and the limit-th of those full scores says how far down a partial score could still rank
(at least that score less the non-making words' bounds): those are scored in full too, and no others.

Whatever the split, the answer is checked, not trusted: a paragraph outside the scored window scores at most
its partial score (no higher than the best partial score left out, nor than the floor if it was dropped)
plus the non-making words' bounds, so when the last hit kept reaches that, nothing outside could have
ranked. When it does not (a filter or the reader's labels hid the best paragraphs, a question whose words
are all alike), the stage asks again with every rare word candidate-making and a widening window: the
ranking the stage had before the split.
"""

from __future__ import annotations

from collections.abc import Sequence

from infra.db_routing import read_connection
from ingestion import text_search_config

from ._filters import NO_FILTERS, Filters
from ._stages import Hit
from ._visibility import FROM_VISIBLE, ORDINAL_SQL, VISIBLE_SQL, Visibility

# How a block packs a posting (migration 0034): its tf above PACK_SHIFT bits of the paragraph's BM25 length.
PACK_SHIFT = 22
LENGTH_MASK = (1 << PACK_SHIFT) - 1
# BM25 parameters: the values Anserini and the BEIR baselines use for short passages.
BM25_K1 = 0.9
BM25_B = 0.4
# A word in more than half of the paragraphs, and in more than this many, scores but does not make a
# paragraph a candidate by itself: scoring every paragraph holding "the" would read a whole large collection's
# postings for a word that barely moves the ranking. Below this size the ranking is exact BM25.
COMMON_WORD_PARAGRAPHS = 5000
# The first pass: the rarest words, until their postings reach this many, estimate the limit-th score from
# this many of their postings (their blocks that bound the highest term weights first).
PROBE_POSTINGS = 4000
# The non-making words' bounds may add up to this share of that estimate. Lower reads more postings; higher
# leaves more paragraphs whose partial score could still reach the result, so the scored window grows.
SPLIT_SHARE = 0.5
# The scored window: at least KEYWORD_WINDOW_MIN (or 4 * the limit) of the best partial scores, and every
# further partial score that could still rank, up to KEYWORD_WINDOW_MAX. Asked again without the split, the
# window starts at the minimum and widens KEYWORD_WINDOW_GROWTH times per question until the result is
# proven (finally every candidate).
KEYWORD_WINDOW_MIN = 200
KEYWORD_WINDOW_MAX = 3000
KEYWORD_WINDOW_GROWTH = 8

# A Hebrew word of the question also as the words it may be without its glued prefixes, as Hebrew paragraphs are
# indexed (migration 0038): "ובבית" meets "בית" and "הבית". Any other word has no such form. (bench/hebrew_keywords.py
# leaves this out to measure the stage as it was.)
HEBREW_FORMS_SQL = """
        UNION SELECT unnest(kb_hebrew_forms(u.lexeme)) FROM unnest(to_tsvector('simple', %(query)s)) u"""

# One BM25 term weight of posting `p` (tf, length) for word `k` (its bound: idf * (k1 + 1)) under `stats`
# (k1 * (1 - b) and k1 * b / avgdl, worked out once: this runs for every posting read).
_TERM_SCORE = "k.bound * x.tf / (x.tf + stats.k_fixed + stats.k_length * x.length)"


def _rest(row: str, which: str, words: str = "words") -> str:
    """The share of `which` words in the score of `row` (no, length), from the paragraph's own keyword
    index: its tsvector with those words marked (setweight) and the rest dropped (ts_filter), so a frequent
    word costs no scan of its postings and no probe of its own. The postings are made from the same tsvector
    in the same transaction (migration 0013: tf = its positions), so the two give the same term weights; every
    keyword index keeps positions, to_tsvector's and the Hebrew forms at their words' (migration 0038), and
    ts_filter would drop a lexeme without any."""
    return f"""coalesce((
            SELECT sum(k.bound * u.tf / (u.tf + stats.k_fixed + stats.k_length * {row}.length))
            FROM collections_app_chunk c
            CROSS JOIN LATERAL (
                SELECT v.lexeme, coalesce(array_length(v.positions, 1), 1) AS tf
                FROM unnest(ts_filter(setweight(setweight(c.search_vector, 'D'), 'A',
                     ARRAY(SELECT k.lexeme FROM {words} k WHERE {which})), '{{a}}')) v
            ) u
            JOIN {words} k ON k.lexeme = u.lexeme
            WHERE c.keyword_no = {row}.no
        ), 0)"""


def _scan(words: str, which: str) -> str:
    """Every paragraph holding one of the `which` words of `words`, with the share of those words in its score:
    the postings of those words read whole (a scan of each word's postings, the cost the split keeps small)."""
    return f"""SELECT b.base + x.off AS no, sum({_TERM_SCORE}) AS score, any_value(x.length) AS length
        FROM {words} k
        JOIN collections_app_keywordblock b
          ON b.collection_id = ANY(%(collections)s::uuid[]) AND b.lexeme = k.lexeme
        CROSS JOIN LATERAL (
            SELECT u.off, u.pack >> {PACK_SHIFT} AS tf, u.pack & {LENGTH_MASK} AS length
            FROM unnest(b.offs, b.packs) u(off, pack)
        ) x
        CROSS JOIN stats
        WHERE {which}
        GROUP BY 1"""


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
        SELECT DISTINCT u.lexeme FROM configs, unnest(to_tsvector(configs.cfg, %(query)s)) u{HEBREW_FORMS_SQL}
    ), totals AS (
        SELECT coalesce(sum(paragraphs), 0)::float8 AS n,
               coalesce(sum(total_length)::float8 / nullif(sum(paragraphs), 0), 1) AS avgdl
        FROM collections_app_keywordstats WHERE collection_id = ANY(%(collections)s::uuid[])
    ), stats AS MATERIALIZED (
        -- float8: the parameters arrive as literals, which PostgreSQL reads as numeric, and a numeric k_fixed
        -- made every posting's term weight numeric arithmetic (a slow question took 1.6 times as long).
        SELECT n, (%(k1)s * (1 - %(b)s))::float8 AS k_fixed, %(k1)s * %(b)s / avgdl AS k_length FROM totals
    ), idf AS MATERIALIZED (
        SELECT t.lexeme, t.df, ln(1 + (s.n - t.df + 0.5) / (t.df + 0.5)) AS idf,
               t.df <= greatest(s.n / 2, %(common)s) AS rare
        FROM (
            SELECT k.lexeme, sum(k.paragraphs)::float8 AS df
            FROM collections_app_keywordterm k JOIN terms ON terms.lexeme = k.lexeme
            WHERE k.collection_id = ANY(%(collections)s::uuid[]) AND k.paragraphs > 0
            GROUP BY k.lexeme
        ) t, stats s
    ), ranked AS MATERIALIZED (
        -- Every word with its bound. Probe words: the rarest rare words until PROBE_POSTINGS are read (with
        -- the split on). The others are taken lowest bound first: `below`, the bounds of the common words and
        -- of the rare words up to this one, decides whether it may stay out of the candidate-making set.
        SELECT lexeme, idf, rare, idf * (%(k1)s + 1) AS bound,
               %(split)s AND rare AND coalesce(sum(df) FILTER (WHERE rare) OVER (
                   ORDER BY df, lexeme ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) < %(probe)s AS probe,
               sum(idf * (%(k1)s + 1)) OVER (ORDER BY rare, df DESC, lexeme) AS below
        FROM idf
    ), probe_blocks AS MATERIALIZED (
        -- The probe words' blocks that can add most to a paragraph (their bound from max_tf and min_length),
        -- until PROBE_POSTINGS are read: a rarest word held by a third of a million paragraphs was decoded
        -- whole here, and again by the candidate-making scan below. Small words' blocks are all read.
        SELECT lexeme, bound, base, offs, packs FROM (
            SELECT k.lexeme, k.bound, b.base, b.offs, b.packs, coalesce(sum(cardinality(b.offs)) OVER (
                ORDER BY k.bound * b.max_tf / (b.max_tf + stats.k_fixed + stats.k_length * b.min_length) DESC,
                         b.lexeme, b.base ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before
            FROM ranked k
            JOIN collections_app_keywordblock b
              ON b.collection_id = ANY(%(collections)s::uuid[]) AND b.lexeme = k.lexeme
            CROSS JOIN stats
            WHERE k.probe
        ) blocks
        WHERE before < %(probe)s
    ), probe_top AS MATERIALIZED (
        SELECT k.base + x.off AS no, sum({_TERM_SCORE}) AS score, any_value(x.length) AS length
        FROM probe_blocks k
        CROSS JOIN LATERAL (
            SELECT u.off, u.pack >> {PACK_SHIFT} AS tf, u.pack & {LENGTH_MASK} AS length
            FROM unnest(k.offs, k.packs) u(off, pack)
        ) x
        CROSS JOIN stats
        GROUP BY 1
        ORDER BY score DESC
        LIMIT 2 * %(limit)s
    ), estimate AS MATERIALIZED (
        -- The limit-th best full score of the paragraphs those blocks rank best, each scored in full from its
        -- own keyword index (a paragraph's other probe words may sit in blocks not read): the limit-th full
        -- score over all paragraphs is at least that, when the reader may read them (the check at the end
        -- does not rely on it).
        SELECT coalesce((
            SELECT {_rest("t", "true", words="ranked")} AS score
            FROM probe_top t CROSS JOIN stats
            ORDER BY score DESC OFFSET %(limit)s - 1 LIMIT 1
        ), 0) AS theta
    ), words AS MATERIALIZED (
        -- Candidate-making: probe words, and the rare words whose bound would take `below` past the share of
        -- the estimate; every word when the question has only common ones.
        SELECT lexeme, idf, bound, rare AND (probe OR below > %(share)s * e.theta)
            OR NOT EXISTS (SELECT 1 FROM idf WHERE rare) AS making,
            %(split)s AND rare AND NOT probe AND below <= %(share)s * e.theta AS optional
        FROM ranked, estimate e
    ), bounds AS MATERIALIZED (
        SELECT coalesce(sum(bound) FILTER (WHERE NOT making), 0) AS nonmaking,
               coalesce(bool_or(optional), false) AS optional
        FROM words
    ), partial AS (
        {_scan("words", "k.making")}
    ), cut AS MATERIALIZED (
        -- No paragraph whose partial score is below the estimate less the non-making bounds can reach the
        -- estimate, so it is dropped before the ranking (a little lower: the estimate is a sum in another order).
        SELECT e.theta - b.nonmaking - 1e-9 * (1 + e.theta) AS floor FROM estimate e, bounds b
    ), top AS MATERIALIZED (
        -- One more than the window can hold: its score bounds every partial score left out.
        SELECT *, row_number() OVER (ORDER BY score DESC, no) AS rank
        FROM (
            SELECT * FROM partial WHERE score >= (SELECT floor FROM cut)
            ORDER BY score DESC, no LIMIT %(window_max)s::bigint + 1
        ) best
    ), first AS MATERIALIZED (
        -- The smallest window, scored in full.
        SELECT t.rank, t.no, t.score + {_rest("t", "NOT k.making")} AS score
        FROM top t CROSS JOIN stats
        WHERE t.rank <= coalesce(%(window_min)s::bigint, t.rank)
    ), settled AS MATERIALIZED (
        -- The limit-th best full score in it: the result's last score is at least that (when the reader may
        -- read those paragraphs), so a partial score below it less the non-making bounds cannot rank.
        SELECT coalesce((SELECT score FROM first ORDER BY score DESC OFFSET %(limit)s - 1 LIMIT 1), 0) AS theta
    ), more AS MATERIALIZED (
        -- With the split, the further partial scores that still could rank (ranks after the first window:
        -- a run of the best ones, since a lower partial score cannot pass where a higher one failed).
        SELECT t.rank, t.no, t.score + {_rest("t", "NOT k.making")} AS score
        FROM top t, settled s, bounds b, stats
        WHERE %(split)s AND s.theta > 0 AND t.rank > %(window_min)s AND t.rank <= %(window_max)s
          AND t.score >= s.theta - b.nonmaking
    ), scored AS (
        SELECT no, score FROM first UNION ALL SELECT no, score FROM more
    ), window_ AS MATERIALIZED (
        SELECT (SELECT count(*) FROM first) + (SELECT count(*) FROM more) AS size
    ), outside AS MATERIALIZED (
        -- The best partial score outside the window (0: every paragraph a making word holds is inside; at
        -- least the floor, which every dropped paragraph is under); a paragraph that only non-making words
        -- hold has a partial score of 0 too.
        SELECT greatest(
            coalesce((SELECT max(top.score) FROM top, window_ WHERE top.rank > window_.size), 0),
            (SELECT floor FROM cut)
        ) AS score
    ), kept AS (
        -- In score order, so the visibility check stops at the limit-th readable paragraph.
        SELECT c.id, c.document_id, c.collection_id, {ORDINAL_SQL} AS ordinal, s.score,
               kb_ts_config(c.language)::text AS config, c.language
        FROM (SELECT * FROM scored ORDER BY score DESC OFFSET 0) s
        JOIN LATERAL (
            SELECT c.* FROM {FROM_VISIBLE} WHERE c.keyword_no = s.no AND {VISIBLE_SQL} AND {{filters}}
        ) c ON true
        ORDER BY s.score DESC, c.id
        LIMIT %(limit)s
    ), proof AS (
        -- What the last hit kept must reach for the answer to be final (NULL: nothing can be missing:
        -- the window held every candidate and no candidate-making word stayed out).
        SELECT CASE WHEN o.score > 0 OR b.optional THEN o.score + b.nonmaking END AS need,
               (SELECT size FROM window_) AS window_size,
               (SELECT count(*) FILTER (WHERE making) FROM words) AS scanned,
               (SELECT count(*) FILTER (WHERE NOT making) FROM words) AS looked_up
        FROM outside o, bounds b
    )
    SELECT kept.*, proof.* FROM kept, proof
    -- Nothing kept: one row of NULLs still carries the proof, so an empty answer can be final too.
    UNION ALL SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, proof.*
    FROM proof WHERE NOT EXISTS (SELECT 1 FROM kept)
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
    counts: dict[str, int] | None = None,
) -> list[Hit]:
    """BM25 over PostgreSQL full text: any question word matches, rarer words weigh more, long paragraphs less.

    Paragraphs are indexed under their own language's configuration and under 'simple'. Question words are
    taken under 'simple', under each of `configs` (else the question's `language`'s) and, with `present`,
    under every configuration present in the searched collections (their documents' languages, read in the
    same query: documents are few beside paragraphs, and no paragraph is scanned for it). The BM25 query is
    the set of lexemes all of them give, so a German question's inflected word meets German paragraphs'
    stems, a Serbian one meets Serbian paragraphs in either script, a Hebrew word meets the same word with
    other prefixes glued to it ("לבית", "ובבית": kb_hebrew_forms, migration 0038), and a word of a language
    without a stemmer (Macedonian, unknown) matches as a whole word. A section in another language than its
    document's is indexed under its own, and met through 'simple' (or its configuration when another
    document of the collections is in that language).

    Document frequencies and lengths come from the collections' KeywordStats/KeywordTerm, and each
    (word, paragraph) pair from the word's KeywordBlock rows, all of which database triggers keep current with
    every build.
    In a large collection, a word found in more than half of the paragraphs (a stop word 'simple' keeps)
    still scores, but does not make a candidate on its own.

    How it stays fast and exact: see the module's docstring. The first query splits the words by their
    bounds; when its answer cannot be proven final, the stage asks again with every rare word
    candidate-making, widening the window until it can. `counts`, when given, adds up what it took: queries
    asked, and in the last one the words whose postings were scanned and those only looked up per paragraph.
    """
    base = max(KEYWORD_WINDOW_MIN, 4 * limit)
    params = {
        "configs": sorted({*(configs or [text_search_config(language)]), "simple"}),
        "present": present,
        "query": query,
        "k1": BM25_K1,
        "b": BM25_B,
        "common": COMMON_WORD_PARAGRAPHS,
        "probe": PROBE_POSTINGS,
        "share": SPLIT_SHARE,
        **visible.params,
        "limit": limit,
        **filters.params,
    }
    sql = _KEYWORD_SQL.replace("{filters}", filters.sql)
    # (split, smallest window, largest window); no windows: every candidate.
    attempt: tuple[bool, int | None, int | None] = (True, base, max(base, KEYWORD_WINDOW_MAX))
    with read_connection().cursor() as cursor:
        while True:
            split, window_min, window_max = attempt
            cursor.execute(sql, {**params, "split": split, "window_min": window_min, "window_max": window_max})
            rows = cursor.fetchall()
            if counts is not None:
                counts["queries"] = counts.get("queries", 0) + 1
            need = rows[0][7]
            if need is None or window_max is None:
                break  # every candidate was scored in full
            found = [r for r in rows if r[0]]
            if len(found) == limit and found[-1][4] >= need:
                break  # nothing outside the window can reach the last kept hit
            if split:
                attempt = (False, base, base)
            elif found and window_max < 100_000:
                attempt = (False, window_max * KEYWORD_WINDOW_GROWTH, window_max * KEYWORD_WINDOW_GROWTH)
            else:  # nothing visible in a full window, or a window this wide: every candidate
                attempt = (False, None, None)
    if counts is not None:
        counts["words_scanned"] = counts.get("words_scanned", 0) + rows[0][9]
        counts["words_looked_up"] = counts.get("words_looked_up", 0) + rows[0][10]
    return [
        Hit(str(r[0]), str(r[1]), str(r[2]), r[3], keyword=float(r[4]), config=r[5], language=r[6] or "")
        for r in rows
        if r[0]
    ]
