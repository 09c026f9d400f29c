"""A document stuck mid-ingest (its worker died) is read again when it is uploaded again."""

from __future__ import annotations

import datetime as dt

from django.utils import timezone

from collections_app.models import Document, DocumentStatus


def test_uploading_a_stuck_document_again_reads_it_again(cast, collection, upload) -> None:
    content = b"Cyclists can lock their bikes in the covered rack next to the main entrance."
    first = upload(cast.editor, collection, "bikes.txt", content)
    # As after a kill -9 mid-ingest: still `parsing`, no paragraphs, no task left in the queue.
    stale = timezone.now() - dt.timedelta(minutes=10)
    Document.objects.filter(pk=first.json()["document_id"]).update(status=DocumentStatus.PARSING, updated_at=stale)
    Document.objects.get(pk=first.json()["document_id"]).chunks.all().delete()

    again = upload(cast.editor, collection, "bikes.txt", content)

    assert again.status_code == 202 and again.json()["document_id"] == first.json()["document_id"]
    document = Document.objects.get(pk=first.json()["document_id"])
    assert document.status == DocumentStatus.DONE and document.chunks.exists()


def test_a_document_being_read_right_now_is_not_read_twice(cast, collection, upload) -> None:
    content = b"Lunch is served between noon and two o'clock."
    first = upload(cast.editor, collection, "lunch.txt", content)
    # Just uploaded and still parsing: its task may not be written yet, so a second upload leaves it alone.
    Document.objects.filter(pk=first.json()["document_id"]).update(status=DocumentStatus.PARSING)

    again = upload(cast.editor, collection, "lunch.txt", content)

    assert again.status_code == 200
    assert Document.objects.get(pk=first.json()["document_id"]).status == DocumentStatus.PARSING
