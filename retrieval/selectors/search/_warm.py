"""What a web process loads before its first search, so the first search costs what the tenth does.

The default embedding model (weights read and its engine started, ~1-3 s), run once through the same pool
thread the pipeline embeds questions in, and the question-language detector for the Latin script (lingua's
models, loaded on first use). Other scripts' detector models (Cyrillic, ~145 MB) still load on the first
question written in them: a process that never meets one never pays for them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ingestion import detect_language

from ._query_embedding import start_query_embeddings

WARM_UP_QUESTION = "How many days of annual leave may be carried over to next year?"


@dataclass(frozen=True)
class WarmUp:
    alias: str
    embedding_ms: float
    language_ms: float


def search_warm_up(*, alias: str) -> WarmUp:
    """Load what a search needs first: `alias`'s model (embedding one question in the pipeline's pool) and
    the question-language detector. Raises what loading the model raises (EmbeddingUnavailable, ...)."""
    started = time.perf_counter()
    start_query_embeddings([alias], WARM_UP_QUESTION)[alias].result()
    embedded = time.perf_counter()
    detect_language(WARM_UP_QUESTION, default="")
    return WarmUp(alias, (embedded - started) * 1000, (time.perf_counter() - embedded) * 1000)
