"""A client for a cross-encoder behind KB_RERANK_URL, speaking the `/rerank` protocol.

Request: {"query": ..., "texts": [...], "documents": [...], "top_n": n} — `texts` for text-embeddings-inference,
`documents` and `top_n` for Cohere-style servers; each ignores the other's fields. Answer: a list of
{"index", "score"} (text-embeddings-inference) or {"results": [{"index", "relevance_score"}]} (Cohere-style).
"""

from __future__ import annotations

from typing import Any

import httpx


class RerankFailed(Exception):
    """The reranker did not answer usefully; the message says why, for the trace (never the question)."""


def rerank_scores(*, url: str, query: str, texts: list[str], top_n: int, timeout: float) -> dict[int, float]:
    """Score each text against the query: {index into texts: relevance}. Raises RerankFailed."""
    if not texts:
        return {}
    body = {"query": query, "texts": texts, "documents": texts, "top_n": min(top_n, len(texts))}
    try:
        response = httpx.post(url, json=body, timeout=timeout)
    except httpx.TimeoutException:
        raise RerankFailed(f"the reranker did not answer within {timeout:g} s") from None
    except httpx.HTTPError as exc:
        raise RerankFailed(f"the reranker could not be reached ({type(exc).__name__})") from None
    if response.status_code != 200:
        raise RerankFailed(f"the reranker answered HTTP {response.status_code}")
    try:
        return _scores(response.json(), len(texts))
    except (ValueError, KeyError, TypeError):
        raise RerankFailed("the reranker's answer is not a /rerank answer") from None


def _scores(answer: Any, count: int) -> dict[int, float]:
    items = answer["results"] if isinstance(answer, dict) else answer
    scores: dict[int, float] = {}
    for item in items:
        index = int(item["index"])
        if not 0 <= index < count:
            raise ValueError("index out of range")
        scores[index] = float(item["relevance_score"] if "relevance_score" in item else item["score"])
    return scores
