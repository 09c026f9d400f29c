"""Parsers: stored original → ParseResult (blocks with kind, page, heading trail; warnings; attachments).

One module per family, chosen for the job:
- office and markup formats: `unstructured` (offline with DO_NOT_TRACK and its spaCy model, see _unstructured.py);
- PDF: pdfplumber (unstructured's PDF path imports torch, transformers and onnxruntime even for `fast`,
  and loses headings, which font sizes give back); pages without text go to OCR;
- images: Tesseract (ocr.py);
- spreadsheets and structured data: records (records.py);
- email: the standard library's email parser and python-oxmsg (email.py);
- source files: code kept intact (source.py).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from .blocks import ParseResult
from .errors import NothingReadable
from .formats import extension_of, family_of

Parser = Callable[[Path, str, dict[str, Any]], ParseResult]


# Each parser module is imported on first use: unstructured and pdfplumber take seconds to import, and a
# worker that never sees a PDF should not pay for it.
def _pdf(path: Path, ext: str, options: dict[str, Any]) -> ParseResult:
    from .pdf import parse_pdf

    return parse_pdf(path, ext, options)


def _office(path: Path, ext: str, options: dict[str, Any]) -> ParseResult:
    from ._unstructured import parse_office

    return parse_office(path, ext, options)


def _records(path: Path, ext: str, options: dict[str, Any]) -> ParseResult:
    from .records import parse_records

    return parse_records(path, ext, options)


def _email(path: Path, ext: str, options: dict[str, Any]) -> ParseResult:
    from .email import parse_email

    return parse_email(path, ext, options)


def _image(path: Path, ext: str, options: dict[str, Any]) -> ParseResult:
    from .ocr import parse_image

    return parse_image(path, ext, options)


def _source(path: Path, ext: str, options: dict[str, Any]) -> ParseResult:
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


def parse_document(path: Path, filename: str, options: dict[str, Any] | None = None) -> ParseResult:
    family = family_of(filename)
    if family not in PARSERS:
        raise NothingReadable(f"{filename} is not a file kbsite parses on its own")
    result = parser_for(family)(path, extension_of(filename), options or {})
    result.blocks = [b for b in result.blocks if b.text.strip()]
    if not result.blocks and not result.attachments:
        raise NothingReadable("no text could be read from this file (is it empty, truncated or a scan?)")
    return result
