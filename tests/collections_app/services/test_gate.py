"""The golden gate: a re-index that makes the golden questions' answers worse does not replace what searches read;
a neutral one goes through; without golden questions it cannot judge, and says so."""

from __future__ import annotations

import pytest
from django.urls import reverse

from accounts.models import Membership, Role
from collections_app.models import Build, Chunk, Collection
from retrieval.models import GoldenQuestion
from tests.retrieval.services.golden.corpus import corpus_upload

MARKERS = {
    "Where do staff park their cars?": "underground garage beneath building B, level minus two",
    "Where can cyclists lock their bikes?": "covered rack next to the main entrance",
    "How are hotel nights refunded?": "up to 140 euros in capitals and 110 euros elsewhere",
}


@pytest.fixture
def gated(cast, collection, upload) -> Collection:
    # around 0: no neighbour stitched back, so a marker is found only where one paragraph holds it.
    answer = cast.editor.patch(f"/api/manage/collections/{collection.pk}", {"golden_gate": True, "around": 0},
                               format="json")  # fmt: skip
    assert answer.status_code == 200 and answer.json()["golden_gate"] is True
    assert answer.json()["golden_gate_tolerance"] == 0.02
    collection.refresh_from_db()
    corpus_upload(cast, collection, upload)
    for question, marker in MARKERS.items():
        GoldenQuestion.objects.create(tenant=cast.tenant, collection=collection, question=question, markers=[marker])
    return collection


def reindex(cast, collection, capture, **changes) -> Build:
    url = f"/api/manage/collections/{collection.pk}"
    assert cast.editor.patch(url, changes, format="json").json()["stale_documents"] == 2
    with capture(execute=True):
        assert cast.editor.post(f"{url}/reindex").status_code == 202
    return Build.objects.filter(collection=collection, built_from__startswith="re-index").latest("built_at")


def live_texts(collection: Collection) -> list[str]:
    return sorted(Chunk.objects.filter(collection=collection).live().paragraphs().values_list("text", flat=True))


def test_the_gate_holds_back_a_reindex_that_cuts_the_answers_apart(
    cast, gated, staff, django_capture_on_commit_callbacks
) -> None:
    before = live_texts(gated)
    # Twenty characters: no paragraph holds a whole marker any more.
    build = reindex(cast, gated, django_capture_on_commit_callbacks, chunk_strategy="fixed", chunk_size=20,
                    chunk_overlap=0)  # fmt: skip

    assert build.gate_passed is False and build.gate["reason"].startswith("held back: ndcg_at_10 1.000 → ")
    assert build.gate["serving"]["hit_at_5"] == 1.0 and build.gate["candidate"]["hit_at_5"] < 0.5
    gated.refresh_from_db()
    assert live_texts(gated) == before  # searches answer exactly as before
    answer = cast.viewer.post("/api/search", {"query": "Where do staff park their cars?", "collections": ["handbook"]},
                              format="json").json()  # fmt: skip
    assert MARKERS["Where do staff park their cars?"] in answer["results"][0]["text"]
    progress = cast.viewer.get(f"/api/manage/collections/{gated.pk}").json()
    assert progress["stale_documents"] == 2 and "held back" in str(progress)

    # The build's page shows both evaluations side by side; an editor may not cut over, an admin may.
    page = staff.get(reverse("admin:collections_app_build_change", args=[build.pk])).content.decode()
    assert "serving build" in page and "this build" in page and "held back: ndcg_at_10" in page
    assert "<tr><th>hit_at_5</th><td>1.000</td>" in page  # the rows are markup, not escaped text
    assert "Cut over anyway" not in page
    Membership.objects.filter(tenant=cast.tenant).update(role=Role.ADMIN)
    page = staff.get(reverse("admin:collections_app_build_change", args=[build.pk])).content.decode()
    assert 'id="kb-cut-over"' in page
    assert staff.post(reverse("admin:collections_app_build_cut_over_anyway", args=[build.pk])).status_code == 302
    forced = Build.objects.filter(collection=gated).latest("built_at")
    assert forced.gate_passed is False and forced.gate["cut_over_anyway"]["by"] == "ada"
    gated.refresh_from_db()
    assert gated.reindex_generation is None
    assert forced.gate["candidate"] == build.gate["candidate"]
    assert max(len(t) for t in live_texts(gated)) <= 40


def test_the_gate_lets_a_neutral_reindex_through(cast, gated, django_capture_on_commit_callbacks) -> None:
    build = reindex(cast, gated, django_capture_on_commit_callbacks, chunk_overlap=10)
    assert build.gate_passed is True and build.gate["reason"].startswith("passed")
    assert build.gate["candidate"]["ndcg_at_10"] == pytest.approx(build.gate["serving"]["ndcg_at_10"], abs=0.02)
    gated.refresh_from_db()
    assert gated.reindex_generation is None and gated.chunk_overlap == 10


def test_without_golden_questions_the_gate_cannot_judge_and_never_says_passed(
    cast, gated, django_capture_on_commit_callbacks
) -> None:
    GoldenQuestion.objects.all().delete()
    build = reindex(cast, gated, django_capture_on_commit_callbacks, chunk_overlap=10)
    assert build.gate_passed is None and build.gate["reason"].startswith("cannot judge")
    gated.refresh_from_db()
    assert gated.reindex_generation is None  # not judged is not held back


def test_with_the_gate_off_it_is_not_asked(cast, gated, django_capture_on_commit_callbacks) -> None:
    Collection.objects.filter(pk=gated.pk).update(golden_gate=False)
    gated.refresh_from_db()
    build = reindex(cast, gated, django_capture_on_commit_callbacks, chunk_strategy="fixed", chunk_size=20,
                    chunk_overlap=0)  # fmt: skip
    assert build.gate_passed is None and build.gate["reason"].startswith("not asked")
