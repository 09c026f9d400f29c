"""Deletes in seconds (issue 42): a deleted collection or tenant leaves every read at the commit of one flag; its rows
go in the background, batch by batch, and a removal that died is resumed by the cluster's recovery round.

Real documents, the real embedding model and the real search pipeline; the background removal is the queued task,
run as the cluster would once the deletion commits."""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.issuing import api_key_create
from accounts.models import ApiKey, Role, Tenant
from collections_app.models import (
    Build,
    Chunk,
    Collection,
    Document,
    DocumentVersion,
    KeywordPosting,
    KeywordStats,
    KeywordTerm,
    RetiredParagraph,
)
from collections_app.services import deletion
from collections_app.services.collections import collection_create, collection_delete
from collections_app.services.deletion import collection_rows_remove, deletions_resume, tenant_delete
from collections_app.services.vector_index import vector_indexes_rebuild_after_removal
from embedding import get_embedder
from infra.locks import own_session, session_lock
from retrieval.selectors.search import Visibility, keyword_retrieve, vector_retrieve
from retrieval.selectors.search import search as search_answer
from retrieval.selectors.search._scope import collection_scope, resolve_scope
from tests.conftest import client_for

QUESTION = "until when can vacation days be carried over"
# Both collections hold the question's words, so a deleted collection left in the BM25 statistics would move the
# neighbour's scores.
GONE = {
    "leave.txt": b"Carry-over\n\nUnused vacation days may be carried over until March 31 of the following year.\n",
    "bikes.txt": b"Bicycles\n\nCyclists can lock their bikes in the covered rack next to the main entrance.\n",
    "days.txt": b"Vacation\n\nVacation days are booked in the portal. Days carried over are booked first.\n",
}
KEPT = {
    "policy.txt": b"Leave policy\n\nVacation days not taken by April 30 of the following year lapse.\n",
    "travel.txt": b"Travel\n\nTrain tickets for business trips are booked through the travel desk.\n",
}


class WorkerKilled(Exception):
    """Stands for the worker dying between two batches (its lease goes with its session, as a killed process's)."""


def search(client, **extra) -> list[dict]:
    answer = client.post("/api/search", {"query": QUESTION, "around": 0, "top_n": 8, **extra}, format="json")
    assert answer.status_code == 200, answer.content
    return answer.json()["results"]


def shown(results: list[dict]) -> list[tuple[str, str, float]]:
    return [(r["collection"], r["chunk_id"], round(r["score"], 9)) for r in results]


def fill(client, upload, collection: Collection, files: dict[str, bytes]) -> None:
    for name, content in files.items():
        assert upload(client, collection, name, content).status_code == 202
    assert set(Document.objects.filter(collection=collection).values_list("status", flat=True)) == {"done"}


def keyword_scores(key: ApiKey, names: list[str] | None = None) -> dict[str, float]:
    """The keyword stage's BM25 scores over what a search of `key` reads (its scope, as the pipeline resolves it)."""
    scope = resolve_scope(key=key, names=names)
    visible = Visibility(scope.tenant_id, [str(c.pk) for c in scope.collections])
    return {hit.chunk_id: hit.keyword or 0.0 for hit in keyword_retrieve(visible=visible, query=QUESTION, limit=20)}


def rows_of(collection_id: uuid.UUID | str) -> dict[str, int]:
    return {
        "paragraphs": Chunk.objects.filter(collection_id=collection_id).count(),
        "postings": KeywordPosting.objects.filter(collection_id=collection_id).count(),
        "words": KeywordTerm.objects.filter(collection_id=collection_id).count(),
        "totals": KeywordStats.objects.filter(collection_id=collection_id).count(),
        "documents": Document.all_objects.filter(collection_id=collection_id).count(),
        "versions": DocumentVersion.objects.filter(document__collection_id=collection_id).count(),
        "builds": Build.objects.filter(collection_id=collection_id).count(),
        "collection": Collection.all_objects.filter(pk=collection_id).count(),
    }


@pytest.fixture
def two(cast, collection, upload) -> tuple[Collection, Collection]:
    """The cast's "handbook" (to be deleted) and its neighbour "policies" in the same tenant, both searchable with
    the floor off (whatever is readable is a candidate, so "not found" means "not readable")."""
    neighbour = collection_create(tenant=cast.tenant, name="policies", min_score=0)
    Collection.objects.filter(pk=collection.pk).update(min_score=0)
    fill(cast.editor, upload, collection, GONE)
    fill(cast.editor, upload, neighbour, KEPT)
    return Collection.objects.get(pk=collection.pk), neighbour


