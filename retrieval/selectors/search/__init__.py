"""The search pipeline: one stage per function, each reported in the trace.

    answer = search(scope=..., query=..., top_n=...)

Public API: `search`, `SearchScope`, `SearchAnswer`, `resolve_scope`, `UnknownCollections`, `InvalidFilters`, and
`search_warm_up` (what a web process loads before its first search).

The stages' building blocks are public too, for the bench and for tests that check a stage on its own:
`STAGE_ORDER` (the order every answer lists its stages in), the retrievals (`keyword_retrieve`, `vector_retrieve`,
their `Hit`), the one visibility predicate (`Visibility`, `VISIBLE_SQL`, its reader part `READER_SQL`,
`FROM_VISIBLE`), fusion (`fuse`, `zscore_fusion`, `reciprocal_rank_fusion` and the plain `zscores`,
`zscore_combine`, `rrf_combine`, `ranked`), the floor (`passes_floor`), windows (`build_windows`, `window_split`,
and `stitch`, how a window's paragraphs are joined), the trace
(`Trace`) and how a chat model's reply is read (the judge's `verdict`, the planner's `sub_questions`).
"""

from ._filters import InvalidFilters
from ._fusion import fuse, ranked, reciprocal_rank_fusion, rrf_combine, zscore_combine, zscore_fusion, zscores
from ._judge import verdict
from ._keyword import keyword_retrieve
from ._pipeline import STAGE_ORDER, SearchAnswer, search
from ._planning import sub_questions
from ._render import stitch
from ._scope import (
    ReaderRequired,
    SearchScope,
    UnknownCollections,
    UnknownReader,
    collection_scope,
    registered_reader,
    resolve_scope,
    searchable_collections,
)
from ._stages import EmbeddingWidthMismatch, Hit, passes_floor, vector_retrieve
from ._trace import Trace
from ._visibility import FROM_VISIBLE, READER_SQL, VISIBLE_SQL, Visibility
from ._warm import WarmUp, search_warm_up
from ._window import build_windows, window_split

__all__ = [
    "FROM_VISIBLE",
    "READER_SQL",
    "STAGE_ORDER",
    "VISIBLE_SQL",
    "EmbeddingWidthMismatch",
    "Hit",
    "InvalidFilters",
    "ReaderRequired",
    "SearchAnswer",
    "SearchScope",
    "Trace",
    "UnknownCollections",
    "UnknownReader",
    "Visibility",
    "WarmUp",
    "build_windows",
    "collection_scope",
    "fuse",
    "keyword_retrieve",
    "passes_floor",
    "ranked",
    "reciprocal_rank_fusion",
    "registered_reader",
    "resolve_scope",
    "rrf_combine",
    "search",
    "search_warm_up",
    "searchable_collections",
    "stitch",
    "sub_questions",
    "vector_retrieve",
    "verdict",
    "window_split",
    "zscore_combine",
    "zscore_fusion",
    "zscores",
]
