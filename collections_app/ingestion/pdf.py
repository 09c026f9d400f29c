"""PDF text with pdfplumber: pages kept, headings found by font size.

A line set in a clearly larger font than the body text, and short, is a
heading; distinct heading sizes give the levels (largest = outermost).
"""

from __future__ import annotations

import statistics
from pathlib import Path

from .blocks import Block

_HEADING_RATIO = 1.15
_HEADING_MAX_CHARS = 120


def parse_pdf(path: Path) -> list[Block]:
    import pdfplumber

    pages: list[list[tuple[str, float, float, float]]] = []  # (text, size, top, bottom)
    with pdfplumber.open(path) as pdf:
        for page in pdf.pages:
            lines = []
            for line in page.extract_text_lines(
                layout=False, strip=True, return_chars=True
            ):
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
        return []
    body = statistics.median(all_sizes)
    heading_sizes = sorted(
        {
            round(size, 1)
            for lines in pages
            for (text, size, _, _) in lines
            if _is_heading(text, size, body)
        },
        reverse=True,
    )

    blocks: list[Block] = []
    trail: list[str] = []
    for page_number, lines in enumerate(pages, start=1):
        paragraph: list[str] = []
        last_bottom: float | None = None
        last_height = 0.0

        def flush() -> None:
            if paragraph:
                blocks.append(
                    Block(
                        text=" ".join(paragraph),
                        kind="paragraph",
                        page=page_number,
                        section=list(trail),
                    )
                )
                paragraph.clear()

        for text, size, top, bottom in lines:
            if _is_heading(text, size, body):
                flush()
                depth = heading_sizes.index(round(size, 1))
                trail = [*trail[:depth], text]
                blocks.append(
                    Block(
                        text=text, kind="heading", page=page_number, section=list(trail)
                    )
                )
                last_bottom = bottom
                continue
            # A vertical gap larger than a line's height starts a new paragraph.
            if (
                last_bottom is not None
                and top - last_bottom > max(last_height, bottom - top) * 0.8
            ):
                flush()
            paragraph.append(text)
            last_bottom, last_height = bottom, bottom - top
        flush()
    return blocks


def _is_heading(text: str, size: float, body: float) -> bool:
    return size >= body * _HEADING_RATIO and len(text) <= _HEADING_MAX_CHARS
