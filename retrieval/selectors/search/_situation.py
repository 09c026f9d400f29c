"""A paragraph's language situation: in the question's language, or in another one.

A multilingual model scores a question and its answer lower across languages than within one (and its unrelated
pairs lower too), and the keyword side across languages matches mostly names, numbers and shared words: so the
floor (EmbeddingModel.floor_for) and the fusion weights (_fusion.cross_language_weights) are chosen per situation.
"""

from __future__ import annotations

from ingestion.languages import normalise

SAME_LANGUAGE = "same_language"
CROSS_LANGUAGE = "cross_language"


def cross_language(question_language: str, paragraph_language: str) -> bool:
    """Is this paragraph in another language than the question? Only when both are known and differ.

    An undetected question (or paragraph) counts as the same language: its floor is never looser by accident.
    Labels are compared as kbsite writes them, so Serbian, Croatian and Bosnian (sr, hr, bs, sh) are one."""
    asked, written = normalise(question_language), normalise(paragraph_language)
    return bool(asked and written and asked != written)


def situation(question_language: str, paragraph_language: str) -> str:
    return CROSS_LANGUAGE if cross_language(question_language, paragraph_language) else SAME_LANGUAGE
