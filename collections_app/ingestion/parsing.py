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
from importlib import import_module
from pathlib import Path
from typing import Any

from .blocks import ParseResult
from .formats import extension_of, family_of


class NothingReadable(ValueError):
    """The file parsed, but no text could be read from it."""


class ParserUnavailable(RuntimeError):
    """A parser needs a program this machine does not have; the message names the install step."""


# family → "module:function" taking (path, ext, options) and returning ParseResult.
PARSERS = {
    "pdf": "collections_app.ingestion.pdf:parse_pdf",
    "office": "collections_app.ingestion._unstructured:parse_office",
    "markup": "collections_app.ingestion._unstructured:parse_office",
    "spreadsheet": "collections_app.ingestion.records:parse_records",
    "structured": "collections_app.ingestion.records:parse_records",
    "email": "collections_app.ingestion.email:parse_email",
    "image": "collections_app.ingestion.ocr:parse_image",
    "source": "collections_app.ingestion.source:parse_source",
}


def parser_for(family: str) -> Callable[[Path, str, dict[str, Any]], ParseResult]:
    module, _, function = PARSERS[family].partition(":")
    return getattr(import_module(module), function)


def parse_document(path: Path, filename: str, options: dict[str, Any] | None = None) -> ParseResult:
    family = family_of(filename)
    if family not in PARSERS:
        raise NothingReadable(f"{filename} is not a file kbsite parses on its own")
    result = parser_for(family)(path, extension_of(filename), options or {})
    result.blocks = [b for b in result.blocks if b.text.strip()]
    if not result.blocks and not result.attachments:
        raise NothingReadable("no text could be read from this file (is it empty, truncated or a scan?)")
    return result
