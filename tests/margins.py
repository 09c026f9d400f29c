"""Which side of a threshold a real model's score falls on, and by how much.

The default embedding model's cosine similarities move by a few thousandths with the CPU's SIMD path (an
AMD EPYC with AVX-512 against an AVX2 laptop): a score 0.002 from the floor, the supported threshold or a
rival's score passes on one machine and flips a branch on the next. A test that rests on such a side says so
with these helpers, on the score it actually got: they check the side and that the score is at least
MARGIN away, and name both numbers, so a drift fails loudly at the margin instead of silently flipping what
the test exercises. A test whose margin is too small changes its data or its threshold, not the margin.

    assert_clears(result["score"], answer["floor"], what="the bicycle paragraph")
    assert_falls_short(best_cosine(collection, question), 0.84, what="the unrelated question's best paragraph")
    assert_leads(first["score"], second["score"])
"""

from __future__ import annotations

from dataclasses import dataclass

from collections_app.models import Chunk, Collection
from embedding import get_embedder
from retrieval.selectors.search import Visibility, vector_retrieve

# Measured spread of one score between SIMD paths: ~0.004 (0.839-0.843 for one question). Twice that, rounded.
MARGIN = 0.01


def assert_clears(score: float, threshold: float, *, margin: float = MARGIN, what: str = "the score") -> None:
    """`score` reaches `threshold` (at or above it, as the floor and the badges count) with `margin` to spare."""
    __tracebackhide__ = True
    if score < threshold:
        raise AssertionError(f"{what} {score:.4f} is below {threshold:.4f} (by {threshold - score:.4f})")
    if score - threshold < margin:
        raise AssertionError(
            f"{what} {score:.4f} clears {threshold:.4f} by only {score - threshold:.4f} (< {margin}): "
            "another CPU's rounding may put it below; give the test data or a threshold with a wider margin"
        )


def assert_falls_short(score: float, threshold: float, *, margin: float = MARGIN, what: str = "the score") -> None:
    """`score` stays below `threshold` by at least `margin`."""
    __tracebackhide__ = True
    if score >= threshold:
        raise AssertionError(f"{what} {score:.4f} reaches {threshold:.4f} (by {score - threshold:.4f})")
    if threshold - score < margin:
        raise AssertionError(
            f"{what} {score:.4f} falls short of {threshold:.4f} by only {threshold - score:.4f} (< {margin}): "
            "another CPU's rounding may lift it over; give the test data or a threshold with a wider margin"
        )


def assert_leads(score: float, rival: float, *, margin: float = MARGIN, what: str = "the first result") -> None:
    """`score` ranks above `rival` by at least `margin` (a first place these two scores decide)."""
    __tracebackhide__ = True
    if score <= rival:
        raise AssertionError(f"{what} {score:.4f} does not lead its rival {rival:.4f}")
    if score - rival < margin:
        raise AssertionError(
            f"{what} {score:.4f} leads its rival {rival:.4f} by only {score - rival:.4f} (< {margin}): "
            "another CPU's rounding may swap them; give the test data with a wider gap"
        )


@dataclass(frozen=True)
class Scored:
    score: float
    text: str
    language: str


def cosines(collection: Collection, question: str) -> list[Scored]:
    """Every paragraph of the collection (its active generation), best first, scored against the question as
    the pipeline scores it: the question embedded by the collection's model, pgvector's cosine in PostgreSQL.

    For a margin the answer does not show: the best paragraph of an empty answer, a rival below the floor."""
    vector = get_embedder(collection.served_alias).embed_query(question)
    visible = Visibility(collection.tenant_id, [str(collection.pk)])
    hits = vector_retrieve(visible=visible, vector=vector, limit=1000, exact=True)
    found = Chunk.objects.filter(pk__in=[h.chunk_id for h in hits]).values_list("pk", "text", "language")
    rows = {str(pk): (text, language) for pk, text, language in found}
    return [Scored(h.semantic or 0.0, *rows[h.chunk_id]) for h in hits]


def best_cosine(collection: Collection, question: str) -> float:
    """The best paragraph's score: what decides whether anything passes the floor, and whether the search
    retries (nothing reached the supported threshold)."""
    found = cosines(collection, question)
    assert found, f"{collection.name} has no paragraph to score"
    return found[0].score
