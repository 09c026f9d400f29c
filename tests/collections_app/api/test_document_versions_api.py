"""Versions: a changed file uploaded under a document's name (or source) is that document's next version.

The document keeps its id; the old version answers until the new one is published, and is then retired in
the same transaction; a version that cannot be read leaves the old one answering; every original stays
downloadable. Searches go through the real pipeline and the real default model.
"""

from __future__ import annotations

import hashlib
import io

import pytest
from django.conf import settings

from accounts.issuing import api_key_create
from collections_app.models import Build, Document, DocumentVersion
from collections_app.services.documents import _ingest, document_ingest
from tests.conftest import client_for
from tests.files.documents import pdf_bytes
from tests.margins import assert_clears

V1 = b"Carry-over\n\nUnused vacation days may be carried over until March 31 of the following year.\n"
V2 = b"Carry-over\n\nUnused vacation days may be carried over until June 30 of the following year.\n"
QUESTION = "Until when can unused vacation days be carried over?"


def answers(client, query: str = QUESTION) -> list[dict]:
    """The results of a search at the defaults, each checked to clear the floor it came back with."""
    response = client.post("/api/search", {"query": query, "around": 0}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    for hit in body["results"]:
        assert_clears(hit["score"], body["floor"], what=f"the paragraph {hit['text'][:40]!r}")
    return body["results"]


def texts(results: list[dict]) -> str:
    return " | ".join(r["text"] for r in results)


@pytest.fixture
def queue_only(django_capture_on_commit_callbacks):
    """Upload through the API and leave the ingestion queued (no worker has taken it yet)."""

    def _upload(client, collection, filename: str, content: bytes, **extra):
        file = io.BytesIO(content)
        file.name = filename
        with django_capture_on_commit_callbacks(execute=False):
            return client.post(
                f"/api/manage/collections/{collection.pk}/documents", {"file": file, **extra}, format="multipart"
            )

    return _upload


def versions(client, collection, document_id: str) -> list[dict]:
    response = client.get(f"/api/manage/collections/{collection.pk}/documents/{document_id}/versions")
    assert response.status_code == 200, response.content
    return response.json()


def test_a_changed_file_under_the_same_name_is_the_documents_next_version(cast, collection, upload):
    first = upload(cast.editor, collection, "leave.txt", V1)
    assert first.status_code == 202 and first.json()["version"] == 1
    assert "March 31" in answers(cast.viewer)[0]["text"]

    second = upload(cast.editor, collection, "leave.txt", V2)

    assert second.status_code == 202
    assert second.json()["document_id"] == first.json()["document_id"] and second.json()["version"] == 2
    document = Document.objects.get()  # one document, its id kept
    assert (document.status, document.version) == ("done", 2)
    results = answers(cast.viewer)
    assert results and "June 30" in results[0]["text"]
    assert "March 31" not in texts(results)  # the old version was retired with the publish
    assert results[0]["document"] == {
        "id": str(document.pk),
        "filename": "leave.txt",
        "source_uri": "upload://leave.txt",
        "version": 2,
    }
    listed = versions(cast.viewer, collection, str(document.pk))
    assert [(v["number"], v["status"]) for v in listed] == [(2, "current"), (1, "retired")]
    assert listed[0]["size"] == len(V2) and listed[0]["content_hash"] == hashlib.sha256(V2).hexdigest()
    assert listed[1]["content_hash"] == hashlib.sha256(V1).hexdigest()
    assert listed[1]["published_at"] and listed[1]["retired_at"] == listed[0]["published_at"]
    assert [b.version for b in Build.objects.filter(document=document).order_by("built_at")] == [1, 2]
    # The builds API says it too.
    assert cast.viewer.get(f"/api/manage/collections/{collection.pk}/builds").json()[0]["version"] == 2

    # The same name and the same content again: the document already held, no new version.
    again = upload(cast.editor, collection, "leave.txt", V2)
    assert again.status_code == 200 and again.json() == {
        "document_id": str(document.pk),
        "status": "done",
        "version": 2,
    }
    assert DocumentVersion.objects.count() == 2


def test_the_old_version_answers_while_the_new_one_is_read(cast, collection, upload, queue_only, monkeypatch):
    document_id = upload(cast.editor, collection, "leave.txt", V1).json()["document_id"]

    queued = queue_only(cast.editor, collection, "leave.txt", V2)

    assert queued.status_code == 202 and queued.json()["document_id"] == document_id
    detail = cast.viewer.get(f"/api/manage/collections/{collection.pk}/documents/{document_id}").json()
    assert (detail["status"], detail["version"]) == ("queued", 1)  # waiting for a worker, the old one answering
    assert [(v["number"], v["status"]) for v in versions(cast.viewer, collection, document_id)] == [
        (2, "reading"),
        (1, "current"),
    ]
    assert "March 31" in answers(cast.viewer)[0]["text"]

    # The worker reads, cuts and embeds the new version; just before it publishes, the old one still answers.
    seen_before_publish: list[str] = []
    publish = _ingest.document_publish

    def publish_after_a_look(document, collection, staging):
        assert staging.count > 0  # the new paragraphs are staged and embedded
        seen_before_publish.append(texts(answers(cast.viewer)))
        publish(document, collection, staging)

    monkeypatch.setattr(_ingest, "document_publish", publish_after_a_look)
    document_ingest(document_id=document_id)

    assert "March 31" in seen_before_publish[0] and "June 30" not in seen_before_publish[0]
    after = texts(answers(cast.viewer))
    assert "June 30" in after and "March 31" not in after


def test_replace_false_keeps_both_as_separate_documents(cast, collection, upload):
    first = upload(cast.editor, collection, "leave.txt", V1)
    second = upload(cast.editor, collection, "leave.txt", V2, replace="false")

    assert second.status_code == 202 and second.json()["version"] == 1
    assert second.json()["document_id"] != first.json()["document_id"]
    assert Document.objects.filter(filename="leave.txt").count() == 2
    found = texts(answers(cast.viewer))
    assert "March 31" in found and "June 30" in found
    # Two documents of one name now: which one a new upload is a version of is the editor's call.
    ambiguous = upload(cast.editor, collection, "leave.txt", V1 + b"\nA third text.\n")
    assert ambiguous.status_code == 409
    assert "replace" in ambiguous.json()["detail"] and first.json()["document_id"] in ambiguous.json()["detail"]


def test_a_source_uri_names_the_document_whatever_the_file_is_called(cast, collection, upload):
    source = "https://intranet.example.com/policies/leave"
    first = upload(cast.editor, collection, "leave-2025.txt", V1, source_uri=source)
    second = upload(cast.editor, collection, "leave-2026.txt", V2, source_uri=source)

    assert second.json()["document_id"] == first.json()["document_id"]
    document = Document.objects.get()
    assert (document.filename, document.version, document.source_uri) == ("leave-2026.txt", 2, source)


def test_a_new_version_that_cannot_be_read_leaves_the_old_one_answering(cast, collection, upload):
    good = pdf_bytes([[("Carry-over", "Unused vacation days may be carried over until March 31 of the next year.")]])
    document_id = upload(cast.editor, collection, "leave.pdf", good).json()["document_id"]

    broken = upload(cast.editor, collection, "leave.pdf", b"%PDF-1.7\n1 0 obj << /Type /Catalog >> garbage")

    assert broken.status_code == 202 and broken.json()["document_id"] == document_id
    detail = cast.viewer.get(f"/api/manage/collections/{collection.pk}/documents/{document_id}").json()
    assert detail["status"] == "error" and detail["version"] == 1
    assert detail["error"].startswith("version 2: leave.pdf could not be read")
    assert "version 1 still answers" in detail["error"]
    listed = versions(cast.viewer, collection, document_id)
    assert [(v["number"], v["status"]) for v in listed] == [(2, "error"), (1, "current")]
    assert "could not be read" in listed[0]["error"]
    assert "March 31" in answers(cast.viewer)[0]["text"]
    failed = Build.objects.filter(document_id=document_id).latest("built_at")
    assert (failed.refused, failed.version) == (["leave.pdf"], 2)


def test_a_new_version_waits_while_the_last_one_is_read(cast, collection, queue_only):
    first = queue_only(cast.editor, collection, "leave.txt", V1)

    second = queue_only(cast.editor, collection, "leave.txt", V2)

    assert second.status_code == 409
    assert "being read" in second.json()["detail"] and "replace" in second.json()["detail"]
    document = Document.objects.get(pk=first.json()["document_id"])
    assert document.content_hash == hashlib.sha256(V1).hexdigest()
    assert DocumentVersion.objects.count() == 1


def test_the_previous_original_can_be_downloaded_by_an_editor(cast, collection, upload):
    document_id = upload(cast.editor, collection, "leave.txt", V1).json()["document_id"]
    upload(cast.editor, collection, "leave.txt", V2)
    url = f"/api/manage/collections/{collection.pk}/documents/{document_id}/versions"

    previous = cast.editor.get(f"{url}/1/original")

    assert previous.status_code == 200
    assert b"".join(previous.streaming_content) == V1
    disposition = previous["Content-Disposition"]
    assert disposition == 'attachment; filename="leave.txt"'
    assert str(settings.MEDIA_ROOT) not in str(previous.headers)  # never the path it is stored at
    assert b"".join(cast.editor.get(f"{url}/2/original").streaming_content) == V2
    assert cast.editor.get(f"{url}/3/original").status_code == 404
    # An original is the whole file: a reading key may list the versions but not download them.
    assert cast.viewer.get(url).status_code == 200
    assert cast.viewer.get(f"{url}/1/original").status_code == 403
    assert cast.outsider.get(f"{url}/1/original").status_code == 404
    assert cast.outsider.get(url).status_code == 404
    # An editor key of an agent that does not reach the collection finds nothing there.
    scoped = client_for(api_key_create(tenant=cast.tenant, role="editor", agent=cast.agent).secret)
    assert scoped.get(f"{url}/1/original").status_code == 404
    assert scoped.get(url).status_code == 404


def test_the_admin_uploads_a_new_version_and_lists_and_downloads_every_version(
    cast, collection, staff, django_capture_on_commit_callbacks
):
    def admin_upload(content: bytes, **extra):
        file = io.BytesIO(content)
        file.name = "leave.txt"
        with django_capture_on_commit_callbacks(execute=True):
            return staff.post(
                "/admin/collections_app/document/add/",
                {"collection": collection.pk, "upload": file, "replace": "on", **extra},
            )

    admin_upload(V1)
    document = Document.objects.get()
    response = admin_upload(V2)

    assert response.status_code == 302 and str(document.pk) in response["Location"]
    page = staff.get(response["Location"]).content.decode()
    assert "version 2 is being read" in page  # the message, shown once
    document.refresh_from_db()
    assert (Document.objects.count(), document.version) == (1, 2)
    page = staff.get(f"/admin/collections_app/document/{document.pk}/change/").content.decode()
    assert "Versions" in page and "retired" in page and "current" in page
    download = staff.get(f"/admin/collections_app/document/{document.pk}/download/?version=1")
    assert download.status_code == 200 and b"".join(download.streaming_content) == V1
    # A version it never had: back on the document's page, saying so (not a bare 404).
    missing = staff.get(f"/admin/collections_app/document/{document.pk}/download/?version=7", follow=True)
    assert missing.redirect_chain[-1][1] == 302 and "has no version 7" in missing.content.decode()

    # Unticked: a document of its own.
    admin_upload(V1 + b"\nAnother text.\n", replace="")
    assert Document.objects.count() == 2
