"""The trash (issue 41): DELETE .../documents/{id} moves a document to its collection's trash, gone from search, the
list, the map and evaluations at once; GET .../trash lists it with who and when; POST .../restore brings it back
whole (its paragraph edits included); DELETE .../trash/{id} and KB_TRASH_DAYS purge it for good. Real documents,
real searches through the real pipeline."""

from __future__ import annotations

import datetime as dt
import io
import sqlite3
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import timezone

from collections_app.models import Chunk, Collection, Document, DocumentVersion, KeywordPosting, ParagraphEdit
from collections_app.services.documents import document_trash, trash_purge_expired
from retrieval.models import GoldenQuestion
from retrieval.services.golden import evaluate

LEAVE = b"Carry-over\n\nUnused vacation days may be carried over until March 31 of the following year.\n"
BIKES = b"Bicycles\n\nCyclists can lock their bikes in the covered rack next to the main entrance.\n"
EDITED = "Unused vacation days may be carried over until April 30 of the following year, with a manager's consent."
QUESTION = "until when can vacation days be carried over"


def documents_url(collection: Collection, rest: str = "") -> str:
    return f"/api/manage/collections/{collection.pk}/documents{rest}"


def trash_url(collection: Collection, rest: str = "") -> str:
    return f"/api/manage/collections/{collection.pk}/trash{rest}"


def search(client, query: str = QUESTION) -> list[dict]:
    answer = client.post("/api/search", {"query": query, "around": 0, "top_n": 8}, format="json")
    assert answer.status_code == 200, answer.content
    return answer.json()["results"]


def found(results: list[dict], document: Document) -> list[str]:
    return [r["text"] for r in results if r["document"]["id"] == str(document.pk)]


def stored_paths(document: Document) -> list[Path]:
    names = {document.file.name, *DocumentVersion.objects.filter(document=document).values_list("file", flat=True)}
    return [Path(settings.MEDIA_ROOT) / name for name in names]


@pytest.fixture
def searchable(cast, collection) -> Collection:
    # The floor off: whatever is readable is a candidate, so "not found" means "not readable".
    assert (
        cast.editor.patch(f"/api/manage/collections/{collection.pk}", {"min_score": 0}, format="json").status_code
        == 200
    )
    return collection


@pytest.fixture
def leave(cast, searchable, upload) -> Document:
    assert upload(cast.editor, searchable, "leave.txt", LEAVE).status_code == 202
    assert upload(cast.editor, searchable, "bikes.txt", BIKES).status_code == 202
    document = Document.objects.get(filename="leave.txt")
    assert document.status == "done", document.error
    return document


def edit_the_carry_over_paragraph(cast, leave: Document) -> None:
    paragraph = Chunk.objects.filter(document=leave).editable().get(text__contains="March 31")
    answer = cast.editor.patch(
        f"{documents_url(leave.collection, f'/{leave.pk}')}/paragraphs/{paragraph.pk}", {"text": EDITED}, format="json"
    )
    assert answer.status_code == 200, answer.content


