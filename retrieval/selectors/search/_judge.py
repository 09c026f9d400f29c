"""The judge: after retrieval, a chat model says whether the results answer the question.

Three answers, never collapsed (ARCHITECTURE.md, contract 2):
- None: this search could not refuse — no searched collection has a judge, no KB_LLM_URL, nothing to judge,
  or the judge failed or timed out (the trace says which);
- False: the judge approved the results;
- True: the judge said nothing here answers: the pipeline hands back no results (reason `judge_refused`).
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

from django.conf import settings

from collections_app.models import Collection
from retrieval.llm import LLMFailed, chat, llm_configured
from retrieval.models import CollectionJudge

from ._costs import CallRecord, chat_call, failed_call
from ._trace import StageFailed, Trace

DEFAULT_PROMPT = (
    "You check a search engine's results before they reach the person who asked. You are given a question and "
    "numbered paragraphs. Decide whether the paragraphs, taken together, answer the question or a substantial "
    "part of it. Paragraphs that are merely on the same topic do not answer it. "
    'Reply with JSON only: {"answers": true} or {"answers": false}.'
)
# Each paragraph is cut to this many characters in the judge's prompt (a window may stitch several).
RESULT_CHARS = 1500
_JSON_OBJECT = re.compile(r"\{.*\}", re.S)


def collection_judge(collections: list[Collection]) -> CollectionJudge | None:
    """The judge of a search: the first (by name) enabled judge among the searched collections, if any."""
    return (
        CollectionJudge.objects.filter(collection__in=collections, enabled=True)
        .select_related("collection")
        .order_by("collection__name")
        .first()
    )


def judge_stage(
    trace: Trace, collections: list[Collection], query: str, results: list[dict[str, Any]], calls: list[CallRecord]
) -> bool | None:
    """The `refused` of a search: None (could not refuse, the trace says why), False (approved), True."""
    judge = collection_judge(collections)
    if judge is None:
        trace.skipped("judge", "no searched collection has a judge: this search cannot refuse (refused is null)")
        return None
    name = judge.collection.name
    if not llm_configured():
        trace.skipped("judge", f"collection {name!r} has a judge but no KB_LLM_URL is configured (refused is null)")
        return None
    if not results:
        trace.skipped("judge", "no results to judge (refused is null)")
        return None
    model = judge.model or settings.KB_LLM_MODEL
    timeout = judge.timeout if judge.timeout is not None else settings.KB_LLM_TIMEOUT
    collection_id = str(judge.collection_id)
    try:
        with trace.timed("judge") as counts:
            started = time.perf_counter()
            try:
                reply = chat(messages=_messages(judge.prompt or DEFAULT_PROMPT, query, results), model=model,
                             timeout=timeout, max_tokens=20)  # fmt: skip
            except LLMFailed as exc:
                calls.append(failed_call("judge", model, collection_id, (time.perf_counter() - started) * 1000))
                raise StageFailed(f"{exc}: this search could not refuse (refused is null)") from exc
            calls.append(chat_call("judge", reply, collection_id))
            answers = verdict(reply.text)
            if answers is None:
                raise StageFailed(
                    "the judge answered neither yes nor no: this search could not refuse (refused is null)"
                )
            counts.update(collection=name, model=reply.model, results=len(results),
                          verdict="approved" if answers else "refused")  # fmt: skip
    except StageFailed:
        return None
    return not answers


def verdict(text: str) -> bool | None:
    """Does the judge's reply say the results answer? None when it says neither."""
    found = _JSON_OBJECT.search(text)
    if found:
        try:
            value = json.loads(found.group(0)).get("answers")
        except (ValueError, AttributeError):
            value = None
        if isinstance(value, bool):
            return value
    word = text.strip().strip(".!\"'`").lower()
    if word in {"yes", "true", "answers"}:
        return True
    if word in {"no", "false", "refuse"}:
        return False
    return None


def _messages(prompt: str, query: str, results: list[dict[str, Any]]) -> list[dict[str, str]]:
    paragraphs = "\n\n".join(f"[{i}] {r['text'][:RESULT_CHARS]}" for i, r in enumerate(results, start=1))
    return [
        {"role": "system", "content": prompt},
        {"role": "user", "content": f"Question: {query}\n\nParagraphs:\n{paragraphs}"},
    ]
