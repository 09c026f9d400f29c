"""Fusion: one ranked list out of the keyword and vector lists.

Two methods, both weighted by `hybrid_weight` (the vector list's share a, the keyword list's 1 - a):

- `zscore` (the default, KB_FUSION): each list's scores become z-scores over that list's own candidates,
  (s - mean) / std, and a candidate's fused score is Σ weight * z. A candidate missing from a list gets that
  list's lowest z (it scored below every candidate the list kept, or matched nothing). Measured best on
  SciFact's train judgements (docs/DECISIONS.md); bench/eval_beir.py scores its offline variant with these
  same functions.
- `rrf` (the baseline): Σ weight / (k + rank), k = 60. Rank-based, so scores need no common scale.

A list weighted 0 is switched off: its candidates do not enter the fused list. The plain functions
(`zscores`, `zscore_combine`, `rrf_combine`, `ranked`) take ids and scores, so the bench and the tests can
use them without a database.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ._situation import cross_language

if TYPE_CHECKING:
    from ._stages import Hit

FUSION_METHODS = ("zscore", "rrf")
RRF_K = 60
# The vector list's least share for a paragraph in another language than the question's (cross_language_weights):
# measured on bench/data/xlang's calibration half (bench/eval_xlang.py; docs/DECISIONS.md).
CROSS_LANGUAGE_VECTOR_WEIGHT = 1.0
# Which score of a hit each list ranks by: BM25 for the keyword list, cosine similarity for the vector list.
LIST_SCORE = {"keyword": "keyword", "vector": "semantic"}


def zscores(scores: Mapping[str, float]) -> dict[str, float]:
    """(s - mean) / population std over the given candidates; all 0 when every score is the same."""
    if not scores:
        return {}
    mean = statistics.fmean(scores.values())
    spread = statistics.pstdev(scores.values(), mu=mean)
    return {key: (value - mean) / spread if spread > 0 else 0.0 for key, value in scores.items()}


def zscore_combine(
    lists: Mapping[str, Sequence[tuple[str, float]]],
    weights: Mapping[str, float],
    weights_of: Mapping[str, Mapping[str, float]] | None = None,
) -> dict[str, float]:
    """Σ weight * z over the lists; a candidate missing from a list gets that list's lowest z.

    `lists` maps a list's name to its (id, score) pairs (an id listed twice keeps its first score);
    a list whose weight is missing or ≤ 0 is left out entirely. `weights_of` gives some candidates their own
    weights (a paragraph in another language than the question leans on the vector list); the z-scores are
    still taken over each whole list, so every candidate is scored on the same scale.
    """
    weights_of = weights_of or {}
    used = {name: pairs for name, pairs in lists.items() if weights.get(name, 0.0) > 0}
    normalised: dict[str, dict[str, float]] = {}
    for name, pairs in used.items():
        first: dict[str, float] = {}
        for key, score in pairs:
            first.setdefault(key, score)
        normalised[name] = zscores(first)
    candidates = {key for z in normalised.values() for key in z}
    fused = dict.fromkeys(candidates, 0.0)
    for name, z in normalised.items():
        if not z:
            continue  # an empty list scores every candidate alike: it cannot reorder them
        lowest = min(z.values())
        for key in candidates:
            fused[key] += weights_of.get(key, weights)[name] * z.get(key, lowest)
    return fused


def rrf_combine(
    lists: Mapping[str, Sequence[str]],
    weights: Mapping[str, float],
    k: int = RRF_K,
    weights_of: Mapping[str, Mapping[str, float]] | None = None,
) -> dict[str, float]:
    """Σ weight / (k + rank) over the lists (rank from 1, an id's first place counts); weight ≤ 0: left out.

    `weights_of`: some candidates' own weights, as in zscore_combine."""
    weights_of = weights_of or {}
    fused: dict[str, float] = {}
    for name, keys in lists.items():
        weight = weights.get(name, 0.0)
        if weight <= 0:
            continue
        seen: set[str] = set()
        for rank, key in enumerate(keys, start=1):
            if key in seen:
                continue
            seen.add(key)
            fused[key] = fused.get(key, 0.0) + weights_of.get(key, weights)[name] / (k + rank)
    return fused


def ranked(fused: Mapping[str, float]) -> list[str]:
    """Ids by fused score, highest first; ties by id, so the order never depends on dict order."""
    return sorted(fused, key=lambda key: (-fused[key], key))


def fuse(
    method: str,
    lists: dict[str, list[Hit]],
    weights: dict[str, float],
    cross_weights: Mapping[str, float] | None = None,
    question_language: str = "",
) -> list[Hit]:
    """The pipeline's fusion: `method` is zscore or rrf (KB_FUSION).

    With `cross_weights`, a paragraph in another language than `question_language` (stages.cross_language)
    is fused with those weights instead of `weights`."""
    if method == "zscore":
        return zscore_fusion(lists, weights, cross_weights, question_language)
    if method == "rrf":
        return reciprocal_rank_fusion(lists, k=RRF_K, weights=weights, cross_weights=cross_weights,
                                      question_language=question_language)  # fmt: skip
    raise ValueError(f"unknown fusion method {method!r}; use one of {', '.join(FUSION_METHODS)}")


def zscore_fusion(
    lists: dict[str, list[Hit]],
    weights: dict[str, float],
    cross_weights: Mapping[str, float] | None = None,
    question_language: str = "",
) -> list[Hit]:
    """Hits fused by `zscore_combine` over each list's own score (LIST_SCORE); each keeps its rank per list."""
    merged = _merge(lists, weights)
    pairs = {
        name: [(hit.chunk_id, float(getattr(hit, LIST_SCORE[name]))) for hit in hits]
        for name, hits in lists.items()
        if weights.get(name, 0.0) > 0
    }
    own = _weights_of(merged, cross_weights, question_language)
    for key, score in zscore_combine(pairs, weights, own).items():
        merged[key].fused = score
    return sorted(merged.values(), key=lambda h: (-h.fused, h.chunk_id))


def reciprocal_rank_fusion(
    ranked: dict[str, list[Hit]],
    k: int = RRF_K,
    weights: dict[str, float] | None = None,
    cross_weights: Mapping[str, float] | None = None,
    question_language: str = "",
) -> list[Hit]:
    """RRF: score = Σ weight / (k + rank). Rank-based, so cosine and BM25 need no common scale.

    A list `weights` does not name weighs 1.
    """
    weights = {name: (weights or {}).get(name, 1.0) for name in ranked}
    merged = _merge(ranked, weights)
    own = _weights_of(merged, cross_weights, question_language)
    keys = {n: [h.chunk_id for h in hits] for n, hits in ranked.items()}
    for key, score in rrf_combine(keys, weights, k, own).items():
        merged[key].fused = score
    return sorted(merged.values(), key=lambda h: (-h.fused, h.chunk_id))


def without_unscorable(hits: Sequence[Hit]) -> tuple[list[Hit], set[str]]:
    """The hits whose every score is a number, and the ids of those that were not.

    A paragraph whose vector has no length (one a bad import or an old bug left behind) scores NaN against
    every question; one NaN turns every z-score of its list into NaN and used to make the search a 500.
    Such a paragraph cannot be ranked: it is left out of this search, and the trace counts it."""
    kept: list[Hit] = []
    dropped: set[str] = set()
    for hit in hits:
        scores = (hit.semantic, hit.keyword, hit.rerank)
        if all(score is None or math.isfinite(score) for score in scores):
            kept.append(hit)
        else:
            dropped.add(hit.chunk_id)
    return kept, dropped


def cross_language_weights(weights: Mapping[str, float], vector_share: float) -> dict[str, float]:
    """The weights a paragraph in another language than the question's is fused with.

    The vector list gets at least `vector_share` (CROSS_LANGUAGE_VECTOR_WEIGHT: across languages the keyword
    side matches mostly names, numbers and words the languages happen to share). A list switched off
    (hybrid_weight 0 or 1) stays off: those weights apply as they are.
    """
    if weights.get("vector", 0.0) <= 0 or weights.get("keyword", 0.0) <= 0 or weights["vector"] >= vector_share:
        return dict(weights)
    return {"vector": vector_share, "keyword": 1 - vector_share}


def _weights_of(
    merged: Mapping[str, Hit], cross_weights: Mapping[str, float] | None, question_language: str
) -> dict[str, Mapping[str, float]]:
    if not cross_weights:
        return {}
    return {key: cross_weights for key, hit in merged.items() if cross_language(question_language, hit.language)}


def _merge(lists: dict[str, list[Hit]], weights: Mapping[str, float]) -> dict[str, Hit]:
    """One Hit per paragraph from the lists that count, carrying each list's score and its rank there."""
    merged: dict[str, Hit] = {}
    for name, hits in lists.items():
        if weights.get(name, 0.0) <= 0:
            continue  # a list weighted 0 is switched off: its hits do not even enter the fused list
        for rank, hit in enumerate(hits, start=1):
            current = merged.setdefault(hit.chunk_id, hit)
            if hit.semantic is not None:
                current.semantic = hit.semantic
            if hit.keyword is not None:
                current.keyword = hit.keyword
            current.ranks.setdefault(name, rank)
            current.fused = 0.0
    return merged


def fusion_counts(
    method: str, weights: Mapping[str, float], cross_weights: Mapping[str, float] | None = None
) -> dict[str, object]:
    """What the trace's fusion stage says about the method: its name, the weights and its constants.

    `weights` are those of a paragraph in the question's language; `cross_weights`, when given, those of a
    paragraph in another language (`weights_cross_language`)."""
    shown: dict[str, object] = {"weights": dict(weights)}
    if cross_weights is not None:
        shown["weights_cross_language"] = dict(cross_weights)
    if method == "rrf":
        return {"method": "rrf", "k": RRF_K, **shown}
    return {"method": "zscore", **shown, "missing": "the list's lowest z"}


def switched_off(weights: Mapping[str, float], name: str) -> str:
    """Why a retrieval list is not run (empty when it runs): hybrid_weight gives it no weight."""
    if weights.get(name, 0.0) > 0:
        return ""
    only = "vector" if name == "keyword" else "keyword"
    return f"hybrid_weight {weights.get('vector', 0.0):g}: the {only} list only"
