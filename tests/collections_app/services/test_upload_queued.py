"""A document waiting for a worker says `queued` (not "parsing 0 %"), in the API and in the admin's list."""

from __future__ import annotations

import io
import re

from collections_app.models import Document, DocumentStatus
from collections_app.services.documents import document_create, document_ingest


def _post(client, collection, filename: str, content: bytes):
    file = io.BytesIO(content)
    file.name = filename
    return client.post(f"/api/manage/collections/{collection.pk}/documents", {"file": file}, format="multipart")


def test_an_upload_waiting_for_a_worker_is_queued_in_the_api_and_the_admin_list(
    cast, collection, staff, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as tasks:  # no worker has taken it yet
        answer = _post(cast.editor, collection, "garage.txt", b"Bicycles are parked in the garage.")

    assert answer.status_code == 202 and answer.json()["status"] == "queued"
    document_id = answer.json()["document_id"]
    detail = cast.viewer.get(f"/api/manage/collections/{collection.pk}/documents/{document_id}").json()
    assert (detail["status"], detail["progress"]) == ("queued", 0)
    listed = staff.get("/admin/collections_app/document/").content.decode()
    cells = dict(
        re.findall(rf'data-kb-doc="{document_id}" data-kb-field="(\w+)" data-kb-in-flight="1">(.*?)</span>', listed)
    )
    assert "queued" in cells["status"] and cells["progress"] == "waiting for a worker"

    for task in tasks:  # the worker takes it: parsing while read, then done
        task()
    assert Document.objects.get(pk=document_id).status == DocumentStatus.DONE


def test_a_failed_file_uploaded_again_waits_queued_for_its_retry(cast, collection, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        first = _post(cast.editor, collection, "empty.txt", b"")
    assert Document.objects.get(pk=first.json()["document_id"]).status == DocumentStatus.ERROR

    with django_capture_on_commit_callbacks(execute=False):
        again = _post(cast.editor, collection, "empty.txt", b"")

    assert again.json()["status"] == "queued"


def test_a_document_read_at_once_by_its_caller_starts_parsing(collection):
    # A folder sync ingests in its own run (queue=False): nothing waits for a worker, so it is never `queued`.
    held = document_create(collection=collection, filename="a.txt", content=io.BytesIO(b"Alpha beta."), queue=False)
    assert held.document.status == DocumentStatus.PARSING
    document_ingest(document_id=str(held.document.pk))
    assert Document.objects.get(pk=held.document.pk).status == DocumentStatus.DONE


def test_a_new_version_waiting_for_a_worker_is_queued_not_parsing(
    cast, collection, staff, django_capture_on_commit_callbacks
):
    """The walk (issue 41): a changed file of the same name showed "parsing 0%" on the document's page before any
    worker had taken it."""
    with django_capture_on_commit_callbacks(execute=True):
        document_id = _post(cast.editor, collection, "garage.txt", b"Bicycles are parked in the garage.").json()[
            "document_id"
        ]
    with django_capture_on_commit_callbacks(execute=False) as tasks:
        file = io.BytesIO(b"Bicycles are parked in the covered rack.")
        file.name = "garage.txt"
        answer = cast.editor.post(
            f"/api/manage/collections/{collection.pk}/documents", {"file": file, "replace": True}, format="multipart"
        )

    assert answer.status_code == 202 and answer.json()["document_id"] == document_id
    assert Document.objects.get(pk=document_id).status == DocumentStatus.QUEUED
    page = staff.get(f"/admin/collections_app/document/{document_id}/change/").content.decode()
    assert "waiting for a worker" in page
    for task in tasks:
        task()
    assert Document.objects.get(pk=document_id).status == DocumentStatus.DONE
