"""A document imported from a collection file has its paragraphs and no original: nothing offered needs the file
(download, OCR re-parse), its size says so, and Re-ingest says what it reads and rebuilds from those paragraphs.
A document uploaded as a file keeps all of it."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.files import File

from collections_app.models import Chunk, Collection, Document
from collections_app.services.collection_file import collection_export, collection_import
from tests.files.documents import HANDBOOK, html_bytes

pytestmark = pytest.mark.django_db(transaction=True)
ADMIN = "/admin/collections_app"


@pytest.fixture
def imported(cast, collection, upload, tmp_path: Path) -> Document:
    assert upload(cast.editor, collection, "handbook.html", html_bytes(HANDBOOK)).status_code == 202
    path = tmp_path / "handbook.db"
    collection_export(collection=collection, path=path)
    with path.open("rb") as file:
        record = collection_import(tenant=cast.tenant, name="copy", content=File(file, name="handbook.db"))
    copy = Collection.objects.get(pk=record.collection_id)
    document = Document.objects.get(collection=copy)
    assert (document.status, document.has_original) == ("done", False)
    return document


def test_its_page_offers_no_download_and_says_there_is_no_original(staff, imported, collection):
    page = staff.get(f"{ADMIN}/document/{imported.pk}/change/").content.decode()
    assert ">Download original</a>" not in page and ">Re-ingest</a>" in page
    assert "no original (imported)" in page and "0\xa0bytes" not in page
    listed = staff.get(f"{ADMIN}/document/?collection__id__exact={imported.collection_id}").content.decode()
    assert "no original (imported)" in listed and "0\xa0bytes" not in listed

    uploaded = Document.objects.get(collection=collection)
    assert uploaded.has_original
    assert ">Download original</a>" in staff.get(f"{ADMIN}/document/{uploaded.pk}/change/").content.decode()


def test_its_download_link_goes_back_to_its_page_with_the_reason(staff, imported):
    answer = staff.get(f"{ADMIN}/document/{imported.pk}/download/", follow=True)
    assert answer.redirect_chain == [(f"{ADMIN}/document/{imported.pk}/change/", 302)]
    assert "handbook.html has no original to download" in answer.content.decode()


def test_re_ingest_says_it_reads_the_imported_paragraphs_and_rebuilds_from_them(staff, imported):
    page = staff.get(f"{ADMIN}/document/{imported.pk}/reingest/").content.decode()
    assert "the paragraphs it was imported with" in page and "from its original" not in page
    texts = sorted(Chunk.objects.filter(document=imported).values_list("text", flat=True))

    staff.post(f"{ADMIN}/document/{imported.pk}/reingest/")  # the task runs inline once this commits
    imported.refresh_from_db()
    assert (imported.status, imported.error) == ("done", "")
    assert sorted(Chunk.objects.filter(document=imported).values_list("text", flat=True)) == texts


def test_a_re_parse_with_other_ocr_languages_is_refused_with_the_reason(cast, staff, imported):
    answer = cast.editor.patch(
        f"/api/manage/collections/{imported.collection_id}/documents/{imported.pk}/ingest-options",
        {"tesseract_langs": ["eng"], "confirm_reparse": True},
        format="json",
    )
    assert answer.status_code == 409, answer.content
    assert "imported from a collection file and has no original to re-parse" in str(answer.json())
    imported.refresh_from_db()
    assert imported.status == "done" and imported.ingest_options == {}
    assert Document.objects.filter(pk=imported.pk, blocks__isnull=False).exists()  # its paragraphs' source kept

    page = staff.get(f"{ADMIN}/document/{imported.pk}/ocr/", follow=True).content.decode()
    assert "no original to re-parse" in page and "Save and re-parse" not in page


def test_a_document_with_neither_original_nor_its_paragraphs_source_is_not_offered_a_re_ingest(staff, imported):
    Document.objects.filter(pk=imported.pk).update(blocks=None)  # nothing left a re-ingest could read
    page = staff.get(f"{ADMIN}/document/{imported.pk}/change/").content.decode()
    assert ">Re-ingest</a>" not in page
    answer = staff.post(f"{ADMIN}/document/{imported.pk}/reingest/", follow=True)
    assert "cannot be re-ingested: it has no original" in answer.content.decode()
    imported.refresh_from_db()
    assert imported.status == "done"  # nothing queued, nothing failed
