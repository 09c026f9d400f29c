"""Query planning: a compound question is split into at most three focused sub-questions.

Each sub-question then runs through keyword and vector retrieval and fusion on its own (the pipeline's own
stages), and `merge_planned` interleaves their fused lists by rank, so every part of the question keeps its
best paragraphs near the top. Without KB_LLM_URL the stage is skipped and the question runs whole; a planner
that fails or answers nonsense is `failed` and the question runs whole too.

The sub-questions are never written into the trace: it goes to the audit, which keeps no question text
unless KB_AUDIT_QUESTIONS is on.
"""

from __future__ import annotations

import json
import re
import time

from django.conf import settings

from retrieval.llm import LLMFailed, chat, llm_configured, restating_reply_tokens

from ._costs import CallRecord, chat_call, failed_call
from ._stages import Hit
from ._trace import StageFailed, Trace

MAX_QUESTIONS = 3
PROMPT = (
    "You prepare questions for a search engine over a document collection. If the user's question asks about "
    f"several distinct things, split it into at most {MAX_QUESTIONS} short, self-contained questions, one per "
    "thing, each in the language of the original. If it asks about one thing, return it unchanged as the only "
    'question. Reply with JSON only: {"questions": ["...", "..."]}.'
)
MAX_QUESTION_CHARS = 4000
_JSON = re.compile(r"[\[{].*[\]}]", re.S)


def planning_stage(trace: Trace, query: str, calls: list[CallRecord], collection_id: str | None) -> list[str]:
    """The questions to search: the sub-questions the planner found, else the question as asked."""
    if not llm_configured():
        trace.skipped("planning", "no KB_LLM_URL configured: the question is searched as asked")
        return [query]
    if not settings.KB_PLANNING:
        trace.skipped("planning", "planning is turned off (KB_PLANNING): the question is searched as asked")
        return [query]
    model = settings.KB_LLM_MODEL
    try:
        with trace.timed("planning") as counts:
            started = time.perf_counter()
            try:
                # Sub-questions may each repeat the question's context: twice its length.
                reply = chat(
                    messages=[{"role": "system", "content": PROMPT}, {"role": "user", "content": query}],
                    max_tokens=restating_reply_tokens(query, copies=2),
                )
            except LLMFailed as exc:
                calls.append(failed_call("planner", model, collection_id, (time.perf_counter() - started) * 1000))
                raise StageFailed(f"{exc}; the question is searched as asked") from exc
            calls.append(chat_call("planner", reply, collection_id))
            questions = sub_questions(reply.text)
            if not questions:
                raise StageFailed("the planner's answer held no questions; the question is searched as asked")
            counts.update(model=reply.model, questions=len(questions))
    except StageFailed:
        return [query]
    # One question: the planner saw nothing to split, and the question is searched as asked (not reworded).
    return questions if len(questions) > 1 else [query]


def sub_questions(text: str) -> list[str]:
    """The planner's questions: {"questions": [...]} or a bare list; at most MAX_QUESTIONS, no duplicates."""
    found = _JSON.search(text)
    if not found:
        return []
    try:
        value = json.loads(found.group(0))
    except ValueError:
        return []
    if isinstance(value, dict):
        value = value.get("questions")
    if not isinstance(value, list):
        return []
    questions: list[str] = []
    for item in value:
        if isinstance(item, str) and item.strip() and item.strip() not in questions:
            questions.append(item.strip()[:MAX_QUESTION_CHARS])
    return questions[:MAX_QUESTIONS]


def merge_planned(fused_lists: list[list[Hit]]) -> list[Hit]:
    """One ranking from each sub-question's fused list: first of each, then second of each, and so on.

    A paragraph found for several sub-questions keeps its best rank and its best semantic score.
    """
    if len(fused_lists) == 1:
        return fused_lists[0]
    merged: dict[str, Hit] = {}
    for rank in range(max((len(hits) for hits in fused_lists), default=0)):
        for hits in fused_lists:
            if rank >= len(hits):
                continue
            hit = hits[rank]
            kept = merged.setdefault(hit.chunk_id, hit)
            if kept is not hit and (hit.semantic or 0) > (kept.semantic or 0):
                kept.semantic = hit.semantic
    return list(merged.values())
