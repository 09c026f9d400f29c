"""The search pipeline: one stage per function, each reported in the trace.

    answer = search(scope=..., query=..., top_n=...)

Public API: `search`, `SearchScope`, `SearchAnswer`, `resolve_scope`, `UnknownCollections`, `InvalidFilters`.
"""

from ._filters import InvalidFilters
from ._pipeline import SearchAnswer, search
from ._scope import (
    ReaderRequired,
    SearchScope,
    UnknownCollections,
    UnknownReader,
    collection_scope,
    resolve_scope,
    searchable_collections,
)
from ._stages import EmbeddingWidthMismatch

__all__ = [
    "EmbeddingWidthMismatch",
    "InvalidFilters",
    "ReaderRequired",
    "SearchAnswer",
    "SearchScope",
    "UnknownCollections",
    "UnknownReader",
    "collection_scope",
    "resolve_scope",
    "search",
    "searchable_collections",
]
