"""PDF text with pdfplumber: pages kept, headings found by font size.

A line set in a clearly larger font than the body text, and short, is a
heading; distinct heading sizes give the levels (largest = outermost).
"""

from __future__ import annotations

import statistics
from pathlib import Path

from .blocks import Block, ParseResult

_HEADING_RATIO = 1.15
_HEADING_MAX_CHARS = 120


def parse_pdf(path: Path, ext: str = ".pdf", options: dict | None = None) -> ParseResult:  # type: ignore[type-arg]
    import pdfplumber

    pages: list[list[tuple[str, float, float, float]]] = []  # (text, size, top, bottom)
    with pdfplumber.open(path) as pdf:
        for page in pdf.pages:
            lines = []
            for line in page.extract_text_lines(layout=False, strip=True, return_chars=True):
                sizes = [c["size"] for c in line["chars"] if c["text"].strip()]
                if not line["text"].strip() or not sizes:
                    continue
                lines.append(
                    (
                        line["text"].strip(),
                        statistics.median(sizes),
                        line["top"],
                        line["bottom"],
                    )
                )
            pages.append(lines)

    all_sizes = [size for lines in pages for (text, size, _, _) in lines for _ in text]
    if not all_sizes:
        return ParseResult(blocks=[])
    body = statistics.median(all_sizes)
    heading_sizes = sorted(
        {round(size, 1) for lines in pages for (text, size, _, _) in lines if _is_heading(text, size, body)},
        reverse=True,
    )

    blocks: list[Block] = []
    trail: list[str] = []
    for page_number, lines in enumerate(pages, start=1):
        paragraph: list[str] = []
        last_bottom: float | None = None
        last_height = 0.0
        for text, size, top, bottom in lines:
            heading = _is_heading(text, size, body)
            # A heading, or a vertical gap larger than a line's height, ends the paragraph.
            gap = last_bottom is not None and top - last_bottom > max(last_height, bottom - top) * 0.8
            if paragraph and (heading or gap):
                blocks.append(Block(" ".join(paragraph), "paragraph", page_number, list(trail)))
                paragraph = []
            if heading:
                depth = heading_sizes.index(round(size, 1))
                trail = [*trail[:depth], text]
                blocks.append(Block(text, "heading", page_number, list(trail)))
            else:
                paragraph.append(text)
                last_height = bottom - top
            last_bottom = bottom
        if paragraph:
            blocks.append(Block(" ".join(paragraph), "paragraph", page_number, list(trail)))
    return ParseResult(blocks=blocks)


def _is_heading(text: str, size: float, body: float) -> bool:
    return size >= body * _HEADING_RATIO and len(text) <= _HEADING_MAX_CHARS
