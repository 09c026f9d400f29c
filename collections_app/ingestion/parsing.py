"""Parsers: stored original → blocks (text, kind, page, heading trail).

Office and markup formats go through `unstructured`, which serves them offline
(with DO_NOT_TRACK set and its spaCy model installed, see _unstructured.py).
PDFs go through pdfplumber: unstructured's PDF path imports torch,
transformers and onnxruntime even for its `fast` strategy, and its text path
loses headings, which pdfplumber's font sizes give back.
"""

from __future__ import annotations

from pathlib import Path

from .blocks import Block
from .formats import PDF_EXTENSIONS, extension_of
from .pdf import parse_pdf


class NothingReadable(ValueError):
    """The file parsed, but no text could be read from it."""


def parse_document(path: Path, filename: str) -> list[Block]:
    ext = extension_of(filename)
    blocks = parse_pdf(path) if ext in PDF_EXTENSIONS else _parse_with_unstructured(path, ext)
    blocks = [b for b in blocks if b.text.strip()]
    if not blocks:
        raise NothingReadable("no text could be read from this file (is it empty, truncated or a scan?)")
    return blocks


_KINDS = {
    "Title": "heading",
    "ListItem": "list_item",
    "Table": "table",
    "CodeSnippet": "code",
    "Formula": "paragraph",
}
# Page furniture repeats on every page and says nothing about the content.
_SKIPPED = {"Header", "Footer", "PageBreak", "PageNumber", "Image"}


def _parse_with_unstructured(path: Path, ext: str) -> list[Block]:
    from ._unstructured import partition

    elements = partition(path, ext)
    blocks: list[Block] = []
    trail: list[str] = []
    for element in elements:
        category = element.category
        text = (element.text or "").strip()
        if category in _SKIPPED or not text:
            continue
        page = element.metadata.page_number
        kind = _KINDS.get(category, "paragraph")
        if kind == "heading":
            depth = element.metadata.category_depth or 0
            trail = [*trail[:depth], text]
            blocks.append(Block(text=text, kind="heading", page=page, section=list(trail)))
        else:
            blocks.append(Block(text=text, kind=kind, page=page, section=list(trail)))
    return blocks
