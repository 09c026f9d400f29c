"""One real file of each document family ingests to `done` with sensible paragraphs."""

from __future__ import annotations

import pytest

from collections_app.models import Chunk, Document
from tests.files.office import epub_bytes, odp_bytes, odt_bytes, pptx_bytes, rtf_bytes

SECTIONS = [
    ("Returns", "Goods can be sent back within thirty days of purchase if they are unused."),
    ("Delivery", "Parcels leave the warehouse every weekday morning and arrive within two days."),
]


def ingested(cast, collection, upload, filename: str, content: bytes) -> Document:
    response = upload(cast.editor, collection, filename, content)
    assert response.status_code == 202, response.content
    document = Document.objects.get(pk=response.json()["document_id"])
    assert document.status == "done", document.error
    return document


@pytest.mark.parametrize(
    ("filename", "content", "has_headings"),
    [
        ("handbook.odt", odt_bytes(SECTIONS), True),
        ("handbook.epub", epub_bytes("Handbook", SECTIONS), True),
        ("handbook.rtf", rtf_bytes(SECTIONS), False),
    ],
)
def test_office_documents_ingest_with_their_text(cast, collection, upload, filename, content, has_headings):
    document = ingested(cast, collection, upload, filename, content)

    texts = " ".join(Chunk.objects.filter(document=document).values_list("text", flat=True))
    assert "thirty days" in texts and "warehouse" in texts
    if has_headings:
        assert Chunk.objects.get(document=document, text__contains="warehouse").section == ["Delivery"]


@pytest.mark.parametrize("filename,maker", [("deck.pptx", pptx_bytes), ("deck.odp", odp_bytes)])
def test_slides_are_recorded_as_pages(cast, collection, upload, filename, maker):
    document = ingested(cast, collection, upload, filename, maker(SECTIONS))

    assert Chunk.objects.get(document=document, text__contains="thirty days").page == 1
    delivery = Chunk.objects.get(document=document, text__contains="warehouse")
    assert (delivery.page, delivery.section) == (2, ["Delivery"])


def test_source_code_is_kept_intact_and_split_between_definitions(cast, collection, upload):
    code = (
        "import math\n\n\n"
        "def area(radius):\n    # the circle's area\n    return math.pi * radius ** 2\n\n\n"
        "class Shape:\n    def __init__(self, sides):\n        self.sides = sides\n"
    )
    document = ingested(cast, collection, upload, "shapes.py", code.encode())

    (chunk,) = Chunk.objects.filter(document=document)  # small enough to be one paragraph
    assert "def area(radius):\n    # the circle's area\n    return math.pi * radius ** 2" in chunk.text
    assert "class Shape:\n    def __init__(self, sides):" in chunk.text
    assert chunk.section == ["shapes.py"]


def test_long_code_is_split_between_lines_never_reflowed(cast, collection, upload):
    collection.chunk_size, collection.chunk_overlap = 200, 0
    collection.save()
    code = "\n\n".join(f"def f{i}(x):\n    return x + {i}  # step {i}" for i in range(30))
    document = ingested(cast, collection, upload, "steps.py", code.encode())

    chunks = list(Chunk.objects.filter(document=document))
    assert len(chunks) > 1
    for chunk in chunks:
        for line in chunk.text.splitlines():
            assert line == "" or line.startswith(("def f", "    return x + ")), line


@pytest.mark.parametrize(
    ("filename", "content", "really"),
    [
        ("report.pdf", b"PK\x03\x04" + b"\x00" * 40, "a ZIP archive"),
        ("letter.docx", b"<!doctype html><html><body>Error 404</body></html>", "an HTML page"),
        ("slides.pptx", b"%PDF-1.7 not slides", "a PDF"),
        ("photo.png", b"\xff\xd8\xff\xe0 jpeg bytes", "a JPG image"),
        ("sheet.xls", b"<html><table></table></html>", "an HTML page"),
        ("book.epub", b"{\\rtf1 hello}", "an RTF document"),
    ],
)
def test_content_that_contradicts_the_extension_is_refused_naming_what_it_is(
    cast, collection, upload, filename, content, really
):
    response = upload(cast.editor, collection, filename, content)

    assert response.status_code == 400
    assert really in response.json()["file"][0]
    assert not Document.objects.exists()


def test_text_formats_are_never_refused_for_their_content(cast, collection, upload):
    response = upload(cast.editor, collection, "notes.md", b"%PDF-1.4 is how a PDF starts; this note explains it.")
    assert response.status_code == 202


def test_an_unaccepted_extension_names_itself_and_the_accepted_list(cast, collection, upload):
    message = upload(cast.editor, collection, "setup.exe", b"MZ").json()["file"][0]
    assert ".exe" in message and ".xlsx" in message and ".eml" in message and ".jp2" in message
