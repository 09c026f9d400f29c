"""Originals live under KB_STORAGE_DIR; a worker that cannot find one says which setting, never a path.

And a second delivery of an ingestion task (a recovery's, on the Redis broker, while another cluster still
had it) does nothing once the document is done: no document is ingested twice.
"""

from __future__ import annotations

import io
from pathlib import Path

from django.conf import settings

from collections_app.models import Build, Document, DocumentStatus
from collections_app.services.documents import document_create, document_ingest
from collections_app.tasks import ingest_document

TEXT = b"# Lanterns\n\nLanterns are kept on the second shelf of the cellar."


def test_an_original_missing_from_the_storage_folder_ends_in_error_naming_kb_storage_dir(collection):
    created = document_create(collection=collection, filename="cellar.md", content=io.BytesIO(TEXT), queue=False)
    stored = Path(created.document.file.path)
    assert stored.is_relative_to(settings.MEDIA_ROOT)  # KB_STORAGE_DIR: where originals go
    stored.unlink()  # what a worker on another machine sees when the folder is not shared

    document_ingest(document_id=str(created.document.pk))

    document = Document.objects.get(pk=created.document.pk)
    assert document.status == DocumentStatus.ERROR
    assert "KB_STORAGE_DIR" in document.error and "shared filesystem" in document.error
    assert "cellar.md" in document.error
    assert str(settings.MEDIA_ROOT) not in document.error and "not found" not in document.error.lower()


def test_kb_storage_dir_is_where_uploads_are_stored(collection, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "shared"
    created = document_create(collection=collection, filename="cellar.md", content=io.BytesIO(TEXT), queue=False)
    assert Path(created.document.file.path).is_relative_to(tmp_path / "shared")


def test_a_second_delivery_of_a_finished_ingestion_builds_nothing_again(collection, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        created = document_create(collection=collection, filename="cellar.md", content=io.BytesIO(TEXT))
    document = Document.objects.get(pk=created.document.pk)
    assert document.status == DocumentStatus.DONE
    builds = Build.objects.filter(document=document).count()

    ingest_document(str(document.pk))  # the same task, delivered again

    assert Build.objects.filter(document=document).count() == builds
    assert Document.objects.get(pk=document.pk).status == DocumentStatus.DONE
