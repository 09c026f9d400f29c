"""Budgets for the formats earlier rounds left out (issue 39, item 13): the rows of JSON, YAML, XML and .ods records
are counted before the file is loaded whole, and Word, HTML and EPUB documents have a page budget by a page
equivalent (docs/DECISIONS.md, "Budgets for every document"). Budgets are set small so each file is small."""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from collections_app.models import Build, Chunk, Document
from ingestion import _sheets, _structured, _unstructured
from tests.files.documents import docx_bytes, html_bytes
from tests.files.records import ods_bytes

PARAGRAPH = "Goods can be sent back within thirty days of purchase if they are unused and in their box. " * 10


def never_loaded(*args, **kwargs):
    raise AssertionError("the file was loaded whole: its rows budget should have refused it before")


def never_parsed(*args, **kwargs):
    raise AssertionError("the file was parsed: its page budget should have refused it before")


def uploaded(cast, collection, upload, name: str, content: bytes, **options) -> Document:
    extra = {"ingest_options": json.dumps(options)} if options else {}
    response = upload(cast.editor, collection, name, content, **extra)
    assert response.status_code == 202, response.content
    return Document.objects.get(pk=response.json()["document_id"])


def issues(count: int) -> list[dict]:
    return [{"id": n, "title": f"Issue {n}", "owner": {"name": "Ada"}} for n in range(count)]


def xml_issues(count: int) -> bytes:
    items = "".join(f"<issue><id>{n}</id><title>Issue {n}</title></issue>" for n in range(count))
    return f"<tracker><issues>{items}</issues></tracker>".encode()


RECORD_FILES = {
    "json": ("issues.json", lambda n: json.dumps(issues(n)).encode(), {}, "_load_json"),
    "json at a path": ("issues.json", lambda n: json.dumps({"data": {"items": issues(n)}}).encode(),
                       {"records_path": "data.items"}, "_load_json"),
    "yaml": ("issues.yaml", lambda n: "".join(f"- id: {n}\n  title: Issue {n}\n" for n in range(n)).encode(), {},
             "_load_yaml"),
    "yaml documents": ("issues.yaml", lambda n: "".join(f"---\nid: {n}\ntitle: Issue {n}\n" for n in range(n)).encode(),
                       {}, "_load_yaml"),
    "xml": ("issues.xml", xml_issues, {"records_path": "issues.issue"}, "_parse_xml"),
    "xml from its root": ("issues.xml", xml_issues, {"records_path": "tracker.issues.issue"}, "_parse_xml"),
}  # fmt: skip


@pytest.mark.parametrize("kind", RECORD_FILES)
def test_records_over_the_row_budget_end_in_error_before_the_file_is_loaded_whole(
    cast, collection, upload, settings, monkeypatch, kind
):
    settings.KB_MAX_ROWS = 20
    name, content, options, loader = RECORD_FILES[kind]
    monkeypatch.setattr(_structured, loader, never_loaded)

    document = uploaded(cast, collection, upload, name, content(30), **options)

    assert document.status == "error"
    assert document.error == "this file has more than 20 records; the limit is 20 (KB_MAX_ROWS)"
    assert Chunk.objects.filter(document=document).count() == 0


@pytest.mark.parametrize("kind", ["json", "yaml documents", "xml"])
def test_records_within_the_row_budget_are_read(cast, collection, upload, settings, kind):
    settings.KB_MAX_ROWS = 20
    name, content, options, _loader = RECORD_FILES[kind]

    document = uploaded(cast, collection, upload, name, content(20), **options)

    assert document.status == "done", document.error
    assert Chunk.objects.filter(document=document).count() == 20


def test_an_ods_over_the_row_budget_ends_in_error_before_the_workbook_is_loaded(
    cast, collection, upload, settings, monkeypatch
):
    settings.KB_MAX_ROWS = 20
    monkeypatch.setattr(_sheets, "_ods_sheets", never_loaded)
    sheet: list[list[object]] = [["id", "title"], *([n, f"Issue {n}"] for n in range(30))]

    document = uploaded(cast, collection, upload, "issues.ods", ods_bytes({"Issues": sheet, "Empty": [[None]]}))

    assert document.status == "error"
    assert document.error == "this spreadsheet has 31 rows; the limit is 20 (KB_MAX_ROWS)"
    monkeypatch.undo()
    within = uploaded(cast, collection, upload, "few.ods", ods_bytes({"Issues": sheet[:20]}))
    assert within.status == "done", within.error


# --- a page budget for Word, HTML and EPUB -------------------------------------------------------------------


