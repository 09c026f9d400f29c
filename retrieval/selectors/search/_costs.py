"""What a search's model calls cost, gathered while it runs; written only when it is on behalf of an agent.

A record names the kind of call, the model, the collection it served, tokens and duration: never the
question, a paragraph or a label.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from embedding import get_model
from retrieval.llm import ChatReply


@dataclass(frozen=True)
class CallRecord:
    kind: str  # judge, planner, translator, rerank, embedding (ModelCallKind)
    model: str
    collection_id: str | None  # None: the call served several collections
    tokens_in: int | None
    tokens_out: int | None
    ms: float
    ok: bool = True


def chat_call(kind: str, reply: ChatReply, collection_id: str | None) -> CallRecord:
    return CallRecord(kind, reply.model, collection_id, reply.tokens_in, reply.tokens_out, reply.ms)


def failed_call(kind: str, model: str, collection_id: str | None, ms: float) -> CallRecord:
    # A call that timed out or failed may still be billed by the endpoint: it is recorded, tokens unknown.
    return CallRecord(kind, model, collection_id, None, None, ms, ok=False)


def rerank_call(collection_ids: list[str], started: float, ok: bool = True) -> CallRecord:
    """A call to KB_RERANK_URL: the /rerank protocol reports no model and no usage, so neither is recorded."""
    collection_id = collection_ids[0] if len(collection_ids) == 1 else None
    return CallRecord("rerank", "reranker", collection_id, None, None, (time.perf_counter() - started) * 1000, ok)


def embedding_calls(alias: str, collection_ids: list[str], ms: float) -> list[CallRecord]:
    """A question embedded by a remote endpoint (KB_EMBED_URL) is a model call; one embedded here is not.

    `ms`: the call's own time (it runs beside keyword retrieval, so not the time until it was collected)."""
    model = get_model(alias)
    if model.provider != "openai":
        return []
    collection_id = collection_ids[0] if len(collection_ids) == 1 else None
    return [CallRecord("embedding", model.model_id, collection_id, None, None, ms)]
