"""A document's extent, read cheaply before it is parsed: pages, pages to read by OCR, rows.

Each count is what the format states about itself, read without rendering or loading the content:
- PDF: the page tree's count (pypdfium2 opens the cross-reference table and the page tree only); scanned pages
  (no text, something drawn) are counted page by page only for a short PDF, where the count can change the
  decision that a document is large (services/documents/_lane.py);
- TIFF: its frames (each is a page read by OCR); another image is one page read by OCR;
- PPTX: its slides, from the package's listing;
- XLSX: each sheet's declared size (its <dimension>, read from the first bytes of the sheet's XML; the readers
  count the rows again while streaming them, so a sheet that declares less is still held to the budget);
- CSV/TSV: its lines, counted without decoding (at least its rows, more when a quoted cell spans lines);
- ODS: its rows that hold something, streamed from content.xml (each row as many times as it is declared),
  before odfpy loads the whole document tree;
- DOCX, HTML and EPUB: pages by a page equivalent, PAGE_CHARS characters of their text (a DOCX's <w:t> runs, an
  HTML page's or each EPUB chapter's body text without scripts and styles), streamed or parsed by lxml without
  the layout work of the parser (docs/DECISIONS.md, "Budgets for every document").

`check_extent` refuses a document over its pages or declared rows (budgets.py), before anything is parsed.
"""

from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from xml.etree.ElementTree import Element

from .budgets import Budgets, pages_of_text_over, pages_over, rows_over
from .formats import extension_of, family_of

# Scanned pages are counted for PDFs this short (counting opens each page: ~1-5 ms a page).
SCAN_COUNT_PAGES = 200
_DIMENSION = re.compile(rb'<dimension\s+ref="[A-Z]+\d+(?::[A-Z]+(\d+))?"')
_SLIDE = re.compile(r"^ppt/slides/slide\d+\.xml$")
_SHEET = re.compile(r"^xl/worksheets/[^/]+\.xml$")
# One page equivalent of a document that has no pages of its own: about a printed page of prose (A4, 11 pt:
# 2,500-3,500 characters with spaces), so KB_MAX_PAGES (2,000) is some 6 million characters.
PAGE_CHARS = 3000
_TEXT_KINDS = {".docx": "Word document", ".html": "HTML page", ".htm": "HTML page", ".epub": "EPUB book"}
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_TABLE = "{urn:oasis:names:tc:opendocument:xmlns:table:1.0}"
_OFFICE = "{urn:oasis:names:tc:opendocument:xmlns:office:1.0}"


@dataclass(frozen=True)
class Extent:
    kind: str = "file"  # how a person calls it: PDF, presentation, image, spreadsheet, file
    pages: int | None = None
    ocr_pages: int | None = None  # pages that will be read by OCR (None: not counted)
    rows: int | None = None  # declared or counted rows (lines for delimited text); None: not known before parsing
    rows_exact: bool = False  # True: `rows` are rows (a workbook's declared size), not lines
    pages_of_text: bool = False  # True: `pages` are page equivalents (PAGE_CHARS characters), not pages


def document_extent(path: Path, filename: str) -> Extent:
    ext = extension_of(filename)
    family = family_of(filename)
    if family == "pdf":
        return _pdf(path)
    if family == "image":
        return _image(path, ext)
    if ext == ".pptx":
        return _pptx(path)
    if ext == ".xlsx":
        return _xlsx(path)
    if ext in (".csv", ".tsv"):
        return Extent(kind="spreadsheet", rows=_lines(path))
    if ext == ".ods":
        return _ods(path)
    if ext in _TEXT_KINDS:
        return _pages_of_text(path, ext)
    return Extent()


def opened_by_a_library(filename: str) -> bool:
    """Whether reading the extent opens the file with a library in C (pdfium, Pillow, an XML or HTML parser),
    which a hostile file could hold or inflate: then it is read in a bounded child process. The others read a
    zip's listing or a few kilobytes, or count bytes."""
    return family_of(filename) in ("pdf", "image") or extension_of(filename) in (".ods", *_TEXT_KINDS)


def check_extent(extent: Extent, budgets: Budgets) -> None:
    """Refuse a document whose own counts are over its budgets (OverBudget names the limit and its setting)."""
    if extent.pages is not None and extent.pages > budgets.pages:
        if extent.pages_of_text:
            raise pages_of_text_over(extent.kind, extent.pages, PAGE_CHARS, budgets)
        raise pages_over(extent.kind, extent.pages, budgets)
    if extent.rows_exact and extent.rows is not None and extent.rows > budgets.rows:
        raise rows_over(extent.kind, extent.rows, budgets)


def _pdf(path: Path) -> Extent:
    import pypdfium2

    try:
        pdf = pypdfium2.PdfDocument(path)
    except pypdfium2.PdfiumError:
        return Extent(kind="PDF")  # the parser will say what is wrong with it
    try:
        pages = len(pdf)
        scanned = None
        if pages <= SCAN_COUNT_PAGES:
            scanned = sum(_scanned(pdf[index]) for index in range(pages))
        return Extent(kind="PDF", pages=pages, ocr_pages=scanned)
    finally:
        pdf.close()