def test_a_deleted_document_leaves_every_read_at_once_and_comes_back_whole_with_its_edits(cast, searchable, leave):
    edit_the_carry_over_paragraph(cast, leave)
    assert EDITED in found(search(cast.viewer), leave)
    golden = GoldenQuestion.objects.create(
        tenant=cast.tenant, collection=searchable, question="How long do unused vacation days last?",
        documents=[leave.pk],
    )  # fmt: skip
    before = timezone.now()

    answer = cast.editor.delete(documents_url(searchable, f"/{leave.pk}"))

    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["trashed"] is True and body["document_id"] == str(leave.pk)
    restore_until = dt.datetime.fromisoformat(body["restore_until"])
    assert dt.timedelta(days=29, hours=23) < restore_until - before <= dt.timedelta(days=30, minutes=1)
    assert body["golden_questions"] == [{"id": str(golden.pk), "question": golden.question}]
    # Gone from search (keyword and vector stages alike), the list, the document's own URL and the map.
    assert found(search(cast.viewer), leave) == []
    assert found(search(cast.viewer, "vacation carried over March"), leave) == []
    listed = cast.editor.get(documents_url(searchable)).json()
    assert [d["filename"] for d in listed.get("results", listed)] == ["bikes.txt"]
    assert cast.editor.get(documents_url(searchable, f"/{leave.pk}")).status_code == 404
    # Counts leave it out: stale documents (the collection list annotates them in its one query).
    Document.all_objects.filter(collection=searchable).update(stale=True)
    [listed] = [c for c in cast.editor.get("/api/manage/collections").json() if c["id"] == str(searchable.pk)]
    assert listed["stale_documents"] == 1  # bikes.txt only
    Document.all_objects.filter(collection=searchable).update(stale=False)
    corpus_map = cast.editor.get(f"/api/manage/collections/{searchable.pk}/map")
    assert corpus_map.status_code == 200 and "leave" not in corpus_map.content.decode().lower()
    # An evaluation counts the reference for nothing (as a deleted paragraph's), and says it is gone.
    rows, _ = evaluate(collection=searchable)
    assert rows[0]["found"] is False and str(leave.pk) in rows[0]["gone"]
    # Listed in the trash with who deleted it and when.
    trash = cast.editor.get(trash_url(searchable))
    assert trash.status_code == 200, trash.content
    [entry] = trash.json()
    assert entry["document_id"] == str(leave.pk) and entry["filename"] == "leave.txt"
    assert entry["trashed_by"].startswith("key ")
    assert before <= dt.datetime.fromisoformat(entry["trashed_at"]) <= timezone.now()
    assert entry["restore_until"] == body["restore_until"]

    restored = cast.editor.post(trash_url(searchable, f"/{leave.pk}/restore"))

    assert restored.status_code == 200, restored.content
    assert restored.json()["document_id"] == str(leave.pk) and restored.json()["status"] == "done"
    # It answers again with its edit, keeps its edit history, and counts in evaluations again.
    assert found(search(cast.viewer), leave)[0] == EDITED
    assert ParagraphEdit.objects.filter(document=leave, status="applied").count() == 1
    rows, _ = evaluate(collection=searchable)
    assert rows[0]["found"] is True and rows[0]["gone"] == []
    assert cast.editor.get(trash_url(searchable)).json() == []
    assert cast.editor.get(documents_url(searchable, f"/{leave.pk}")).status_code == 200


def test_purging_from_the_trash_removes_the_rows_and_the_stored_files_for_good(
    cast, searchable, leave, django_capture_on_commit_callbacks
):
    files = stored_paths(leave)
    chunk_ids = list(Chunk.objects.filter(document=leave).values_list("pk", flat=True))
    assert files and all(f.exists() for f in files) and chunk_ids
    assert cast.editor.delete(documents_url(searchable, f"/{leave.pk}")).status_code == 200
    assert all(f.exists() for f in files)  # the trash keeps the originals

    with django_capture_on_commit_callbacks(execute=True):
        purged = cast.editor.delete(trash_url(searchable, f"/{leave.pk}"))

    assert purged.status_code == 204
    assert not Document.all_objects.filter(pk=leave.pk).exists()
    assert not Chunk.objects.filter(pk__in=chunk_ids).exists()
    assert not KeywordPosting.objects.filter(chunk_id__in=chunk_ids).exists()
    assert not any(f.exists() for f in files)
    assert cast.editor.get(trash_url(searchable)).json() == []
    assert cast.editor.post(trash_url(searchable, f"/{leave.pk}/restore")).status_code == 404
    # A live document is not purged through the trash's door.
    bikes = Document.objects.get(filename="bikes.txt")
    assert cast.editor.delete(trash_url(searchable, f"/{bikes.pk}")).status_code == 404
    assert Document.objects.filter(pk=bikes.pk).exists()


def test_documents_in_the_trash_longer_than_kb_trash_days_are_purged(
    cast, searchable, leave, settings, django_capture_on_commit_callbacks
):
    settings.KB_TRASH_DAYS = 30
    bikes = Document.objects.get(filename="bikes.txt")
    files = stored_paths(leave)
    document_trash(document=leave, by="ada")
    document_trash(document=bikes, by="ada")
    Document.all_objects.filter(pk=leave.pk).update(trashed_at=timezone.now() - dt.timedelta(days=31))

    with django_capture_on_commit_callbacks(execute=True):
        assert trash_purge_expired() == 1

    assert not Document.all_objects.filter(pk=leave.pk).exists() and not any(f.exists() for f in files)
    assert [d["filename"] for d in cast.editor.get(trash_url(searchable)).json()] == ["bikes.txt"]
    # 0 keeps them until the trash is emptied.
    settings.KB_TRASH_DAYS = 0
    assert trash_purge_expired(now=timezone.now() + dt.timedelta(days=3650)) == 0
    assert cast.editor.get(trash_url(searchable)).json()[0]["restore_until"] is None


