"""The admin's upload form checks the whole file, as the API does (a ZIP package's directory is at its end)."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from collections_app.models import Document
from tests.files.documents import HANDBOOK, docx_bytes
from tests.files.office import pptx_bytes
from tests.files.records import HEADER, issue_rows, xlsx_bytes


def _docx() -> bytes:
    return docx_bytes([(level, heading, body * 3) for level, heading, body in HANDBOOK] * 4)


def _xlsx() -> bytes:
    rows = [[str(row[k]) for k in HEADER] for row in issue_rows(300)]
    return xlsx_bytes({"issues": [HEADER, *rows]})


def _pptx() -> bytes:
    return pptx_bytes([(heading, body) for _, heading, body in HANDBOOK] * 3)


@pytest.mark.parametrize(
    ("filename", "build"),
    [("handbook.docx", _docx), ("issues.xlsx", _xlsx), ("handbook.pptx", _pptx)],
)
def test_a_real_office_file_over_8_kib_is_accepted_and_ingested_from_the_admin(
    cast, staff, collection, django_capture_on_commit_callbacks, filename, build
):
    content = build()
    assert len(content) > 8192  # past the 8 KiB the form once read: the ZIP directory lies beyond it

    file = SimpleUploadedFile(filename, content)
    with django_capture_on_commit_callbacks(execute=True):
        response = staff.post("/admin/collections_app/document/add/", {"collection": collection.pk, "upload": file})

    assert response.status_code == 302, response.content.decode()[:2000]
    document = Document.objects.get()
    assert (document.filename, document.size) == (filename, len(content))
    assert document.status == "done", document.error
    assert document.chunks.exists()


def test_a_zip_named_docx_is_still_refused_from_the_admin(cast, staff, collection):
    import io
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("notes.txt", "x" * 20000)
    file = SimpleUploadedFile("report.docx", out.getvalue())

    response = staff.post("/admin/collections_app/document/add/", {"collection": collection.pk, "upload": file})

    assert response.status_code == 200
    assert "ZIP archive" in response.content.decode()
    assert not Document.objects.exists()


def test_a_file_over_the_limit_is_refused_from_the_admin_before_it_is_stored(cast, staff, collection, settings):
    settings.KB_MAX_UPLOAD_BYTES = 10_000
    file = SimpleUploadedFile("handbook.docx", _docx())

    response = staff.post("/admin/collections_app/document/add/", {"collection": collection.pk, "upload": file})

    assert response.status_code == 200
    assert "larger than the upload limit" in response.content.decode()
    assert not Document.objects.exists()
