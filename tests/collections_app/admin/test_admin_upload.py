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


def test_several_files_in_one_submit_each_become_a_document_with_one_message_per_file(
    cast, staff, collection, django_capture_on_commit_callbacks
):
    from tests.files.documents import html_bytes

    first = SimpleUploadedFile("handbook.docx", _docx())
    second = SimpleUploadedFile("delivery.html", html_bytes(HANDBOOK[3:]))
    fake = SimpleUploadedFile("report.docx", b"plain text pretending to be Word " * 40)
    with django_capture_on_commit_callbacks(execute=True):
        response = staff.post(
            "/admin/collections_app/document/add/",
            {"collection": collection.pk, "upload": [first, second, fake]},
            follow=True,
        )

    assert response.status_code == 200
    documents = {d.filename: d for d in Document.objects.filter(collection=collection)}
    assert set(documents) == {"handbook.docx", "delivery.html"}
    assert all(d.status == "done" and d.chunks.exists() for d in documents.values())
    said = [str(m) for m in response.context["messages"]]
    assert "handbook.docx: accepted, queued for ingestion." in said
    assert "delivery.html: accepted, queued for ingestion." in said
    assert any(m.startswith("report.docx: refused — ") for m in said), said
    # Landed on the collection's documents, not on one of them.
    assert response.redirect_chain[-1][0].endswith(f"?collection__id__exact={collection.pk}")

    again = SimpleUploadedFile("handbook-copy.docx", documents["handbook.docx"].file.open("rb").read())
    other = SimpleUploadedFile("notes.txt", b"Parcels are wrapped in recycled paper.")
    response = staff.post(
        "/admin/collections_app/document/add/", {"collection": collection.pk, "upload": [again, other]}, follow=True
    )
    said = [str(m) for m in response.context["messages"]]
    assert "handbook-copy.docx: already held as handbook.docx; nothing added." in said
    assert Document.objects.filter(collection=collection).count() == 3


def test_several_files_that_are_all_refused_keep_the_form_with_each_reason(cast, staff, collection):
    fake = SimpleUploadedFile("report.docx", b"plain text pretending to be Word " * 40)
    empty_zip = SimpleUploadedFile("slides.pptx", b"not a presentation " * 40)
    response = staff.post(
        "/admin/collections_app/document/add/", {"collection": collection.pk, "upload": [fake, empty_zip]}
    )
    page = response.content.decode()
    assert response.status_code == 200
    assert "report.docx: " in page and "slides.pptx: " in page
    assert not Document.objects.exists()


def test_a_source_names_one_file_so_several_files_with_one_are_refused(cast, staff, collection):
    files = [SimpleUploadedFile("a.txt", b"Alpha paragraph."), SimpleUploadedFile("b.txt", b"Beta paragraph.")]
    response = staff.post(
        "/admin/collections_app/document/add/",
        {"collection": collection.pk, "upload": files, "source_uri": "https://example.org/a"},
    )
    assert response.status_code == 200
    assert "A source names one file" in response.content.decode()
    assert not Document.objects.exists()