def test_the_same_file_uploaded_again_is_a_new_document_and_the_trashed_one_cannot_come_back_beside_it(
    cast, searchable, leave, upload
):
    assert cast.editor.delete(documents_url(searchable, f"/{leave.pk}")).status_code == 200

    again = upload(cast.editor, searchable, "leave.txt", LEAVE)

    assert again.status_code == 202, again.content
    assert again.json()["document_id"] != str(leave.pk) and again.json()["version"] == 1
    assert len(found(search(cast.viewer), Document.objects.get(pk=again.json()["document_id"]))) == 1
    refused = cast.editor.post(trash_url(searchable, f"/{leave.pk}/restore"))
    assert refused.status_code == 409
    assert "same file" in refused.json()["detail"] and again.json()["document_id"] in refused.json()["detail"]
    assert Document.all_objects.get(pk=leave.pk).trashed_at is not None  # still in the trash, restorable later


def test_a_changed_file_under_a_trashed_documents_name_is_a_new_document(cast, searchable, leave, upload):
    assert cast.editor.delete(documents_url(searchable, f"/{leave.pk}")).status_code == 200

    changed = upload(cast.editor, searchable, "leave.txt", LEAVE.replace(b"March 31", b"May 31"))

    assert changed.status_code == 202 and changed.json()["document_id"] != str(leave.pk)
    assert cast.editor.post(trash_url(searchable, f"/{leave.pk}/restore")).status_code == 200
    assert Document.objects.filter(collection=searchable, filename="leave.txt").count() == 2


def test_the_trash_is_editors_and_nobody_elses(cast, searchable, leave):
    assert cast.editor.delete(documents_url(searchable, f"/{leave.pk}")).status_code == 200

    assert cast.viewer.get(trash_url(searchable)).status_code == 403
    assert cast.viewer.post(trash_url(searchable, f"/{leave.pk}/restore")).status_code == 403
    assert cast.viewer.delete(trash_url(searchable, f"/{leave.pk}")).status_code == 403
    assert cast.outsider.get(trash_url(searchable)).status_code == 404
    assert cast.outsider.post(trash_url(searchable, f"/{leave.pk}/restore")).status_code == 404
    assert cast.outsider.delete(trash_url(searchable, f"/{leave.pk}")).status_code == 404
    other = cast.editor.post("/api/manage/collections", {"name": "other"}, format="json").json()
    assert cast.editor.post(f"/api/manage/collections/{other['id']}/trash/{leave.pk}/restore").status_code == 404
    assert Document.all_objects.get(pk=leave.pk).trashed_at is not None


def test_an_export_leaves_a_trashed_document_out_and_takes_it_again_once_restored(cast, searchable, leave, tmp_path):
    def exported_texts() -> str:
        response = cast.editor.get(f"/api/manage/collections/{searchable.pk}/export")
        assert response.status_code == 200, response.content
        path = tmp_path / "collection.db"
        path.write_bytes(b"".join(response.streaming_content))
        with sqlite3.connect(path) as store:
            return "\n".join(row[0] for row in store.execute("SELECT text FROM agents_chunks"))

    assert "March 31" in exported_texts()
    assert cast.editor.delete(documents_url(searchable, f"/{leave.pk}")).status_code == 200
    texts = exported_texts()
    assert "March 31" not in texts and "covered rack" in texts
    assert cast.editor.post(trash_url(searchable, f"/{leave.pk}/restore")).status_code == 200
    assert "March 31" in exported_texts()


def test_a_document_deleted_before_it_was_read_is_read_once_restored_not_left_parsing_for_ever(
    cast, searchable, django_capture_on_commit_callbacks
):
    # Uploaded, deleted before its worker took it: the worker then stops at the deletion. The recovery requeues
    # only ingestions that died, so the restored document sat `queued`/`parsing` for ever, answering nothing.
    file = io.BytesIO(LEAVE)
    file.name = "leave.txt"
    with django_capture_on_commit_callbacks() as queued:
        assert cast.editor.post(documents_url(searchable), {"file": file}).status_code == 202
    document = Document.objects.get(filename="leave.txt")
    assert cast.editor.delete(documents_url(searchable, f"/{document.pk}")).status_code == 200
    for task in queued:  # the worker, after the deletion
        task()
    document.refresh_from_db()
    assert document.status in ("queued", "parsing")

    with django_capture_on_commit_callbacks(execute=True):
        restored = cast.editor.post(trash_url(searchable, f"/{document.pk}/restore"))

    assert restored.status_code == 200, restored.content
    document.refresh_from_db()
    assert document.status == "done", document.error
    assert found(search(cast.viewer), document)
