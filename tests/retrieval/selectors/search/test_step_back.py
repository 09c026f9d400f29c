"""Step-back: a broad question is also searched as the more general question a chat model writes, before anything
is embedded; both are retrieved and fused. Against a local stand-in of the chat endpoint (tests/standins.py),
over a real document and the real default embedding model.

With a stand-in the stage can be tested, not measured: what a real model's step-back questions do to nDCG is
the closing note's business (docs/DECISIONS.md, "Step-back").
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from collections_app.services.collections import collection_create
from retrieval.models import ModelCall
from retrieval.selectors.search._step_back import PROMPT, broad_rule
from tests.files.documents import html_bytes
from tests.standins import Late, Reply, Request, serve

KNOWLEDGE = [
    (1, "Working here", ""),
    (2, "Onboarding", "Onboarding starts on day one: a laptop, a badge and a buddy are waiting at reception."),
    (2, "Probation", "Every new hire's first six months are a probation period, reviewed by their team lead."),
    (2, "Parking", "Staff cars must be left in the underground garage beneath building B, level minus two."),
    (2, "Canteen", "Lunch is served between noon and two o'clock; vegetarian dishes are marked green."),
    (2, "Holidays", "Every employee has twenty-five days of paid annual leave, booked through the portal."),
]
BROAD = "how does onboarding work?"
STEP_BACK = "what happens during the probation period of new employees?"
TOKENS_IN, TOKENS_OUT = 211, 13


@dataclass
class Chat:
    """The stand-in's answer to a step-back request: `ok` (the question), `specific` (null), `down` (503),
    `slow` (past the timeout) or `babble` (no JSON)."""

    mode: str = "ok"
    requests: list[Request] = field(default_factory=list)

    def answer(self, request: Request) -> Any:
        if request.system != PROMPT:
            return request.user  # any other use of the endpoint (a translator): echoed
        return {
            "ok": json.dumps({"step_back": STEP_BACK}),
            "specific": '{"step_back": null}',
            "down": Reply(status=503),
            "slow": Late(json.dumps({"step_back": STEP_BACK}), 1.5),
            "babble": "Sure! Broader questions help.",
        }[self.mode]

    def step_backs(self) -> list[Request]:
        return [r for r in self.requests if "messages" in r.body and r.system == PROMPT]


@pytest.fixture
def chat(settings) -> Iterator[Chat]:
    chat = Chat()
    with serve(chat=chat.answer, usage=(TOKENS_IN, TOKENS_OUT)) as server:
        chat.requests = server.requests
        settings.KB_LLM_URL = server.url + "/v1"
        settings.KB_LLM_MODEL = "stepper-7b"
        settings.KB_LLM_TIMEOUT = 0.5
        settings.KB_PLANNING = False  # the planner has tests of its own; here only step-back asks the model
        yield chat


@pytest.fixture
def office(cast, upload):
    # No floor and a low threshold: every candidate is kept and supported, so no retry reorders what is fused.
    collection = collection_create(tenant=cast.tenant, name="office", min_score=0, score_threshold=0.5)
    assert upload(cast.editor, collection, "office.html", html_bytes(KNOWLEDGE)).status_code == 202
    collection.step_back = True
    collection.save(update_fields=["step_back"])
    return collection


def ask(client, **body) -> dict[str, Any]:
    reply = client.post("/api/search", {"around": 0, "top_n": 4, **body}, format="json")
    assert reply.status_code == 200, reply.content
    return reply.json()


def stage(answer: dict[str, Any], name: str = "step back") -> dict[str, Any]:
    found = [s for s in answer["trace"] if s["stage"] == name]
    assert len(found) == 1, [s["stage"] for s in answer["trace"]]
    return found[0]


def ids(answer: dict[str, Any]) -> list[str]:
    return [r["chunk_id"] for r in answer["results"]]


def test_a_broad_question_is_searched_beside_its_step_back_question_and_the_two_lists_are_fused_by_rank(
    cast, office, chat
) -> None:
    answer = ask(cast.viewer, query=BROAD)

    step = stage(answer)
    assert step["status"] == "ran" and step["counts"]["rewritten"] is True
    assert step["counts"]["model"] == "stepper-7b"
    assert [r.user for r in chat.step_backs()] == [BROAD]  # asked about the question as asked, once
    # Each question ran retrieval and fusion of its own, numbered.
    assert [s["counts"]["sub_question"] for s in answer["trace"] if s["stage"] == "keyword retrieval"] == [1, 2]
    # The fused order: the question's best first, then the step-back question's best.
    office.step_back = False
    office.save(update_fields=["step_back"])
    as_asked, general = ask(cast.viewer, query=BROAD), ask(cast.viewer, query=STEP_BACK)
    assert ids(as_asked)[0] != ids(general)[0], "the test needs two questions with different best paragraphs"
    assert ids(answer)[:2] == [ids(as_asked)[0], ids(general)[0]]
    assert "probation" in answer["results"][1]["text"]
    assert stage(as_asked)["status"] == "skipped"


def test_the_step_back_question_stays_out_of_the_trace_unless_questions_are_audited(
    cast, office, chat, settings
) -> None:
    quiet = ask(cast.viewer, query=BROAD)
    settings.KB_AUDIT_QUESTIONS = True
    audited = ask(cast.viewer, query=BROAD)

    assert STEP_BACK not in json.dumps(quiet)
    assert "question" not in stage(quiet)["counts"]
    assert stage(audited)["counts"]["question"] == STEP_BACK


def test_the_step_back_call_is_charged_to_the_agent_the_search_is_for(cast, office, chat) -> None:
    answer = ask(cast.viewer, query=BROAD, on_behalf_of="support-bot")

    call = ModelCall.objects.get(search_id=answer["search_id"], kind="step_back")
    assert (call.agent, call.model, call.tokens_in, call.tokens_out, call.ok) == (
        cast.agent, "stepper-7b", TOKENS_IN, TOKENS_OUT, True
    )  # fmt: skip
    assert ask(cast.viewer, query=BROAD)["search_id"]  # without on_behalf_of nothing is charged
    assert ModelCall.objects.filter(kind="step_back").count() == 1


@pytest.mark.parametrize(
    ("question", "why"),
    [
        ("where must staff cars be left in building B?", "no how/why/overview shape"),
        ("how does the Paris office handle onboarding?", "names something specific"),
        ("how does onboarding work in 2026?", "names something specific"),
        ("how do onboarding laptops badges buddies reception desks work?", "content words"),
    ],
)
def test_a_question_the_rule_finds_specific_is_searched_as_asked_without_asking_the_model(
    cast, office, chat, question, why
) -> None:
    answer = ask(cast.viewer, query=question)

    step = stage(answer)
    assert step["status"] == "skipped" and why in step["reason"]
    assert chat.step_backs() == []


def test_step_back_is_skipped_when_the_collection_has_it_off_or_no_chat_model_is_configured(
    cast, office, chat, settings
) -> None:
    office.step_back = False
    office.save(update_fields=["step_back"])
    off = ask(cast.viewer, query=BROAD)
    office.step_back = True
    office.save(update_fields=["step_back"])
    settings.KB_LLM_URL = ""
    unconfigured = ask(cast.viewer, query=BROAD)

    assert stage(off)["status"] == "skipped" and "step_back" in stage(off)["reason"]
    assert stage(unconfigured)["status"] == "skipped" and "KB_LLM_URL" in stage(unconfigured)["reason"]
    assert chat.step_backs() == []
    assert ids(off) == ids(unconfigured)


def test_a_model_that_finds_the_question_specific_leaves_it_as_asked(cast, office, chat) -> None:
    chat.mode = "specific"
    answer = ask(cast.viewer, query=BROAD)

    assert stage(answer)["status"] == "ran" and stage(answer)["counts"]["rewritten"] is False
    assert [s["stage"] for s in answer["trace"]].count("keyword retrieval") == 1


@pytest.mark.parametrize(
    ("mode", "says"),
    [("down", "503"), ("slow", "did not answer within"), ("babble", "held no step-back question")],
)
def test_a_failing_model_leaves_the_question_as_asked_and_says_why(cast, office, chat, mode, says) -> None:
    office.step_back = False
    office.save(update_fields=["step_back"])
    as_asked = ask(cast.viewer, query=BROAD)
    office.step_back = True
    office.save(update_fields=["step_back"])
    chat.mode = mode

    answer = ask(cast.viewer, query=BROAD, on_behalf_of="support-bot")

    step = stage(answer)
    assert step["status"] == "failed" and says in step["reason"] and "searched as asked" in step["reason"]
    assert ids(answer) == ids(as_asked)  # the identity fallback: the same answer as without step-back
    call = ModelCall.objects.get(search_id=answer["search_id"], kind="step_back")
    assert call.ok is (mode == "babble")  # the babbling model answered (and billed); the others did not


def test_a_collection_turns_step_back_on_through_the_api(cast, collection) -> None:
    url = f"/api/manage/collections/{collection.pk}"
    assert cast.viewer.get(url).json()["step_back"] is False

    changed = cast.editor.patch(url, {"step_back": True}, format="json")

    assert changed.status_code == 200 and changed.json()["step_back"] is True


@pytest.mark.parametrize(
    ("question", "broad"),
    [
        ("how does onboarding work?", True),
        ("Why is there a probation period?", True),
        ("give me an overview of travel expenses", True),
        ("what is the refund policy?", True),
        ("how many days of annual leave do I get?", False),  # no broad shape
        ("how does SAP handle invoices?", False),  # a name
        ('what is "net 30"?', False),  # a quotation and a number
        ("explain the differences between the pension funds health insurance dental plans vision cover", False),
    ],
)
def test_the_broad_rule(question, broad) -> None:
    assert broad_rule(question).broad is broad
