"""Golden questions kept from "Try a search" ("this answers it", "nothing here should answer"), and a measure
started from the golden questions page, followed and cancelled on its result page."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.contrib.messages import get_messages
from django.urls import reverse

from accounts.models import Membership, Role
from collections_app.models import Chunk
from retrieval.models import GoldenQuestion, Measure
from retrieval.services.golden import golden_question_from_search, marker_from
from tests.retrieval.services.golden.corpus import paragraph

FROM_SEARCH = "admin:retrieval_goldenquestion_from_search"
QUESTION = "Where do staff park their cars?"


def search_page(client, collection, q: str = QUESTION) -> str:
    url = reverse("admin:retrieval_searchevent_try_search", args=[collection.pk])
    return client.get(url, {"q": q}).content.decode()


def keep(client, collection, *, kind: str, paragraph_id: str = "", q: str = QUESTION):
    back = reverse("admin:retrieval_searchevent_try_search", args=[collection.pk]) + "?q=x"
    return client.post(reverse(FROM_SEARCH), {"collection": collection.pk, "q": q, "kind": kind,
                                              "paragraph": paragraph_id, "next": back})  # fmt: skip


def shown(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


def test_this_answers_it_keeps_the_question_with_the_results_paragraph_and_a_marker_of_its_text(staff, corpus):
    page = search_page(staff, corpus)
    assert page.count("this answers it") >= 1 and page.count("nothing here should answer") == 1
    first = re.search(r'name="paragraph" value="([0-9a-f-]{36})"', page)
    assert first is not None
    kept = keep(staff, corpus, kind="answer", paragraph_id=first.group(1))
    assert kept.status_code == 302 and kept["Location"].endswith(f"/try/{corpus.pk}/?q=x")  # back to the search
    golden = GoldenQuestion.objects.get(collection=corpus)
    cited = Chunk.objects.get(pk=first.group(1))
    assert golden.question == QUESTION and not golden.control
    assert [str(p) for p in golden.paragraphs] == [first.group(1)]
    assert len(golden.markers) == 1 and golden.markers[0].lower() in cited.text.lower()
    assert "Golden question added answered by that paragraph and the marker" in shown(kept)[0]


def test_a_question_held_already_is_said_so_not_a_500(staff, corpus):
    assert keep(staff, corpus, kind="control").status_code == 302
    again = keep(staff, corpus, kind="answer", paragraph_id=str(paragraph(corpus, "underground garage").pk))
    assert again.status_code == 302
    assert "already holds this question" in shown(again)[-1]
    assert GoldenQuestion.objects.get(collection=corpus).control is True


def test_nothing_here_should_answer_keeps_a_control(staff, corpus):
    kept = keep(staff, corpus, kind="control", q="Which volcano erupted in Iceland in 2010?")
    golden = GoldenQuestion.objects.get(collection=corpus)
    assert golden.control and not golden.markers and not golden.paragraphs
    assert "as a control" in shown(kept)[0]


def test_another_collections_paragraph_or_an_unsafe_next_is_refused(staff, corpus, cast):
    from collections_app.services.collections import collection_create

    other = collection_create(tenant=cast.tenant, name="other")
    kept = keep(staff, other, kind="answer", paragraph_id=str(paragraph(corpus, "covered rack").pk))
    assert "is not a paragraph of this collection" in shown(kept)[0]
    assert not GoldenQuestion.objects.exists()
    answer = staff.post(reverse(FROM_SEARCH), {"collection": corpus.pk, "q": "x", "kind": "control",
                                               "next": "https://evil.example/"})  # fmt: skip
    assert answer["Location"].startswith(reverse("admin:retrieval_goldenquestion_changelist"))


@pytest.mark.parametrize("role", [Role.VIEWER, None])
def test_a_viewer_sees_no_buttons_and_cannot_post_them(client, cast, corpus, role):
    user = User.objects.create_user("vic", password="pw", is_staff=True)
    if role is not None:
        Membership.objects.create(user=user, tenant=cast.tenant, role=role)
    client.force_login(user)
    if role is not None:
        page = search_page(client, corpus)
        assert "search-results" in page and "this answers it" not in page and "nothing here should answer" not in page
    assert keep(client, corpus, kind="control").status_code in (403, 404)
    assert not GoldenQuestion.objects.exists()


def test_an_outsiders_collection_is_not_found(staff, cast):
    from collections_app.services.collections import collection_create

    theirs = collection_create(tenant=cast.outsider_tenant, name="theirs")
    assert keep(staff, theirs, kind="control").status_code == 404


def test_the_marker_is_a_phrase_of_the_paragraph_no_other_paragraph_holds(corpus):
    rack = paragraph(corpus, "covered rack")
    marker = marker_from(rack)
    assert marker == "Cyclists can lock their bikes in the covered"  # its first eight words
    golden = golden_question_from_search(collection=corpus, question="Bikes?", paragraph_id=str(rack.pk))
    assert golden.markers == [marker]


def test_measure_starts_from_the_golden_questions_page_and_lands_on_its_result(
    staff, corpus, cast, django_capture_on_commit_callbacks
):
    GoldenQuestion.objects.create(tenant=cast.tenant, collection=corpus, question=QUESTION,
                                  markers=["underground garage beneath building B"])  # fmt: skip
    listed = staff.get(reverse("admin:retrieval_goldenquestion_changelist"), {"collection__id__exact": corpus.pk})
    assert f"measure/?collection={corpus.pk}" in listed.content.decode()
    form = staff.get(reverse("admin:retrieval_goldenquestion_measure"), {"collection": corpus.pk}).content.decode()
    assert "chunkings" in form and "sizes" in form and "around" in form and "hybrid" in form

    bad = staff.post(reverse("admin:retrieval_goldenquestion_measure"),
                     {"collection": corpus.pk, "variants": "around=1\nwindow=3", "top_n": 10})  # fmt: skip
    assert bad.status_code == 200 and "variant 2: window cannot be measured" in bad.content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        variants = 'around=0\n{"around": 1}'  # a line of pairs, a line of JSON
        started = staff.post(reverse("admin:retrieval_goldenquestion_measure"),
                             {"collection": corpus.pk, "variants": variants, "top_n": 10})  # fmt: skip
    measure = Measure.objects.get(collection=corpus)
    assert started["Location"] == reverse("admin:retrieval_measure_change", args=[measure.pk])
    assert measure.status == "done" and [v["settings"]["around"] for v in measure.variants] == [0, 1]
    page = staff.get(started["Location"]).content.decode()
    assert page.count('class="kb-chart"') == 2 and "Apply this variant" in page and "kb-measure-cancel" not in page


def test_a_running_measure_refreshes_shows_its_progress_and_is_cancelled_from_its_page(staff, corpus, cast):
    measure = Measure.objects.create(tenant=cast.tenant, collection=corpus, status="running",
                                     progress={"variant": 1, "variants": 2, "questions_done": 3,
                                               "questions_total": 5})  # fmt: skip
    page = staff.get(reverse("admin:retrieval_measure_change", args=[measure.pk])).content.decode()
    assert 'http-equiv="refresh"' in page and "variant 1 of 2, questions 3 of 5" in page
    assert 'id="kb-measure-cancel"' in page
    cancelled = staff.post(reverse("admin:retrieval_measure_cancel", args=[measure.pk]))
    assert cancelled.status_code == 302 and "stops after" in shown(cancelled)[0]
    measure.refresh_from_db()
    assert measure.cancel_requested


def test_a_second_measure_while_one_runs_is_refused_on_the_form(staff, corpus, cast):
    GoldenQuestion.objects.create(tenant=cast.tenant, collection=corpus, question=QUESTION, markers=["garage"])
    Measure.objects.create(tenant=cast.tenant, collection=corpus, status="running")
    answer = staff.post(reverse("admin:retrieval_goldenquestion_measure"),
                        {"collection": corpus.pk, "preset": "around", "top_n": 10})  # fmt: skip
    assert answer.status_code == 200 and "is being measured already" in answer.content.decode()
    assert Measure.objects.filter(collection=corpus).count() == 1
