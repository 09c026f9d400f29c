"""Whether a vector can be searched: the one check every vector passes before it is stored.

pgvector computes a cosine as dot(a, b) / sqrt(|a|² |b|²) with the squares summed in float32. All zeros give
NaN against every question (one such row used to turn a whole tenant's search into a 500); values so small their
squares underflow give a clamped cosine of 1, a perfect match for every question, and values past ~1.8e19 a
cosine of 0 (both measured in tests/collections_app/services/collection_file/test_what_enters.py).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from infra.errors import DomainError


class UnsearchableVector(DomainError, ValueError):
    """The embedding model answered a vector no question can be compared with; the message says why.

    The model's fault, not the caller's: the API answers 503 and nothing is written (an edit leaves the
    paragraph as it was, a document goes to `error` with this message, an import stops with it)."""

    meaning = "unavailable"


def vector_problem(vector: Sequence[float] | np.ndarray, dims: int | None = None) -> str | None:
    """Why `vector` cannot be searched (wrong width, a value that is not finite, no length), or None."""
    values = np.asarray(vector, dtype=np.float32)
    if values.ndim != 1 or not len(values):
        return "is not a list of numbers"
    if dims is not None and len(values) != dims:
        return f"has {len(values)} dimensions where the model's have {dims}"
    if not np.isfinite(values).all():
        return "holds a value that is not a finite number"
    with np.errstate(over="ignore", under="ignore"):
        squared = float(np.dot(values, values))  # in float32, as pgvector sums it
    if not 0 < squared < float("inf"):
        return "has no length a cosine can use (every value is 0, or too small or too large to square in float32)"
    return None


def searchable_vectors(vectors: list[list[float]], dims: int | None = None) -> list[list[float]]:
    """`vectors` as they are, or UnsearchableVector naming the first that cannot be searched (by position)."""
    for position, vector in enumerate(vectors, start=1):
        problem = vector_problem(vector, dims)
        if problem:
            raise UnsearchableVector(
                f"the embedding model answered a vector that {problem} (passage {position} of {len(vectors)}); "
                "nothing was stored: try again, or check the embedding endpoint"
            )
    return vectors
