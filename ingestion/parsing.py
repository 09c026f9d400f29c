"""Parsers: stored original → ParseResult (blocks with kind, page, heading trail; warnings; attachments).

One module per family, chosen for the job:
- office and markup formats: `unstructured` (offline with DO_NOT_TRACK and its spaCy model, see _unstructured.py);
- PDF: pdfplumber (unstructured's PDF path imports torch, transformers and onnxruntime even for `fast`,
  and loses headings, which font sizes give back); pages without text go to OCR;
- images: Tesseract (ocr.py);
- spreadsheets and structured data: records (records.py);
- email: the standard library's email parser and python-oxmsg (email.py);
- source files: code kept intact (source.py).

With `budgets` (budgets.py), the parsers that can stop early do (pages read by OCR, rows), and no block handed
back is longer than the block budget. `parse_document_bounded` runs the parse in a child process bounded in
memory and time (bounded.py); `document_extent_bounded` reads a document's extent (extent.py) the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from pathlib import Path
from typing import Any

from .blocks import ParseResult
from .bounded import Outcome, run_bounded
from .budgets import Budgets, bounded_blocks
from .errors import NothingReadable
from .extent import Extent, document_extent, opened_by_a_library
from .formats import extension_of, family_of

Parser = Callable[[Path, str, dict[str, Any], Budgets | None], ParseResult]


# Each parser module is imported on first use: unstructured and pdfplumber take seconds to import, and a
# worker that never sees a PDF should not pay for it.
def _pdf(path: Path, ext: str, options: dict[str, Any], budgets: Budgets | None) -> ParseResult:
    from .pdf import parse_pdf

    return parse_pdf(path, ext, options, budgets)


def _office(path: Path, ext: str, options: dict[str, Any], budgets: Budgets | None) -> ParseResult:
    from ._unstructured import parse_office

    return parse_office(path, ext, options)


def _records(path: Path, ext: str, options: dict[str, Any], budgets: Budgets | None) -> ParseResult:
    from .records import parse_records

    return parse_records(path, ext, options, budgets)


def _email(path: Path, ext: str, options: dict[str, Any], budgets: Budgets | None) -> ParseResult:
    from .email import parse_email

    return parse_email(path, ext, options)


def _image(path: Path, ext: str, options: dict[str, Any], budgets: Budgets | None) -> ParseResult:
    from .ocr import parse_image

    return parse_image(path, ext, options, budgets)


def _source(path: Path, ext: str, options: dict[str, Any], budgets: Budgets | None) -> ParseResult:
    from .source import parse_source

    return parse_source(path, ext, options)


# family → the parser for it.
PARSERS: dict[str, Parser] = {
    "pdf": _pdf,
    "office": _office,
    "markup": _office,
    "spreadsheet": _records,
    "structured": _records,
    "email": _email,
    "image": _image,
    "source": _source,
}


def parser_for(family: str) -> Parser:
    return PARSERS[family]


# The module each family's parser lives in, imported by the worker before it forks a child to parse (preload).
_MODULES = {
    "pdf": ".pdf",
    "office": "._unstructured",
    "markup": "._unstructured",
    "spreadsheet": ".records",
    "structured": ".records",
    "email": ".email",
    "image": ".ocr",
    "source": ".source",
}


def parse_document(
    path: Path, filename: str, options: dict[str, Any] | None = None, budgets: Budgets | None = None
) -> ParseResult:
    family = family_of(filename)
    if family not in PARSERS:
        raise NothingReadable(f"{filename} is not a file kbsite parses on its own")
    result = parser_for(family)(path, extension_of(filename), options or {}, budgets)
    result.blocks = [b for b in result.blocks if b.text.strip()]
    if not result.blocks and not result.attachments:
        raise NothingReadable("no text could be read from this file (is it empty, truncated or a scan?)")
    if budgets is not None:
        result.blocks, warnings = bounded_blocks(result.blocks, budgets.block_chars)
        result.warnings += warnings
    return result


def preload(filename: str) -> None:
    """Import the parser of this file's family here, so the children forked to parse start with it loaded
    (unstructured takes seconds to import; each child would pay it again, and the worker never keeps it)."""
    name = _MODULES.get(family_of(filename))
    if name is None:
        return
    module = import_module(name, __package__)
    if hasattr(module, "preload"):  # a parser that imports more on first use says what (_unstructured.py)
        module.preload(extension_of(filename))


def parse_document_bounded(
    path: Path,
    filename: str,
    options: dict[str, Any] | None,
    budgets: Budgets,
    *,
    keep_going: Callable[[], bool] | None = None,
    directory: str | None = None,
) -> Outcome[ParseResult]:
    """parse_document in a child process within the budgets' memory and time (bounded.py)."""
    preload(filename)
    return run_bounded(
        parse_document, path, filename, options, budgets,
        memory_mb=budgets.memory_mb, seconds=budgets.seconds, keep_going=keep_going, directory=directory,
    )  # fmt: skip


def document_extent_bounded(
    path: Path,
    filename: str,
    budgets: Budgets,
    *,
    keep_going: Callable[[], bool] | None = None,
    directory: str | None = None,
) -> Extent:
    """document_extent, in a child process when it opens the file with a library in C (pdfium, Pillow)."""
    if not opened_by_a_library(filename):
        return document_extent(path, filename)
    return run_bounded(
        document_extent, path, filename,
        memory_mb=budgets.memory_mb, seconds=budgets.seconds, keep_going=keep_going, directory=directory,
    ).value  # fmt: skip