def test_a_deleted_collection_gives_no_hits_in_the_very_next_search_and_its_neighbour_keeps_every_hit_and_score(
    cast, two
):
    gone, neighbour = two
    viewer_key = ApiKey.objects.filter(tenant=cast.tenant, role=Role.VIEWER, agent=None).first()
    assert viewer_key is not None
    assert {r["collection"] for r in search(cast.viewer)} == {"handbook", "policies"}
    cast.agent.collections.set([gone])  # an agent configured with the deleted collection alone
    assert search(cast.agent_client)
    neighbour_alone = shown(search(cast.viewer, collections=["policies"]))
    neighbour_bm25 = keyword_scores(viewer_key, ["policies"])
    assert neighbour_alone and neighbour_bm25
    old_scope = Visibility(cast.tenant.pk, [str(gone.pk), str(neighbour.pk)])  # a scope read before the deletion
    in_flight = resolve_scope(key=viewer_key, names=None)  # a request's whole scope, read before the deletion
    alone = search_answer(scope=resolve_scope(key=viewer_key, names=["policies"]), query=QUESTION, top_n=8, around=0)
    alone_bm25 = {h.chunk_id: h.keyword for h in alone.hits if h.keyword is not None}
    vector = get_embedder(gone.embedding_alias).embed_query(QUESTION)

    answer = cast.editor.delete(f"/api/manage/collections/{gone.pk}")

    assert answer.status_code == 204 and answer.content == b""
    # Nothing was removed yet (the removal is queued on commit, and not run here): the flag alone hides it.
    assert rows_of(gone.pk)["paragraphs"] == Chunk.objects.filter(document__collection=gone).count() > 0
    # The very next search: no hit of it; the neighbour's hits and scores exactly those it had searched alone.
    assert shown(search(cast.viewer)) == neighbour_alone
    assert shown(search(cast.agent_client)) == []  # the agent's configured collections: none left
    assert keyword_scores(viewer_key) == pytest.approx(neighbour_bm25, rel=1e-12, abs=0)
    # A search whose scope was read just before the flag committed reads none of its rows either, by both stages.
    assert {h.collection_id for h in keyword_retrieve(visible=old_scope, query=QUESTION, limit=20)} == {
        str(neighbour.pk)
    }
    assert {h.collection_id for h in vector_retrieve(visible=old_scope, vector=vector, limit=20)} == {str(neighbour.pk)}
    # That request's search: the neighbour's hits and scores as searched alone (the deleted collection's word counts
    # are not summed into its BM25, and its postings are not read).
    answer = search_answer(scope=in_flight, query=QUESTION, top_n=8, around=0)
    assert [(r["collection"], r["chunk_id"], round(r["score"], 9)) for r in answer.results] == neighbour_alone
    in_flight_bm25 = {h.chunk_id: h.keyword for h in answer.hits if h.keyword is not None}
    assert in_flight_bm25 and in_flight_bm25 == pytest.approx(alone_bm25, rel=1e-12, abs=0)
    assert search_answer(scope=resolve_scope(key=viewer_key, names=None), query=QUESTION, top_n=8, around=0).results
    # Naming it is naming an unknown collection; every other door has lost it.
    named = cast.viewer.post("/api/search", {"query": QUESTION, "collections": ["handbook"]}, format="json")
    assert named.status_code == 400 and "no collection named handbook" in named.content.decode()
    assert cast.editor.get(f"/api/manage/collections/{gone.pk}").status_code == 404
    assert cast.editor.get(f"/api/manage/collections/{gone.pk}/map").status_code == 404
    assert cast.editor.get(f"/api/manage/collections/{gone.pk}/documents").status_code == 404
    assert [c["name"] for c in cast.editor.get("/api/manage/collections").json()] == ["policies"]
    assert cast.editor.delete(f"/api/manage/collections/{gone.pk}").status_code == 404
    # Its name is free at once.
    again = cast.editor.post("/api/manage/collections", {"name": "handbook"}, format="json")
    assert again.status_code == 201, again.content
    assert Document.objects.filter(collection_id=gone.pk).count() == 0  # its documents: nobody's to list


