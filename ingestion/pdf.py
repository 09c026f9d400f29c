"""PDF text with pdfplumber: pages kept, headings found by font size; scanned pages read by OCR.

A line set in a clearly larger font than the body text, and short, is a
heading; distinct heading sizes give the levels (largest = outermost).

A page with no text layer but something drawn on it (a scan, or text turned
into outlines) is rendered with pypdfium2 at 300 dpi and read by Tesseract in
the document's OCR languages (ocr.py); its paragraphs keep the page number and
the heading trail of the text before them. The `mineru_lang` warning is given
only when OCR ran. On a machine without Tesseract, a PDF with text pages keeps
them and its warnings name the skipped scanned pages and the apt line; a PDF
made only of scans ends in error naming that line.

Budgets (budgets.py): at most `ocr_pages` scanned pages are read by OCR, and none once reading has used
OCR_TIME_SHARE of its wall time; the pages left unread are named in the warnings (a partial read). The page
count itself is checked before parsing (extent.py).
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from .blocks import Block, ParseResult
from .budgets import Budgets, ocr_pages_out_of_time, ocr_pages_skipped
from .errors import ParserUnavailable
from .ocr import OcrPlan, ocr_page, ocr_plan

_HEADING_RATIO = 1.15
_HEADING_MAX_CHARS = 120
# Tesseract reads best at 300 dpi; an A4 page is then about 2,500 × 3,500 pixels.
_OCR_DPI = 300
# OCR stops once reading has used this share of its wall time (KB_PARSE_SECONDS): the pages read so far are kept,
# rather than the whole document lost to the time limit a page later.
OCR_TIME_SHARE = 0.8


def parse_pdf(
    path: Path, ext: str = ".pdf", options: dict | None = None, budgets: Budgets | None = None
) -> ParseResult:
    import pdfplumber

    options = options or {}
    started = time.monotonic()

    pages: list[list[tuple[str, float, float, float]]] = []  # (text, size, top, bottom)
    scanned: list[int] = []  # pages with no text layer but something drawn: scans, or text as outlines
    with pdfplumber.open(path) as pdf:
        for number, page in enumerate(pdf.pages, start=1):
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
            if not lines and any(page.objects.get(kind) for kind in ("image", "curve", "rect", "line")):
                scanned.append(number)
            page.close()  # pdfplumber keeps each page's parsed objects until closed: memory would grow by page

    ocr_text: dict[int, list[str]] = {}
    warnings: list[str] = []
    if scanned:
        ocr_text, warnings = _read_scanned_pages(path, scanned, len(pages), options, budgets, started)

    all_sizes = [size for lines in pages for (text, size, _, _) in lines for _ in text]
    body = statistics.median(all_sizes) if all_sizes else 0.0
    heading_sizes = sorted(
        {round(size, 1) for lines in pages for (text, size, _, _) in lines if _is_heading(text, size, body)},
        reverse=True,
    )

    blocks: list[Block] = []
    trail: list[str] = []
    for page_number, lines in enumerate(pages, start=1):
        blocks.extend(Block(text, "paragraph", page_number, list(trail)) for text in ocr_text.get(page_number, []))
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
    return ParseResult(blocks=blocks, warnings=warnings)


def _read_scanned_pages(
    path: Path,
    numbers: list[int],
    page_count: int,
    options: dict,
    budgets: Budgets | None = None,
    started: float = 0.0,
) -> tuple[dict[int, list[str]], list[str]]:
    """OCR the pages without a text layer: their paragraphs by page number, and warnings for the document."""
    import subprocess

    import pypdfium2

    try:
        plan: OcrPlan = ocr_plan(options)
    except ParserUnavailable as exc:
        if len(numbers) == page_count:
            raise  # nothing but scans: the document cannot be read at all
        # The message names what is missing and the apt line that adds it (never a path).
        return {}, [f"page(s) {_ranges(numbers)} are scans and were not read: {exc}; then re-ingest the document"]
    text: dict[int, list[str]] = {}
    warnings = list(plan.warnings)
    if budgets is not None and len(numbers) > budgets.ocr_pages:
        numbers, over = numbers[: budgets.ocr_pages], numbers[budgets.ocr_pages :]
        warnings.append(ocr_pages_skipped(_ranges(over), budgets))
    pdf = pypdfium2.PdfDocument(path)
    try:
        out_of_time = started + OCR_TIME_SHARE * budgets.seconds if budgets is not None and budgets.seconds else None
        for index, number in enumerate(numbers):
            if budgets is not None and out_of_time is not None and time.monotonic() > out_of_time:
                warnings.append(ocr_pages_out_of_time(_ranges(numbers[index:]), budgets))
                break
            page = pdf[number - 1]
            try:
                image = page.render(scale=_OCR_DPI / 72, grayscale=True).to_pil()
                text[number] = ocr_page(image, plan, dpi=_OCR_DPI)
            except subprocess.TimeoutExpired:
                warnings.append(f"page {number} is a scan that could not be read in time and was skipped")
            finally:
                page.close()
    finally:
        pdf.close()
    return text, warnings


def _ranges(numbers: list[int]) -> str:
    """[1, 2, 3, 7] → "1-3, 7"."""
    runs: list[list[int]] = []
    for number in numbers:
        if runs and number == runs[-1][-1] + 1:
            runs[-1].append(number)
        else:
            runs.append([number])
    return ", ".join(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]) for run in runs)


def _is_heading(text: str, size: float, body: float) -> bool:
    return size >= body * _HEADING_RATIO and len(text) <= _HEADING_MAX_CHARS
