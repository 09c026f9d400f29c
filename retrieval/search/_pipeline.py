from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any

from django.conf import settings
from django.db import transaction

from collections_app.ingestion import detect_language
from collections_app.models import Chunk, Collection
from retrieval.embedding import get_embedder, get_model

from ._filters import Filters, compile_filters, count_matching
from ._scope import SearchScope
from ._stages import (
    Hit,
    check_embedding_width,
    keyword_retrieve,
    passes_floor,
    reciprocal_rank_fusion,
    semantic_scores,
    vector_retrieve,
)
from ._trace import Stage, Trace
from ._visibility import Visibility
from ._window import build_windows, readable_neighbours

DEFAULT_AROUND = 1
# A filter leaving at most this many paragraphs is answered by an exact vector scan (about what one
# filtered HNSW walk may visit: pgvector's hnsw.max_scan_tuples default).
EXACT_SCAN_LIMIT = 20_000
MAX_TOP_N = 50


@dataclass
class SearchAnswer:
    results: list[dict[str, Any]]
    refused: bool | None
    floor: float | dict[str, float] | None
    around: int
    stages: list[Stage] = field(default_factory=list)
    latency_ms: float = 0.0


@dataclass(frozen=True)
class SearchPlan:
    """What every stage of one search shares: who may read what, the filter, and the list sizes."""

    collections: list[Collection]
    visible: Visibility
    where: Filters
    top_n: int
    top_k: int
    filter_counts: dict[str, Any]
    exact: bool  # the filter leaves few rows: rank them exactly instead of walking the HNSW graph


def search(
    *,
    scope: SearchScope,
    query: str,
    top_n: int | None = None,
    around: int | None = None,
    filters: dict[str, Any] | None = None,
) -> SearchAnswer:
    trace = Trace()
    around = _around(scope.collections, around)
    if not scope.collections:
        trace.skipped("retrieval", scope.why_empty or "no collection to search")
        return SearchAnswer([], None, None, around, trace.stages, trace.elapsed_ms())
    plan = search_plan(scope=scope, top_n=top_n, filters=filters)
    trace.skipped("planning", "no LLM_URL configured: the question is searched as asked")
    keyword_hits = _keyword_stage(trace, plan, query)
    vector_hits, query_vectors = _vector_stages(trace, plan, query)
    fused = _fusion_stage(trace, plan, keyword_hits, vector_hits, query_vectors)
    _rerank_stage(trace)
    kept = _floor_stage(trace, plan, fused)
    kept = _threshold_stage(trace, plan, kept)[: plan.top_n]
    results = _window_stage(trace, plan, kept, around)
    trace.skipped("judge", "no LLM_URL configured: this search cannot refuse (refused is null)")
    return SearchAnswer(results, None, _floor_answer(plan.collections), around, trace.stages, trace.elapsed_ms())


def search_plan(*, scope: SearchScope, top_n: int | None, filters: dict[str, Any] | None) -> SearchPlan:
    collections = scope.collections
    top_n = min(top_n or max(c.rerank_top_n for c in collections), MAX_TOP_N)
    visible = Visibility(scope.tenant_id, [str(c.pk) for c in collections], scope.reader_labels)
    # Every stage that reads paragraphs (both retrievals and the window) applies the same filter.
    where = compile_filters(filters, collections)
    filter_counts: dict[str, Any] = {}
    exact = False
    if where:
        matching = count_matching(visible=visible, filters=where)
        filter_counts = {"filters": where.described, "filter_matches": matching}
        exact = matching <= EXACT_SCAN_LIMIT
    return SearchPlan(
        collections=collections,
        visible=visible,
        where=where,
        top_n=top_n,
        top_k=max(max(c.rerank_top_k for c in collections), top_n),
        filter_counts=filter_counts,
        exact=exact,
    )


def _keyword_stage(trace: Trace, plan: SearchPlan, query: str) -> list[Hit]:
    language = detect_language(query, default="")
    with trace.timed("keyword retrieval") as counts:
        hits = keyword_retrieve(
            visible=plan.visible, query=query, language=language, limit=plan.top_k, filters=plan.where
        )
        counts.update(language=language or "unknown", hits=len(hits), **plan.filter_counts)
    return hits


def _vector_stages(trace: Trace, plan: SearchPlan, query: str) -> tuple[list[Hit], dict[str, list[float]]]:
    # Collections may use different models: one query embedding and one retrieval per model.
    by_alias: dict[str, list[Collection]] = defaultdict(list)
    for collection in plan.collections:
        by_alias[collection.embedding_alias].append(collection)
    hits: list[Hit] = []
    vectors: dict[str, list[float]] = {}
    for alias, members in by_alias.items():
        with trace.timed("query embedding") as counts:
            vectors[alias] = get_embedder(alias).embed_query(query)
            check_embedding_width(collections=members, dims=len(vectors[alias]))
            counts["model"] = alias
        visible = replace(plan.visible, collection_ids=[str(c.pk) for c in members])
        with trace.timed("vector retrieval") as counts, transaction.atomic():
            found = vector_retrieve(
                visible=visible, vector=vectors[alias], limit=plan.top_k, filters=plan.where, exact=plan.exact
            )
            counts.update(
                model=alias, hits=len(found), **plan.filter_counts, **({"scan": "exact"} if plan.exact else {})
            )
        hits.extend(found)
    hits.sort(key=lambda h: -(h.semantic or 0))
    return hits, vectors