def test_the_removal_takes_every_row_in_batches_and_a_worker_killed_after_one_batch_is_resumed_by_recovery(
    cast, two, monkeypatch, settings, django_capture_on_commit_callbacks
):
    gone, neighbour = two
    monkeypatch.setattr(deletion, "PARAGRAPHS_PER_BATCH", 1)  # a few paragraphs: one a batch, so there are several
    monkeypatch.setattr(deletion, "KEYWORD_ROWS_PER_BATCH", 5)
    monkeypatch.setattr(deletion, "DOCUMENTS_PER_BATCH", 1)
    files = [Path(settings.MEDIA_ROOT) / d.file.name for d in Document.objects.filter(collection=gone)]
    assert files and all(f.exists() for f in files)
    before = rows_of(gone.pk)
    neighbour_rows = rows_of(neighbour.pk)
    neighbour_postings = sorted(KeywordPosting.objects.filter(collection_id=neighbour.pk).values_list("pk", "tf"))

    with django_capture_on_commit_callbacks() as queued:  # queued, not run: the worker is "killed" below instead
        collection_delete(collection=gone)
    assert len(queued) == 1
    batches = []

    def killed_after_the_first_batch() -> None:
        batches.append(1)
        raise WorkerKilled

    with pytest.raises(WorkerKilled):
        collection_rows_remove(collection_id=gone.pk, after_batch=killed_after_the_first_batch)

    midway = rows_of(gone.pk)
    assert midway["paragraphs"] == before["paragraphs"] - 1 and 0 < midway["postings"] < before["postings"]
    assert midway["collection"] == 1 and Collection.all_objects.get(pk=gone.pk).deleting_at is not None
    # Held by a live worker, a removal is not queued again; nobody holding it, the recovery round queues it.
    with session_lock(deletion._lease_key("collection", gone.pk), application_name="test"):
        settings.KB_RECOVERY_GRACE_SECONDS = 0
        assert deletions_resume() == []
    with django_capture_on_commit_callbacks(execute=True):
        assert deletions_resume() == [f"collection {gone.pk}"]

    assert rows_of(gone.pk) == dict.fromkeys(before, 0)
    assert RetiredParagraph.objects.filter(collection_id=gone.pk).count() == before["paragraphs"]  # citations: retired
    assert not any(f.exists() for f in files)
    assert rows_of(neighbour.pk) == neighbour_rows
    assert sorted(KeywordPosting.objects.filter(collection_id=neighbour.pk).values_list("pk", "tf")) == (
        neighbour_postings
    )
    assert deletions_resume() == []  # nothing left to resume


def test_a_deleted_tenant_is_refused_at_once_and_removed_in_the_background_even_after_a_crash(
    cast, two, upload, monkeypatch, settings, django_capture_on_commit_callbacks
):
    gone, neighbour = two
    theirs = collection_create(tenant=cast.outsider_tenant, name="handbook")
    fill(cast.outsider, upload, theirs, KEPT)
    theirs_before = rows_of(theirs.pk)
    assert search(cast.viewer)

    with django_capture_on_commit_callbacks() as queued:
        tenant_delete(tenant=cast.tenant)
    assert len(queued) == 1

    # At once: every key of it refused, its collections flagged, its name free; the other tenant untouched.
    for client in (cast.viewer, cast.editor, cast.admin, cast.agent_client):
        assert client.post("/api/search", {"query": QUESTION}, format="json").status_code == 401
    assert not Collection.objects.filter(tenant_id=cast.tenant.pk).exists()
    assert Collection.all_objects.filter(tenant_id=cast.tenant.pk).deleting().count() == 2
    assert Tenant.objects.create(name="acme").pk != cast.tenant.pk
    assert {r["collection"] for r in search(cast.outsider)} == {"handbook"}

    # The removal dies part way (after the collections, before the keys); the recovery round resumes it.
    real = deletion._tenant_rows_of

    def dies(model, tenant_id):
        raise WorkerKilled

    monkeypatch.setattr(deletion, "_tenant_rows_of", dies)
    with pytest.raises(WorkerKilled):
        deletion.tenant_rows_remove(tenant_id=cast.tenant.pk)
    assert not Collection.all_objects.filter(tenant_id=cast.tenant.pk).exists()
    assert Tenant.all_objects.filter(pk=cast.tenant.pk).exists()
    monkeypatch.setattr(deletion, "_tenant_rows_of", real)
    settings.KB_RECOVERY_GRACE_SECONDS = 0
    with django_capture_on_commit_callbacks(execute=True):
        assert deletions_resume() == [f"tenant {cast.tenant.pk}"]

    assert not Tenant.all_objects.filter(pk=cast.tenant.pk).exists()
    assert not ApiKey.objects.filter(tenant_id=cast.tenant.pk).exists()
    assert not Chunk.objects.filter(tenant_id=cast.tenant.pk).exists()
    assert not RetiredParagraph.objects.filter(tenant_id=cast.tenant.pk).exists()
    assert rows_of(gone.pk) == rows_of(neighbour.pk) == dict.fromkeys(theirs_before, 0)
    assert rows_of(theirs.pk) == theirs_before
    # The new tenant of the same name is a tenant like any other.
    fresh = Tenant.objects.get(name="acme")
    assert (
        client_for(api_key_create(tenant=fresh, role=Role.VIEWER).secret)
        .post("/api/search", {"query": QUESTION}, format="json")
        .json()["results"]
        == []
    )


