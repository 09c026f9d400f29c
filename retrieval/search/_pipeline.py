from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction

from collections_app.ingestion import detect_language
from collections_app.models import Chunk, Collection
from retrieval.embedding import get_embedder, get_model

from ._filters import compile_filters, count_matching
from ._scope import SearchScope
from ._stages import (
    Hit,
    Stage,
    check_embedding_width,
    keyword_retrieve,
    passes_floor,
    reciprocal_rank_fusion,
    semantic_scores,
    vector_retrieve,
)
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


class _Timer:
    def __init__(self) -> None:
        self.start = time.perf_counter()

    def ms(self) -> float:
        return (time.perf_counter() - self.start) * 1000


def search(
    *,
    scope: SearchScope,
    query: str,
    top_n: int | None = None,
    around: int | None = None,
    filters: dict[str, Any] | None = None,
) -> SearchAnswer:
    started = _Timer()
    stages: list[Stage] = []
    collections = scope.collections
    around = _around(collections, around)
    if not collections:
        stages.append(Stage("retrieval", "skipped", scope.why_empty or "no collection to search"))
        return SearchAnswer([], None, None, around, stages, started.ms())
    top_n = min(top_n or max(c.rerank_top_n for c in collections), MAX_TOP_N)
    top_k = max(max(c.rerank_top_k for c in collections), top_n)
    ids = [str(c.pk) for c in collections]
    # Every stage that reads paragraphs (both retrievals and the window) applies the same filter.
    where = compile_filters(filters, collections)
    filter_counts: dict[str, Any] = {}
    exact = False
    if where:
        matching = count_matching(
            tenant_id=scope.tenant_id, collection_ids=ids, labels=scope.reader_labels, filters=where
        )
        filter_counts = {"filters": where.described, "filter_matches": matching}
        exact = matching <= EXACT_SCAN_LIMIT

    stages.append(
        Stage(
            "planning",
            "skipped",
            "no LLM_URL configured: the question is searched as asked",
        )
    )
    language = detect_language(query, default="")
    timer = _Timer()
    keyword_hits = keyword_retrieve(
        tenant_id=scope.tenant_id, collection_ids=ids, labels=scope.reader_labels, query=query,
        language=language, limit=top_k, filters=where,
    )  # fmt: skip
    stages.append(
        Stage(
            "keyword retrieval",
            "ran",
            counts={"language": language or "unknown", "hits": len(keyword_hits), **filter_counts},
            ms=timer.ms(),
        )
    )

    # Collections may use different models: one query embedding per model.
    by_alias: dict[str, list[Collection]] = defaultdict(list)
    for collection in collections:
        by_alias[collection.embedding_alias].append(collection)
    vector_hits: list[Hit] = []
    query_vectors: dict[str, list[float]] = {}
    for alias, members in by_alias.items():
        timer = _Timer()
        query_vectors[alias] = get_embedder(alias).embed_query(query)
        check_embedding_width(collections=members, dims=len(query_vectors[alias]))
        stages.append(Stage("query embedding", "ran", counts={"model": alias}, ms=timer.ms()))
        timer = _Timer()
        with transaction.atomic():
            hits = vector_retrieve(
                tenant_id=scope.tenant_id, collection_ids=[str(c.pk) for c in members], labels=scope.reader_labels,
                vector=query_vectors[alias], limit=top_k, filters=where, exact=exact,
            )  # fmt: skip
        vector_hits.extend(hits)
        stages.append(
            Stage(
                "vector retrieval",
                "ran",
                counts={"model": alias, "hits": len(hits), **filter_counts, **({"scan": "exact"} if exact else {})},
                ms=timer.ms(),
            )
        )
    vector_hits.sort(key=lambda h: -(h.semantic or 0))

    timer = _Timer()
    weights = _weights(collections)
    fused = reciprocal_rank_fusion({"keyword": keyword_hits, "vector": vector_hits}, k=60, weights=weights)
    _fill_semantic(fused, collections, query_vectors)
    stages.append(
        Stage(
            "fusion",
            "ran",
            counts={"method": "rrf", "k": 60, "candidates": len(fused)},
            ms=timer.ms(),
        )
    )

    reason = "no reranker configured (KB_RERANK_URL)" if not settings.KB_RERANK_URL else "reranker client not built yet"
    stages.append(Stage("rerank", "skipped", reason))

    timer = _Timer()
    floors = {str(c.pk): _floor(c) for c in collections}
    kept = [h for h in fused if passes_floor(h, floors[h.collection_id])]
    stages.append(
        Stage(
            "floor",
            "ran",
            counts={"before": len(fused), "after": len(kept)},
            ms=timer.ms(),
        )
    )

    thresholds = {c.score_threshold for c in collections if c.score_threshold is not None}
    if thresholds:
        threshold = min(thresholds)
        kept = [h for h in kept if (h.semantic or 0) >= threshold]
        stages.append(Stage("threshold", "ran", counts={"threshold": threshold, "after": len(kept)}))
    else:
        stages.append(Stage("threshold", "skipped", "no score_threshold set on these collections"))

    kept = kept[:top_n]
    timer = _Timer()
    readable = readable_neighbours(
        tenant_id=scope.tenant_id,
        collection_ids=ids,
        labels=scope.reader_labels,
        hits=kept,
        around=around,
        filters=where,
    )
    windows = build_windows(kept, readable, around)
    results = _render(windows, {str(c.pk): c for c in collections})
    if around:
        stages.append(
            Stage(
                "window",
                "ran",
                counts={"around": around, "results": len(results)},
                ms=timer.ms(),
            )
        )
    else:
        stages.append(Stage("window", "skipped", "around is 0"))

    stages.append(
        Stage(
            "judge",
            "skipped",
            "no LLM_URL configured: this search cannot refuse (refused is null)",
        )
    )
    floor_values = {c.name: _floor(c) for c in collections}
    floor: float | dict[str, float] = (
        next(iter(floor_values.values())) if len(set(floor_values.values())) == 1 else floor_values
    )
    return SearchAnswer(results, None, floor, around, stages, started.ms())


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
    # hybrid_weight w gives the vector side w and the keyword side 1 - w (null: equal).
    weights = [c.hybrid_weight for c in collections if c.hybrid_weight is not None]
    if not weights:
        return {"vector": 1.0, "keyword": 1.0}
    w = sum(weights) / len(weights)
    return {"vector": 2 * w, "keyword": 2 * (1 - w)}


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