def _fusion_stage(
    trace: Trace,
    plan: SearchPlan,
    keyword_hits: list[Hit],
    vector_hits: list[Hit],
    query_vectors: dict[str, list[float]],
) -> list[Hit]:
    with trace.timed("fusion") as counts:
        weights = _weights(plan.collections)
        fused = reciprocal_rank_fusion({"keyword": keyword_hits, "vector": vector_hits}, k=60, weights=weights)
        _fill_semantic(fused, plan.collections, query_vectors)
        counts.update(method="rrf", k=60, candidates=len(fused))
    return fused


def _rerank_stage(trace: Trace) -> None:
    if not settings.KB_RERANK_URL:
        trace.skipped("rerank", "no reranker configured (KB_RERANK_URL)")
    else:
        trace.skipped("rerank", "reranker client not built yet")


def _floor_stage(trace: Trace, plan: SearchPlan, fused: list[Hit]) -> list[Hit]:
    with trace.timed("floor") as counts:
        floors = {str(c.pk): _floor(c) for c in plan.collections}
        kept = [h for h in fused if passes_floor(h, floors[h.collection_id])]
        counts.update(before=len(fused), after=len(kept))
    return kept


def _threshold_stage(trace: Trace, plan: SearchPlan, hits: list[Hit]) -> list[Hit]:
    thresholds = {c.score_threshold for c in plan.collections if c.score_threshold is not None}
    if not thresholds:
        trace.skipped("threshold", "no score_threshold set on these collections")
        return hits
    with trace.timed("threshold") as counts:
        threshold = min(thresholds)
        kept = [h for h in hits if (h.semantic or 0) >= threshold]
        counts.update(threshold=threshold, after=len(kept))
    return kept


def _window_stage(trace: Trace, plan: SearchPlan, hits: list[Hit], around: int) -> list[dict[str, Any]]:
    collections = {str(c.pk): c for c in plan.collections}
    if not around:
        trace.skipped("window", "around is 0: each paragraph is returned alone")
        return _render(build_windows(hits, {}, 0), collections)
    with trace.timed("window") as counts:
        readable = readable_neighbours(visible=plan.visible, hits=hits, around=around, filters=plan.where)
        results = _render(build_windows(hits, readable, around), collections)
        counts.update(around=around, results=len(results))
    return results


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


def _floor(collection: Collection) -> float:
    if collection.min_score is not None:
        return collection.min_score
    return get_model(collection.embedding_alias).floor


def _weights(collections: list[Collection]) -> dict[str, float]:
    # hybrid_weight w gives the vector list w and the keyword list 1 - w: 0 is keyword only, 1 vector only,
    # null counts as 0.5 (both lists equal). Across collections the mean applies.
    w = sum(c.hybrid_weight if c.hybrid_weight is not None else 0.5 for c in collections) / len(collections)
    return {"vector": w, "keyword": 1 - w}


def _fill_semantic(hits: list[Hit], collections: list[Collection], vectors: dict[str, list[float]]) -> None:
    alias_of = {str(c.pk): c.embedding_alias for c in collections}
    missing: dict[str, list[str]] = defaultdict(list)
    for hit in hits:
        if hit.semantic is None:
            missing[alias_of[hit.collection_id]].append(hit.chunk_id)
    for alias, chunk_ids in missing.items():
        scores = semantic_scores(chunk_ids=chunk_ids, vector=vectors[alias])
        for hit in hits:
            if hit.chunk_id in scores:
                hit.semantic = scores[hit.chunk_id]


def _render(windows, collections: dict[str, Collection]) -> list[dict[str, Any]]:  # type: ignore[no-untyped-def]
    wanted = {(w.document_id, o) for w in windows for o in w.ordinals}
    if not wanted:
        return []
    rows = (
        Chunk.objects.filter(document_id__in={d for d, _ in wanted})
        .select_related("document")
        .only("id", "text", "ordinal", "page", "section", "language", "document__id", "document__filename",
              "document__source_uri", "collection_id")
    )  # fmt: skip
    by_key = {(str(r.document_id), r.ordinal): r for r in rows if (str(r.document_id), r.ordinal) in wanted}
    results = []
    for window in windows:
        pieces = [by_key[(window.document_id, o)] for o in window.ordinals if (window.document_id, o) in by_key]
        best = by_key[(window.document_id, window.best.ordinal)]
        results.append(
            {
                "text": " ".join(p.text for p in pieces),
                "score": round(window.score, 4) if window.score is not None else None,
                "collection": collections[window.best.collection_id].name,
                "document": {
                    "id": str(best.document.id),
                    "filename": best.document.filename,
                    "source_uri": best.document.source_uri,
                },
                "page": best.page,
                "section": best.section,
                "chunk_id": str(best.id),
                "language": best.language,
                "passages": len(pieces),
            }
        )
    return results