def test_the_admin_deletes_at_once_and_the_collection_list_says_being_deleted(cast, staff, two):
    gone, _ = two
    confirm = staff.get(f"/admin/collections_app/collection/{gone.pk}/delete/").content.decode()
    assert "Documents: 3" in confirm and "removed in the background" in confirm  # counts, not every paragraph listed

    response = staff.post(f"/admin/collections_app/collection/{gone.pk}/delete/", {"post": "yes"})

    assert response.status_code == 302
    page = staff.get("/admin/collections_app/collection/").content.decode()
    note = page[page.index('id="kb-being-deleted"') :]
    assert "being deleted" in note and "handbook" in note
    assert f"/admin/collections_app/collection/{gone.pk}/change/" not in page  # no link into what is going
    assert staff.get(f"/admin/collections_app/collection/{gone.pk}/change/").status_code == 302  # "does not exist"
    documents = staff.get("/admin/collections_app/document/").content.decode()
    assert "leave.txt" not in documents and "policy.txt" in documents


@pytest.mark.django_db(transaction=True)
def test_a_delete_does_not_wait_for_an_import_holding_the_collection(cast) -> None:
    """An import holds its collection's row for its whole transaction: a delete says so within seconds (409 through
    the API, the reason on the admin's 403 page) instead of holding a web thread until the import ends."""
    import threading
    import time

    from django.db import connections, transaction

    collection = collection_create(tenant=cast.tenant, name="being imported")
    holding, release = threading.Event(), threading.Event()

    def importing() -> None:  # what collection_import_run does first: lock the row, then write for minutes
        with transaction.atomic():
            Collection.objects.select_for_update().filter(pk=collection.pk).first()
            holding.set()
            release.wait(60)
        connections.close_all()

    worker = threading.Thread(target=importing)
    worker.start()
    try:
        assert holding.wait(30)
        started = time.monotonic()
        with pytest.raises(deletion.DeleteBusy, match="collection import"):
            collection_delete(collection=collection)
        assert time.monotonic() - started < 10
        answer = cast.admin.delete(f"/api/manage/collections/{collection.pk}")
        assert answer.status_code == 409 and "import" in answer.json()["detail"], answer.content
        with pytest.raises(deletion.DeleteBusy):
            tenant_delete(tenant=cast.tenant)
    finally:
        release.set()
        worker.join()
    assert Collection.objects.filter(pk=collection.pk).exists()  # nothing was flagged
    assert Tenant.objects.filter(pk=cast.tenant.pk).exists()
    collection_delete(collection=collection)  # once the import is over, at once
    assert not Collection.objects.filter(pk=collection.pk).exists()


def vector_index_file() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_relation_filenode('chunk_embedding_hnsw_384')")
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_a_removal_larger_than_what_is_left_builds_the_vector_index_again_and_searches_find_the_same(
    cast, two, upload, settings
):
    """An HNSW index keeps a removed paragraph's node until VACUUM mends its neighbours: after a million-paragraph
    collection went, the index weighed 2 GB for 203 paragraphs and the next import ran at half speed."""
    gone, neighbour = two
    small = collection_create(tenant=cast.outsider_tenant, name="small", min_score=0)
    fill(cast.outsider, upload, small, {"desk.txt": KEPT["travel.txt"]})
    settings.KB_VECTOR_INDEX_REBUILD_PARAGRAPHS = 1
    vector = get_embedder(small.embedding_alias).embed_query(QUESTION)

    def small_hits() -> list[tuple[str, float]]:
        hits = vector_retrieve(visible=Visibility(cast.outsider_tenant.pk, [str(small.pk)]), vector=vector, limit=20)
        return [(h.chunk_id, round(h.semantic or 0.0, 6)) for h in hits]

    found, built = small_hits(), vector_index_file()
    assert found
    # Fewer paragraphs removed than the index still serves: mending costs less than a build, the index stays.
    left = Chunk.objects.exclude(collection=neighbour).count()
    assert 0 < Chunk.objects.filter(collection=neighbour).count() < left
    collection_delete(collection=neighbour)  # the removal runs at the commit, as the cluster would run it
    assert rows_of(neighbour.pk)["paragraphs"] == 0
    assert vector_index_file() == built

    # More removed than left: built again from the rows left, and a search finds exactly what it found before.
    assert Chunk.objects.filter(collection=gone).count() >= Chunk.objects.exclude(collection=gone).count()
    collection_delete(collection=gone)
    assert rows_of(gone.pk)["paragraphs"] == 0
    assert vector_index_file() != built
    assert small_hits() == found
    with connection.cursor() as cursor:  # no half-built copy left behind
        cursor.execute(
            "SELECT count(*) FROM pg_index WHERE indrelid = 'collections_app_chunk'::regclass AND NOT indisvalid"
        )
        assert cursor.fetchone()[0] == 0


