"""DELETE .../documents/{id} moves the document to the trash (tests/collections_app/api/test_trash_api.py); purging
it (DELETE .../trash/{id}, the service document_delete): the document, its paragraphs, keyword postings, versions and
stored files go in one transaction (the files after it commits); builds and search audits stay; outsiders find
nothing to delete."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection, transaction

from accounts.issuing import api_key_create
from collections_app.models import Build, Chunk, Collection, Document, DocumentVersion, KeywordPosting
from collections_app.services.documents import _ingest, document_delete, document_ingest
from retrieval.models import SearchEvent
from tests.conftest import client_for
from tests.retrieval.selectors.search.test_keyword_postings import expected_postings, postings

LEAVE_V1 = b"Carry-over\n\nUnused vacation days may be carried over until March 31 of the following year.\n"
LEAVE_V2 = b"Carry-over\n\nUnused vacation days may be carried over until June 30 of the following year.\n"
BIKES = b"Bicycles\n\nCyclists can lock their bikes in the covered rack next to the main entrance.\n"


def url(collection: Collection, document_id: object) -> str:
    return f"/api/manage/collections/{collection.pk}/documents/{document_id}"


def stored_paths(document: Document) -> list[Path]:
    names = {document.file.name, *DocumentVersion.objects.filter(document=document).values_list("file", flat=True)}
    return [Path(settings.MEDIA_ROOT) / name for name in names]


def assert_keyword_statistics_match_the_paragraphs(collection: Collection) -> None:
    """Postings, word counts and the BM25 totals are what the paragraphs left would give, recomputed."""
    assert postings(collection) == expected_postings(collection)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*), coalesce(sum(kb_tsvector_length(search_vector)), 0) FROM collections_app_chunk "
            "WHERE collection_id = %s AND search_vector IS NOT NULL",
            [collection.pk],
        )
        expected = cursor.fetchone()
        cursor.execute(
            "SELECT paragraphs, total_length FROM collections_app_keywordstats WHERE collection_id = %s",
            [collection.pk],
        )
        assert cursor.fetchone() == expected
        cursor.execute(
            "SELECT u.lexeme, count(*) FROM collections_app_chunk c, unnest(c.search_vector) u "
            "WHERE c.collection_id = %s GROUP BY u.lexeme",
            [collection.pk],
        )
        expected_terms = dict(cursor.fetchall())
        # A word no paragraph holds any more keeps a row counting 0 (the triggers' CTE cannot delete a row it
        # updates in the same statement): 0 is the right count, and the keyword stage finds no posting for it.
        cursor.execute(
            "SELECT lexeme, paragraphs FROM collections_app_keywordterm WHERE collection_id = %s AND paragraphs > 0",
            [collection.pk],
        )
        assert dict(cursor.fetchall()) == expected_terms


@pytest.fixture
def leave(cast, collection, upload) -> Document:
    """A document with two versions (two stored originals) beside another document."""
    upload(cast.editor, collection, "leave.txt", LEAVE_V1)
    upload(cast.editor, collection, "leave.txt", LEAVE_V2)
    upload(cast.editor, collection, "bikes.txt", BIKES)
    document = Document.objects.get(filename="leave.txt")
    assert document.version == 2 and document.status == "done"
    return document


def test_delete_removes_the_document_its_paragraphs_postings_versions_and_files(
    cast, collection, leave, django_capture_on_commit_callbacks
):
    search = cast.viewer.post("/api/search", {"query": "until when can vacation days be carried over"}, format="json")
    assert search.json()["results"][0]["document"]["id"] == str(leave.pk)
    files = stored_paths(leave)
    chunk_ids = [str(pk) for pk in Chunk.objects.filter(document=leave).values_list("pk", flat=True)]
    assert len(files) == 2 and all(f.exists() for f in files) and chunk_ids

    assert cast.editor.delete(url(collection, leave.pk)).status_code == 200  # to the trash
    with django_capture_on_commit_callbacks(execute=True):
        response = cast.editor.delete(f"/api/manage/collections/{collection.pk}/trash/{leave.pk}")

    assert response.status_code == 204 and response.content == b""
    assert not Document.all_objects.filter(pk=leave.pk).exists()
    assert not Chunk.objects.filter(pk__in=chunk_ids).exists()
    assert not DocumentVersion.objects.filter(document_id=leave.pk).exists()
    assert not KeywordPosting.objects.filter(chunk_id__in=chunk_ids).exists()
    assert_keyword_statistics_match_the_paragraphs(collection)
    assert not any(f.exists() for f in files)
    # The audit stays: the search that returned it, and the builds that made it (no longer pointing at it).
    assert SearchEvent.objects.filter(pk=search.json()["search_id"]).exists()
    assert Build.objects.filter(collection=collection, document=None, version=2).exists()
    assert cast.editor.get(url(collection, leave.pk)).status_code == 404
    after = cast.viewer.post("/api/search", {"query": "until when can vacation days be carried over"}, format="json")
    assert all(r["document"]["id"] != str(leave.pk) for r in after.json()["results"])
    assert Document.objects.filter(collection=collection).count() == 1  # the other document is untouched


def test_a_rolled_back_delete_keeps_every_file(cast, collection, leave, django_capture_on_commit_callbacks):
    files, document_id = stored_paths(leave), leave.pk

    with (
        django_capture_on_commit_callbacks(execute=True) as callbacks,
        pytest.raises(RuntimeError),
        transaction.atomic(),
    ):
        document_delete(document=leave)
        raise RuntimeError("something after the delete failed")

    assert not callbacks  # the files' removal was never to run
    assert all(f.exists() for f in files)
    assert Document.objects.filter(pk=document_id).exists() and Chunk.objects.filter(document_id=document_id).exists()
    assert DocumentVersion.objects.filter(document_id=document_id).count() == 2


def test_delete_needs_an_editor_and_is_not_found_by_anybody_else(cast, collection, upload):
    document_id = upload(cast.editor, collection, "bikes.txt", BIKES).json()["document_id"]

    assert cast.viewer.delete(url(collection, document_id)).status_code == 403
    assert cast.outsider.delete(url(collection, document_id)).status_code == 404
    # An editor key of an agent that does not reach this collection: not found, as in another tenant.
    scoped = client_for(api_key_create(tenant=cast.tenant, role="editor", agent=cast.agent).secret)
    assert scoped.delete(url(collection, document_id)).status_code == 404
    # A document id under another collection of the tenant is not found there either.
    other = cast.editor.post("/api/manage/collections", {"name": "other"}, format="json").json()
    assert cast.editor.delete(f"/api/manage/collections/{other['id']}/documents/{document_id}").status_code == 404
    assert Document.objects.filter(pk=document_id).exists()

    cast.agent.collections.add(collection)  # now it reaches it
    assert scoped.delete(url(collection, document_id)).status_code == 200


def test_a_document_deleted_while_it_is_read_publishes_nothing(cast, collection, upload, monkeypatch):
    document_id = upload(cast.editor, collection, "leave.txt", LEAVE_V1).json()["document_id"]
    Document.objects.filter(pk=document_id).update(status="queued")  # re-ingest asked for: it is read again
    publish = _ingest.document_publish

    before = set(Chunk.objects.filter(document_id=document_id).values_list("pk", flat=True))

    def deleted_just_before_publishing(document, collection, staging):
        assert cast.editor.delete(url(collection, document.pk)).status_code == 200
        publish(document, collection, staging)

    monkeypatch.setattr(_ingest, "document_publish", deleted_just_before_publishing)
    document_ingest(document_id=document_id)

    assert not Document.objects.filter(pk=document_id).exists()  # in the trash
    # Nothing was published: the paragraphs it had when it was deleted wait in the trash with it, no others.
    assert set(Chunk.objects.filter(document_id=document_id).values_list("pk", flat=True)) == before
    assert_keyword_statistics_match_the_paragraphs(collection)
