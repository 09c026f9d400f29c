"""Step-back: a broad question is also searched as a more general one, before anything is embedded.

"How does onboarding work?" matches the paragraph that names onboarding, and misses the policy that explains
it under other words; the step-back question ("What is the company's onboarding process and policy?") finds
that one. Both questions then run through retrieval and fusion on their own, and their fused lists are merged
by rank as planned sub-questions are (`merge_planned`): the question as asked keeps the first place.

Gated twice: a cheap rule first (an English how/why/overview shape, few content words, nothing that names a
specific thing: no capitalised word past the first, no digit, no quotation), then the chat model, which may
answer that the question is specific after all. Without KB_LLM_URL, or with step-back off in every searched
collection (Collection.step_back, off by default until measured), the stage is skipped. A model that fails,
times out or answers nothing readable leaves the question as asked (`failed`, the reason in the trace).

The step-back question is written into the trace only when KB_AUDIT_QUESTIONS is on, as the question is.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass

from django.conf import settings

from collections_app.models import Collection
from retrieval.llm import LLMFailed, chat, llm_configured, restating_reply_tokens

from ._costs import CallRecord, chat_call, failed_call
from ._trace import StageFailed, Trace

STAGE = "step back"
MAX_CONTENT_WORDS = 5
MAX_STEP_BACK_CHARS = 500
PROMPT = (
    "You prepare questions for a search engine over a document collection. Given a broad question, write one "
    "step-back question: more general, naming the underlying topic, process or principle the answer would be "
    "filed under, in the language of the original. If the question is already specific (it names a particular "
    'thing, place, person, number or date), do not rewrite it. Reply with JSON only: {"step_back": "..."}, or '
    '{"step_back": null} when it is specific.'
)
# The shapes of a broad question (English: other languages go to the model only through their collections'
# own rule, which is this one; say so in DECISIONS).
_BROAD_SHAPE = re.compile(
    r"^\s*(how (does|do|is|are|can|should|would)|why|what (is|are)|explain|describe|overview|tell me about)\b"
    r"|\b(overview|in general|basics|the big picture)\b",
    re.I,
)
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.U)
_QUOTED = re.compile(r"[\"“”«»„]")
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "of",
        "to",
        "in",
        "on",
        "at",
        "for",
        "with",
        "by",
        "from",
        "about",
        "as",
        "into",
        "over",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "do",
        "does",
        "did",
        "how",
        "why",
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "when",
        "where",
        "can",
        "could",
        "should",
        "would",
        "will",
        "may",
        "might",
        "must",
        "i",
        "we",
        "you",
        "they",
        "it",
        "its",
        "our",
        "your",
        "their",
        "my",
        "me",
        "us",
        "them",
        "this",
        "that",
        "these",
        "those",
        "there",
        "here",
        "tell",
        "explain",
        "describe",
        "overview",
        "work",
        "works",
        "working",
        "general",
        "basics",
        "basic",
        "big",
        "picture",
    ]
)


@dataclass(frozen=True)
class Broad:
    """What the rule saw: broad when the shape matches, content words are few and nothing specific is named."""

    shape: bool
    content_words: int
    names_something: bool

    @property
    def broad(self) -> bool:
        return self.shape and self.content_words <= MAX_CONTENT_WORDS and not self.names_something

    def why_not(self) -> str:
        if not self.shape:
            return "not a broad question (no how/why/overview shape): searched as asked"
        if self.names_something:
            return "the question names something specific (a name, a number or a quotation): searched as asked"
        return f"the question has {self.content_words} content words (broad: at most {MAX_CONTENT_WORDS})"


def broad_rule(question: str) -> Broad:
    words = _WORD.findall(question)
    content = [w for w in words if w.casefold() not in STOPWORDS]
    capitalised_later = any(w[:1].isupper() for w in words[1:])
    names = capitalised_later or any(ch.isdigit() for ch in question) or bool(_QUOTED.search(question))
    return Broad(bool(_BROAD_SHAPE.search(question)), len(content), names)


def step_back_stage(
    trace: Trace, query: str, collections: list[Collection], calls: list[CallRecord], collection_id: str | None
) -> str | None:
    """The step-back question to search beside the question as asked, or None (the stage says why)."""
    if not llm_configured():
        trace.skipped(STAGE, "no KB_LLM_URL configured: the question is searched as asked")
        return None
    if not any(c.step_back for c in collections):
        trace.skipped(STAGE, "step-back is off in the searched collections (step_back): searched as asked")
        return None
    rule = broad_rule(query)
    if not rule.broad:
        trace.skipped(STAGE, rule.why_not())
        return None
    model = settings.KB_LLM_MODEL
    try:
        with trace.timed(STAGE) as counts:
            counts.update(content_words=rule.content_words)
            started = time.perf_counter()
            try:
                reply = chat(
                    messages=[{"role": "system", "content": PROMPT}, {"role": "user", "content": query}],
                    max_tokens=restating_reply_tokens(query),
                )
            except LLMFailed as exc:
                calls.append(failed_call("step_back", model, collection_id, (time.perf_counter() - started) * 1000))
                raise StageFailed(f"{exc}; the question is searched as asked") from exc
            calls.append(chat_call("step_back", reply, collection_id))
            counts["model"] = reply.model
            readable, question = step_back_question(reply.text)
            if not readable:
                raise StageFailed("the model's answer held no step-back question; the question is searched as asked")
            if question is None or question.casefold() == query.strip().casefold():
                counts["rewritten"] = False  # the model found it specific: nothing to add
                return None
            counts["rewritten"] = True
            if settings.KB_AUDIT_QUESTIONS:
                counts["question"] = question
    except StageFailed:
        return None
    return question


def step_back_question(text: str) -> tuple[bool, str | None]:
    """(readable, the question): {"step_back": "..."} or {"step_back": null}; anything else is unreadable."""
    found = re.search(r"\{.*\}", text, re.S)
    if not found:
        return False, None
    try:
        value = json.loads(found.group(0))
    except ValueError:
        return False, None
    if not isinstance(value, dict) or "step_back" not in value:
        return False, None
    question = value["step_back"]
    if question is None:
        return True, None
    if not isinstance(question, str) or not question.strip() or "\x00" in question:
        return False, None
    return True, question.strip()[:MAX_STEP_BACK_CHARS]