def invalid_indexes() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
               WHERE i.indrelid = 'collections_app_chunk'::regclass AND NOT i.indisvalid ORDER BY c.relname"""
        )
        return [row[0] for row in cursor.fetchall()]


@pytest.mark.django_db(transaction=True)
def test_the_next_removal_drops_what_a_killed_vector_index_rebuild_left_whatever_its_size(cast, two, settings):
    """REINDEX CONCURRENTLY killed while it builds leaves its new copy (`_ccnew`), killed after it swapped the names
    leaves the old index (`_ccold`, 2 GB after the million-paragraph removal); both invalid, never read, and the
    first may still be written to by every insert. The next removal drops them, a small one too."""
    gone, _ = two
    with connection.cursor() as cursor:
        for leftover in ("chunk_embedding_hnsw_384_ccnew", "chunk_embedding_hnsw_384_ccold"):
            # A build that fails (here on duplicates) leaves its index invalid under the name it was given.
            with pytest.raises(Exception, match="could not create unique index"):
                cursor.execute(f"CREATE UNIQUE INDEX CONCURRENTLY {leftover} ON collections_app_chunk (collection_id)")
    assert invalid_indexes() == ["chunk_embedding_hnsw_384_ccnew", "chunk_embedding_hnsw_384_ccold"]
    assert Chunk.objects.filter(collection=gone).count() < settings.KB_VECTOR_INDEX_REBUILD_PARAGRAPHS  # no rebuild

    collection_delete(collection=gone)  # the removal runs at the commit, as the cluster would run it

    assert rows_of(gone.pk)["paragraphs"] == 0
    assert invalid_indexes() == []
    assert {r["collection"] for r in search(cast.viewer)} == {"policies"}


def test_a_search_whose_every_collection_was_deleted_after_its_scope_was_read_reads_no_paragraph(cast, two):
    """The million-paragraph bench polls with a scope of its one collection, read before the delete: a search that
    walked the vector index over that collection's invisible rows took seconds to find nothing."""
    gone, _ = two
    in_flight = collection_scope(collection=gone)  # a request's scope, read before the deletion
    collection_delete(collection=gone)

    with CaptureQueriesContext(connection) as queries:
        answer = search_answer(scope=in_flight, query=QUESTION, top_n=8, around=0)

    assert answer.results == [] and answer.reason == "no_collection"
    assert not [q["sql"] for q in queries if "collections_app_chunk" in q["sql"]]
    stages = {stage.name: stage for stage in answer.stages}
    assert stages["vector retrieval"].status == "skipped" and "deleted" in stages["vector retrieval"].reason


@pytest.mark.django_db(transaction=True)
def test_a_removal_does_not_wait_behind_a_rebuild_whose_worker_was_killed(cast, two):
    """A worker killed during REINDEX CONCURRENTLY lets its lock go, but its PostgreSQL session goes on rebuilding
    (it notices the dead client only when the statement ends), waiting for every older transaction, an import
    included. The next removal must not take that rebuild's `_ccnew` for a leftover: dropping it waited as long."""
    snapshot, rebuild = own_session(), own_session()
    try:
        snapshot.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        snapshot.execute("SELECT count(*) FROM collections_app_chunk")  # an import's transaction, say
        orphan = threading.Thread(
            target=rebuild.execute, args=['REINDEX INDEX CONCURRENTLY "chunk_embedding_hnsw_384"']
        )
        orphan.start()
        for _ in range(100):
            if "chunk_embedding_hnsw_384_ccnew" in invalid_indexes():
                break
            time.sleep(0.05)
        assert invalid_indexes() == ["chunk_embedding_hnsw_384_ccnew"]

        def remove() -> None:
            try:
                vector_indexes_rebuild_after_removal(removed_paragraphs=3)
            finally:
                connection.close()  # this thread's own

        removal = threading.Thread(target=remove)
        removal.start()
        removal.join(timeout=5)
        assert not removal.is_alive()
    finally:
        snapshot.execute("ROLLBACK")
        orphan.join(timeout=30)
        removal.join(timeout=30)
        snapshot.close()
        rebuild.close()
    assert invalid_indexes() == []  # the rebuild ended, and took its copies with it
