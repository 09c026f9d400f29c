"""A web worker's start: everything its first search would otherwise load is loaded before it takes a request.

Called by gunicorn's `post_worker_init` hook (kbsite/gunicorn_conf.py), in each worker after Django is set
up and before the worker accepts a connection; no manage.py command and no test runs it. Measured by
bench/first_search.py: the first search in a fresh web process took 1.8-4.5 s (the URLconf and the MCP
library it imports, the embedding model, the question-language detector) against ~50 ms for the tenth.
"""

from __future__ import annotations

import logging
import time

from django.conf import settings

logger = logging.getLogger("kbsite.web")


def web_worker_warm_up() -> bool:
    """Import the URLconf and load the default embedding model and the question-language detector; say so in one
    log line (names and times, never a path). False when KB_WARM_EMBEDDING is off or loading failed: the
    worker serves anyway, and its first search loads what it needs."""
    if not settings.KB_WARM_EMBEDDING:
        logger.info("web worker: warm-up off (KB_WARM_EMBEDDING): the first search loads the embedding model")
        return False
    from django.urls import get_resolver

    from retrieval.selectors.search import search_warm_up

    started = time.perf_counter()
    get_resolver().url_patterns  # noqa: B018 (the import of every view, the MCP server's included)
    urls_ms = (time.perf_counter() - started) * 1000
    try:
        warm = search_warm_up(alias=settings.KB_DEFAULT_EMBEDDING)
    except Exception as exc:  # a missing model must not stop the web server: its searches say what is wrong
        logger.warning(
            "web worker: the embedding model %s could not be loaded at start (%s); the first search tries again",
            settings.KB_DEFAULT_EMBEDDING,
            type(exc).__name__,
        )
        return False
    logger.info(
        "web worker ready in %.1f s: embedding model %s loaded (%.0f ms), question language detector (%.0f ms), "
        "URLs (%.0f ms)",
        (time.perf_counter() - started),
        warm.alias,
        warm.embedding_ms,
        warm.language_ms,
        urls_ms,
    )
    return True
