"""The golden questions pages: add and edit through the service's checks, import, export, evaluate, read back."""

from __future__ import annotations

import io
import json
import uuid

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from accounts.models import Membership, Role
from collections_app.services.collections import collection_create
from retrieval.models import Evaluation, GoldenQuestion
from tests.retrieval.services.golden.corpus import document, paragraph

ADD = "admin:retrieval_goldenquestion_add"


def test_an_editor_adds_a_golden_question_naming_documents_by_file_name(staff, corpus) -> None:
    answer = staff.post(
        reverse(ADD),
        {"collection": corpus.pk, "question": "What is the daily allowance?", "markers_text": "45 euros\n",
         "documents_text": "travel.html\n", "paragraphs_text": "", "note": ""},
    )  # fmt: skip
    assert answer.status_code == 302, answer.content.decode()[:2000]
    golden = GoldenQuestion.objects.get(collection=corpus)
    assert golden.markers == ["45 euros"] and golden.documents == [document(corpus, "travel.html").pk]
    assert golden.tenant_id == corpus.tenant_id

    page = staff.get(reverse("admin:retrieval_goldenquestion_change", args=[golden.pk])).content.decode()
    assert "travel" in page  # the document shown by its name, not its id


def test_the_form_says_what_is_wrong_beside_the_field(staff, corpus) -> None:
    answer = staff.post(
        reverse(ADD),
        {"collection": corpus.pk, "question": "Lunch?", "markers_text": "", "documents_text": "menu.pdf",
         "paragraphs_text": "", "note": ""},
    )  # fmt: skip
    assert answer.status_code == 200
    assert "names no document of this collection" in answer.content.decode()
    assert not GoldenQuestion.objects.exists()


def test_import_export_and_evaluate_from_the_golden_questions_page(
    staff, corpus, django_capture_on_commit_callbacks
) -> None:
    rack = paragraph(corpus, "covered rack")
    lines = (json.dumps({"question": "Where do I lock my bike?", "paragraphs": [str(rack.pk)]}) + "\n"
             + json.dumps({"question": "Which planet has the most moons?", "control": True}) + "\n")  # fmt: skip
    file = io.BytesIO(lines.encode())
    file.name = "golden.jsonl"
    imported = staff.post(reverse("admin:retrieval_goldenquestion_import"), {"collection": corpus.pk, "jsonl": file})
    assert imported.status_code == 302 and f"collection__id__exact={corpus.pk}" in imported["Location"]
    listed = staff.get(imported["Location"]).content.decode()
    assert "Where do I lock my bike?" in listed and "control: nothing should answer" in listed
    assert f"evaluate/?collection={corpus.pk}" in listed  # the buttons carry the collection along

    exported = staff.get(reverse("admin:retrieval_goldenquestion_export"), {"collection": corpus.pk, "kind": "jsonl"})
    assert [json.loads(line)["question"] for line in exported.content.decode().splitlines()] == [
        "Where do I lock my bike?", "Which planet has the most moons?",
    ]  # fmt: skip

    with django_capture_on_commit_callbacks(execute=True):
        started = staff.post(reverse("admin:retrieval_goldenquestion_evaluate"), {"collection": corpus.pk,
                                                                                   "top_n": 10})  # fmt: skip
    evaluation = Evaluation.objects.get(collection=corpus)
    assert started["Location"] == reverse("admin:retrieval_evaluation_change", args=[evaluation.pk])
    assert evaluation.status == "done"
    page = staff.get(started["Location"]).content.decode()
    assert 'id="evaluation-rows"' in page and "Where do I lock my bike?" in page and "nDCG@10" in page
    assert "controls" in staff.get(reverse("admin:retrieval_evaluation_changelist")).content.decode()


def test_a_viewer_of_the_tenant_sees_no_golden_questions(client, cast, corpus) -> None:
    viewer = User.objects.create_user("vic", password="pw", is_staff=True)
    Membership.objects.create(user=viewer, tenant=cast.tenant, role=Role.VIEWER)
    client.force_login(viewer)
    golden = GoldenQuestion.objects.create(tenant=cast.tenant, collection=corpus, question="Bikes?", markers=["rack"])
    assert client.get(reverse("admin:retrieval_goldenquestion_changelist")).status_code == 403
    assert client.get(reverse("admin:retrieval_goldenquestion_change", args=[golden.pk])).status_code == 403
    assert client.get(reverse("admin:retrieval_goldenquestion_evaluate")).status_code == 403


@pytest.mark.parametrize("changelist", ["retrieval/goldenquestion", "retrieval/evaluation"])
def test_the_lists_cost_the_same_queries_for_two_rows_and_for_six(cast, staff, changelist, django_assert_num_queries):
    def make() -> None:
        collection = collection_create(tenant=cast.tenant, name=f"c-{uuid.uuid4().hex[:8]}")
        GoldenQuestion.objects.create(tenant=cast.tenant, collection=collection, question="Bikes?", markers=["rack"])
        Evaluation.objects.create(tenant=cast.tenant, collection=collection, status="done",
                                  metrics={"hit_at_1": 0.5}, rows=[{"question": "Bikes?"}])  # fmt: skip

    url = f"/admin/{changelist}/"
    for _ in range(2):
        make()
    staff.get(url)  # warm the per-process caches out of the count
    with CaptureQueriesContext(connection) as two:
        assert staff.get(url).status_code == 200
    for _ in range(4):
        make()
    with django_assert_num_queries(len(two.captured_queries)) as six:
        page = staff.get(url)
    assert page.status_code == 200 and page.context["cl"].result_count == 6
    if changelist == "retrieval/evaluation":
        assert not any('"rows"' in q["sql"].split(" FROM ")[0] for q in six.captured_queries)  # never read for a list
