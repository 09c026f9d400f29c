"""Translation: a question asked in another language than the searched collections' is translated into theirs.

Keyword retrieval matches words, so an English question cannot meet a Macedonian paragraph's words; the
vector stage already crosses languages (the embedding model is multilingual) and is not repeated. Each
question (or planned sub-question) is translated through KB_LLM_URL into every one of the collections'
languages (pinned, else measured) it is not written in (the project's labeller), one chat call per language,
and the keyword stage runs on every translation. So a collection of English and German paragraphs asked in
German gets the question in English too: its English paragraphs are met by their own words.

The trace lists each translation by its target language and status, never its text (the trace is stored in
the search audit, which keeps no question text unless KB_AUDIT_QUESTIONS is on). Without the endpoint the
stage is skipped and cross-language retrieval rests on the embedding alone; a translation that fails or
times out is `failed` with the reason and the question is searched untranslated.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from django.conf import settings

from collections_app.models import Collection
from collections_app.selectors.languages import collection_languages
from ingestion.languages import language_name, normalise
from retrieval.llm import ChatReply, LLMFailed, chat, llm_configured, restating_reply_tokens

from ._costs import CallRecord, chat_call, failed_call
from ._trace import Trace

STAGE = "translation"
SAME_LANGUAGE = "question in the collection's language"
# Target languages translated into for one question, at most (a collection measures at most four; a pin or
# several collections may name more: the first ones, in the collections' order, are kept).
MAX_TARGETS = 4
MAX_TRANSLATION_CHARS = 4000
PROMPT = (
    "You translate questions for a search engine. Translate the user's question into {name}. Keep names, "
    "numbers, codes and quoted terms unchanged. Reply with the translation only: no quotes, no explanation."
)


@dataclass
class Translations:
    """What one search knows about languages, shared by its passes (a retry translates nothing again)."""

    question_language: str  # the question's label, "" when undetected
    collection_languages: list[str] | None = None  # read only when a translation could run
    done: dict[tuple[str, str], str] = field(default_factory=dict)  # (question, language) -> translation
    # (question, language) -> why it failed: a retry pass does not ask the endpoint again.
    failures: dict[tuple[str, str], str] = field(default_factory=dict)

    def targets(self, collections: Sequence[Collection]) -> list[str]:
        if self.collection_languages is None:
            languages: list[str] = []
            for collection in collections:
                for code in collection_languages(collection):
                    if normalise(code) not in languages:
                        languages.append(normalise(code))
            self.collection_languages = languages
        return [code for code in self.collection_languages if code != self.question_language]


def translation_stage(
    trace: Trace,
    *,
    question: str,
    translations: Translations,
    collections: Sequence[Collection],
    calls: list[CallRecord],
    keyword_off: str = "",
) -> dict[str, str]:
    """The question in each collection language it is not written in: {language: text} (those that ran)."""
    asked_in = {"question_language": translations.question_language or "unknown"}
    if keyword_off:
        trace.skipped(STAGE, f"{keyword_off}: no keyword retrieval to translate for", **asked_in)
        return {}
    if not llm_configured():
        trace.skipped(
            STAGE,
            "no KB_LLM_URL configured: keywords are searched as asked; the multilingual embedding crosses languages",
            **asked_in,
        )
        return {}
    if not translations.question_language:
        trace.skipped(STAGE, "the question's language could not be detected: it is searched as asked", **asked_in)
        return {}
    targets = translations.targets(collections)
    known = {**asked_in, "collection_languages": translations.collection_languages}
    if not translations.collection_languages:
        trace.skipped(STAGE, "the collections have no language yet (no paragraphs, nothing pinned)", **known)
        return {}
    if not targets:
        trace.skipped(STAGE, SAME_LANGUAGE, **known)
        return {}
    dropped = targets[MAX_TARGETS:]
    targets = targets[:MAX_TARGETS]
    collection_id = str(collections[0].pk) if len(collections) == 1 else None
    started = time.perf_counter()
    missing = [code for code in targets if (question, code) not in translations.done | translations.failures]
    outcomes = _translate_all(question, missing, collection_id, calls)
    listed: list[dict[str, object]] = []
    for code in targets:
        key = (question, code)
        if code in outcomes:  # asked now (not in an earlier pass of this search)
            text, failure = outcomes[code]
            if text:
                translations.done[key] = text
            else:
                translations.failures[key] = failure
        if key in translations.done:
            listed.append({"language": code, "status": "ran"})
        else:
            listed.append({"language": code, "status": "failed", "reason": translations.failures[key]})
    counts: dict[str, object] = {**known, "model": settings.KB_LLM_MODEL, "translations": listed}
    if dropped:
        counts["not_translated"] = dropped
    ms = (time.perf_counter() - started) * 1000
    ran = {code: translations.done[(question, code)] for code in targets if (question, code) in translations.done}
    if not ran:
        reasons = sorted({str(entry.get("reason")) for entry in listed})
        trace.failed(STAGE, f"{'; '.join(reasons)}; keywords are searched as asked", ms)
        trace.stages[-1].counts = counts
        return {}
    trace.ran(STAGE, **counts)
    trace.stages[-1].ms = ms
    return ran


def _translate_all(
    question: str, targets: list[str], collection_id: str | None, calls: list[CallRecord]
) -> dict[str, tuple[str, str]]:
    """(translation, "") or ("", why it failed) per target; several languages are asked at the same time."""
    if not targets:
        return {}
    with ThreadPoolExecutor(max_workers=len(targets)) as pool:
        replies = dict(zip(targets, pool.map(lambda code: _translate(question, code), targets), strict=True))
    outcomes: dict[str, tuple[str, str]] = {}
    for code in targets:  # recorded in the targets' order, whatever order the calls finished in
        reply, failure, ms = replies[code]
        if reply is None:
            calls.append(failed_call("translator", settings.KB_LLM_MODEL, collection_id, ms))
            outcomes[code] = ("", failure)
            continue
        calls.append(chat_call("translator", reply, collection_id))
        text = translation_text(reply.text)
        outcomes[code] = (text, "" if text else "the translator's answer was empty")
    return outcomes


def _translate(question: str, code: str) -> tuple[ChatReply | None, str, float]:
    started = time.perf_counter()
    prompt = PROMPT.format(name=language_name(code))
    try:
        reply = chat(
            messages=[{"role": "system", "content": prompt}, {"role": "user", "content": question}],
            max_tokens=restating_reply_tokens(question),
        )
    except LLMFailed as exc:
        return None, str(exc), (time.perf_counter() - started) * 1000
    return reply, "", reply.ms


def translation_text(text: str) -> str:
    """The translation a chat model answered: trimmed, one pair of surrounding quotes dropped, bounded."""
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'«»„“”":
        text = text[1:-1].strip()
    return text[:MAX_TRANSLATION_CHARS]