def epub_bytes(chapters: list[str]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as book:
        book.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        book.writestr(
            "META-INF/container.xml",
            '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
            '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
            "</rootfiles></container>",
        )
        manifest = "".join(
            f'<item id="c{n}" href="c{n}.xhtml" media-type="application/xhtml+xml"/>' for n in range(len(chapters))
        )
        spine = "".join(f'<itemref idref="c{n}"/>' for n in range(len(chapters)))
        book.writestr(
            "OEBPS/content.opf",
            '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">'
            '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:identifier id="id">x</dc:identifier>'
            f"<dc:title>Returns</dc:title><dc:language>en</dc:language></metadata><manifest>{manifest}</manifest>"
            f"<spine>{spine}</spine></package>",
        )
        for n, text in enumerate(chapters):
            book.writestr(
                f"OEBPS/c{n}.xhtml",
                '<?xml version="1.0" encoding="utf-8"?><html xmlns="http://www.w3.org/1999/xhtml"><head>'
                f"<title>Chapter {n}</title><style>p {{ margin: 0 }}</style></head><body><h1>Chapter {n}</h1>"
                f"<p>{text}</p></body></html>",
            )
    return out.getvalue()


def pages_of_text(pages: float) -> str:
    chars = int(pages * 3000)
    return (PARAGRAPH * (chars // len(PARAGRAPH) + 1))[:chars]


PAGED = {
    "docx": ("returns.docx", lambda pages: docx_bytes([(1, "Returns", pages_of_text(pages))]), "Word document"),
    "html": ("returns.html", lambda pages: html_bytes([(1, "Returns", pages_of_text(pages))]), "HTML page"),
    "epub": ("returns.epub", lambda pages: epub_bytes([pages_of_text(pages / 2)] * 2), "EPUB book"),
}


@pytest.mark.parametrize("kind", PAGED)
def test_a_long_document_over_the_page_budget_ends_in_error_naming_its_page_equivalent_before_it_is_parsed(
    cast, collection, upload, settings, monkeypatch, kind
):
    settings.KB_MAX_PAGES = 3
    monkeypatch.setattr(_unstructured, "parse_office", never_parsed)
    name, content, what = PAGED[kind]

    document = uploaded(cast, collection, upload, name, content(4.5))

    assert document.status == "error"
    assert document.error == (
        f"this {what} has about 5 pages (3,000 characters of text a page); the limit is 3 (KB_MAX_PAGES)"
    )
    assert Build.objects.get(document=document).refused == [name]


@pytest.mark.parametrize("kind", PAGED)
def test_a_document_within_the_page_budget_is_read(cast, collection, upload, settings, kind):
    settings.KB_MAX_PAGES = 3
    name, content, _what = PAGED[kind]

    document = uploaded(cast, collection, upload, name, content(2.5))

    assert document.status == "done", document.error


# --- declared repeats of an .ods (issue 39 attack, finding 9) ------------------------------------------------


def repeated_ods(*, rows: int = 1, columns: int = 1) -> bytes:
    """A header, then one data row declared `rows` times whose last cell is declared `columns` times: a few
    hundred bytes that say millions of cells."""
    from odf.opendocument import OpenDocumentSpreadsheet
    from odf.table import Table, TableCell, TableRow
    from odf.text import P

    document = OpenDocumentSpreadsheet()
    table = Table(name="Sheet1")
    header = TableRow()
    for name in ("id", "title"):
        cell = TableCell(valuetype="string")
        cell.addElement(P(text=name))
        header.addElement(cell)
    table.addElement(header)
    row = TableRow(numberrowsrepeated=rows)
    first = TableCell(valuetype="float", value=7)
    first.addElement(P(text="7"))
    row.addElement(first)
    last = TableCell(valuetype="string", numbercolumnsrepeated=columns)
    last.addElement(P(text="bicycle"))
    row.addElement(last)
    table.addElement(row)
    document.spreadsheet.addElement(table)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def test_an_ods_row_declared_five_million_times_counts_five_million_rows_against_the_budget(
    cast, collection, upload, settings, monkeypatch
):
    settings.KB_MAX_ROWS = 100_000
    monkeypatch.setattr(_sheets, "_ods_sheets", never_loaded)

    document = uploaded(cast, collection, upload, "repeat.ods", repeated_ods(rows=5_000_000))

    assert document.status == "error"
    assert document.error == "this spreadsheet has 5,000,001 rows; the limit is 100,000 (KB_MAX_ROWS)"


def test_an_ods_row_declared_within_the_budget_is_read_whole_not_cut(cast, collection, upload, settings, monkeypatch):
    settings.KB_MAX_ROWS = 20
    monkeypatch.setattr(_sheets, "ODS_MAX_REPEAT", 5)  # the cap a style's "all rows" meets, made small

    document = uploaded(cast, collection, upload, "repeat.ods", repeated_ods(rows=8))

    assert document.status == "done", document.error
    assert Chunk.objects.filter(document=document).count() == 8


def test_an_ods_cell_declared_16000_columns_wide_is_cut_with_a_warning_saying_what_was_left_out(
    cast, collection, upload
):
    document = uploaded(cast, collection, upload, "wide.ods", repeated_ods(rows=3, columns=16_000))

    assert document.status == "done", document.error
    cut = [w for w in document.warnings if "1,024" in w]
    assert len(cut) == 1, document.warnings
    assert "16,001" in cut[0] and "1,024" in cut[0] and "left out" in cut[0] and "Sheet1" in cut[0]
