"""The search pipeline: one stage per function, each reported in the trace.

    answer = search(scope=..., query=..., top_n=...)

Public API: `search`, `SearchScope`, `SearchAnswer`, `resolve_scope`, `UnknownCollections`.
"""

from ._pipeline import SearchAnswer, search
from ._scope import SearchScope, UnknownCollections, resolve_scope

__all__ = [
    "SearchAnswer",
    "SearchScope",
    "UnknownCollections",
    "resolve_scope",
    "search",
]