def _scanned(page) -> bool:  # type: ignore[no-untyped-def]  # pypdfium2's page, imported lazily where it is read
    """No text, and something drawn: what the PDF parser sends to OCR (pdf.py)."""
    try:
        text = page.get_textpage()
        try:
            if text.count_chars() > 0:
                return False
        finally:
            text.close()
        return next(iter(page.get_objects(max_depth=1)), None) is not None
    finally:
        page.close()


def _image(path: Path, ext: str) -> Extent:
    if ext not in (".tif", ".tiff"):
        return Extent(kind="image", pages=1, ocr_pages=1)
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as image:
            frames = int(getattr(image, "n_frames", 1))
    except (UnidentifiedImageError, OSError):
        return Extent(kind="image")
    return Extent(kind="image", pages=frames, ocr_pages=frames)


def _pptx(path: Path) -> Extent:
    try:
        with zipfile.ZipFile(path) as package:
            slides = sum(1 for name in package.namelist() if _SLIDE.match(name))
    except (zipfile.BadZipFile, OSError):
        return Extent(kind="presentation")
    return Extent(kind="presentation", pages=slides)


def _xlsx(path: Path) -> Extent:
    try:
        with zipfile.ZipFile(path) as package:
            sheets = [name for name in package.namelist() if _SHEET.match(name)]
            declared = [_declared_rows(package, name) for name in sheets]
    except (zipfile.BadZipFile, OSError):
        return Extent(kind="spreadsheet")
    if not declared or any(rows is None for rows in declared):
        return Extent(kind="spreadsheet")  # a sheet without a size: the reader counts while it streams
    return Extent(kind="spreadsheet", rows=sum(r for r in declared if r is not None), rows_exact=True)


def _declared_rows(package: zipfile.ZipFile, name: str) -> int | None:
    """The last row of a sheet's <dimension ref="A1:C1048576"/>, from the sheet's first 4 KiB."""
    with package.open(name) as sheet:
        head = sheet.read(4096)
    found = _DIMENSION.search(head)
    if found is None:
        return None
    return int(found.group(1) or 1)


def _lines(path: Path) -> int:
    lines = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(1024 * 1024):
            lines += chunk.count(b"\n")
    return lines


def _ods(path: Path) -> Extent:
    from defusedxml.ElementTree import ParseError, iterparse

    rows = 0
    try:
        with zipfile.ZipFile(path) as package, package.open("content.xml") as content:
            for _event, element in iterparse(content, events=("end",)):
                if element.tag != f"{_TABLE}table-row":
                    continue
                if any(_ods_cell_holds_something(cell) for cell in element):
                    # Every declared repeat counts: a row repeated 5,000,000 times is 5,000,000 rows.
                    rows += int(element.get(f"{_TABLE}number-rows-repeated") or 1)
                element.clear()  # the rows counted are not kept
    except (zipfile.BadZipFile, KeyError, OSError, ParseError, ValueError):
        return Extent(kind="spreadsheet")  # the reader will say what is wrong with it
    return Extent(kind="spreadsheet", rows=rows, rows_exact=True)


def _ods_cell_holds_something(cell: Element) -> bool:
    # As the reader (_sheets._ods_value): a typed value (number, date, boolean) or text that is not blank.
    if cell.get(f"{_OFFICE}value-type") not in (None, "string"):
        return True
    return bool("".join(cell.itertext()).strip())


def _pages_of_text(path: Path, ext: str) -> Extent:
    kind = _TEXT_KINDS[ext]
    try:
        if ext == ".docx":
            chars = _docx_chars(path)
        elif ext == ".epub":
            with zipfile.ZipFile(path) as book:
                chapters = [n for n in book.namelist() if n.lower().endswith((".xhtml", ".html", ".htm"))]
                chars = sum(_html_chars(book.read(name)) for name in chapters)
        else:
            chars = _html_chars(path.read_bytes())
    except Exception:  # a file these readers cannot read: the parser will say what is wrong with it
        return Extent(kind=kind)
    return Extent(kind=kind, pages=-(-chars // PAGE_CHARS), pages_of_text=True)


def _docx_chars(path: Path) -> int:
    from defusedxml.ElementTree import iterparse

    chars = 0
    with zipfile.ZipFile(path) as package, package.open("word/document.xml") as body:
        for _event, element in iterparse(body, events=("end",)):
            if element.tag == f"{_W}t":
                chars += len(element.text or "")
            elif element.tag == f"{_W}p":
                element.clear()  # a paragraph counted is not kept
    return chars


def _html_chars(data: bytes) -> int:
    """Characters of the body text a reader sees, whitespace runs counted as one space."""
    import lxml.html

    if not data.strip():
        return 0
    document = lxml.html.document_fromstring(data)
    for hidden in document.xpath("//script | //style | //head | //noscript | //template"):
        hidden.drop_tree()
    return len(" ".join(document.text_content().split()))
