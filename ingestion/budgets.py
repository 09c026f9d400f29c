"""Budgets: how much one document may cost a worker, checked as early and as cheaply as its format allows.

A small file can hold a worker for hours (a 3.4 MB PDF of 10,000 near-blank pages, a 14.5 MB workbook of a
million rows, a 1.1 MB Markdown file whose one heading is a million characters long). Each budget is a setting
(kbsite/settings.py) handed in by the services as `Budgets`; the ingestion package reads no settings itself.

- pages (KB_MAX_PAGES): a PDF, a multi-frame TIFF or a presentation with more pages (slides) is refused, the
  count read from the file's page tree or listing before anything is rendered (extent.py); a Word document, an
  HTML page or an EPUB book by its page equivalent (extent.PAGE_CHARS characters of text a page);
- OCR pages (KB_MAX_OCR_PAGES): past this many scanned pages the rest are not read by OCR, and the document's
  warnings name them (a partial read);
- rows (KB_MAX_ROWS): a spreadsheet or records file with more rows is refused: a workbook on its declared size
  (extent.py), every reader while it streams the rows (it stops at the first row over), JSON, YAML and XML
  records counted from the file's event stream before it is loaded (record_count.py);
- block characters (KB_MAX_BLOCK_CHARS): no block the chunker sees is longer (`bounded_blocks`); a heading
  longer than HEADING_MAX_CHARS is no heading (it would be carried in the heading trail of every paragraph
  beneath it, and embedded with each of them);
- parser memory (KB_PARSE_MEMORY_MB) and wall time (KB_PARSE_SECONDS): the parser runs in a child process
  bounded by both (bounded.py).

Every message names the limit and its setting, so whoever reads it knows what to change.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace

from .blocks import HEADING_MAX_CHARS, Block


@dataclass(frozen=True)
class Budgets:
    pages: int
    ocr_pages: int
    rows: int
    block_chars: int
    memory_mb: int
    seconds: float


class OverBudget(ValueError):
    """The document is over one of its budgets; the message names the limit and its setting."""


def pages_over(kind: str, pages: int, budgets: Budgets) -> OverBudget:
    noun = "slides" if kind == "presentation" else "pages"
    return OverBudget(f"this {kind} has {pages:,} {noun}; the limit is {budgets.pages:,} (KB_MAX_PAGES)")


def pages_of_text_over(kind: str, pages: int, page_chars: int, budgets: Budgets) -> OverBudget:
    """A document without pages of its own, counted in page equivalents of `page_chars` characters of text."""
    return OverBudget(
        f"this {kind} has about {pages:,} pages ({page_chars:,} characters of text a page); the limit is "
        f"{budgets.pages:,} (KB_MAX_PAGES)"
    )


def rows_over(kind: str, rows: int | None, budgets: Budgets, noun: str = "rows") -> OverBudget:
    """Rows as the file counts them, its header included; `rows` None: a reader stopped at the first one over.
    A structured file's rows are its records (`noun`)."""
    counted = f"{rows:,} {noun}" if rows is not None else f"more than {budgets.rows:,} {noun}"
    return OverBudget(f"this {kind} has {counted}; the limit is {budgets.rows:,} (KB_MAX_ROWS)")


def seconds_over(budgets: Budgets) -> OverBudget:
    return OverBudget(
        f"reading this file was stopped after {budgets.seconds:,.0f} s; the limit is {budgets.seconds:,.0f} s "
        "(KB_PARSE_SECONDS)"
    )


def memory_over(budgets: Budgets) -> OverBudget:
    return OverBudget(
        f"reading this file needed more memory than allowed; the limit is {budgets.memory_mb:,} MB (KB_PARSE_MEMORY_MB)"
    )


def ocr_pages_skipped(pages: str, budgets: Budgets) -> str:
    return (
        f"page(s) {pages} are scans and were not read: a document has at most {budgets.ocr_pages:,} page(s) "
        "read by OCR (KB_MAX_OCR_PAGES)"
    )


def ocr_pages_out_of_time(pages: str, budgets: Budgets) -> str:
    return (
        f"page(s) {pages} are scans and were not read: reading had used most of its {budgets.seconds:,.0f} s "
        "(KB_PARSE_SECONDS)"
    )


_BUDGET_WARNING = re.compile(r"\((KB_[A-Z_]+|a heading is at most \d+ characters)\)")


def budget_warnings(warnings: Iterable[str]) -> list[str]:
    """The warnings saying a budget left part of a document out or cut it (each names its setting)."""
    return [w for w in warnings if _BUDGET_WARNING.search(w)]


# --- blocks ----------------------------------------------------------------------------------------------------


@dataclass
class BlockBudget:
    """Cuts blocks to the budget and counts what it did, for one warning per kind of cut."""

    block_chars: int
    headings: int = 0
    longest_heading: int = 0
    split: int = 0
    records: int = 0

    def apply(self, blocks: Iterable[Block]) -> Iterator[Block]:
        # Blocks are changed in place (they are the parser's fresh output): a record keeps its identity, by
        # which its row is found for the metadata checks (ParseResult.record_rows).
        for block in blocks:
            if any(len(title) > HEADING_MAX_CHARS for title in block.section):
                block.section = [title for title in block.section if len(title) <= HEADING_MAX_CHARS]
            if block.kind == "heading" and len(block.text) > HEADING_MAX_CHARS:
                self.headings += 1
                self.longest_heading = max(self.longest_heading, len(block.text))
                block.kind = "paragraph"
            if len(block.text) <= self.block_chars:
                yield block
            elif block.kind == "record":
                # A record is one paragraph with its filterable values: cut, never split (its values stay whole).
                self.records += 1
                block.text = block.text[: self.block_chars]
                yield block
            else:
                self.split += 1
                for piece in split_text(block.text, self.block_chars, table=block.kind == "table"):
                    yield replace(block, text=piece)

    def warnings(self) -> list[str]:
        found = []
        if self.headings:
            found.append(
                f"{_count(self.headings, 'heading')} longer than {HEADING_MAX_CHARS} characters (the longest "
                f"{self.longest_heading:,}) read as {'a paragraph' if self.headings == 1 else 'paragraphs'} and "
                f"left out of the heading trail of the text beneath (a heading is at most {HEADING_MAX_CHARS} "
                "characters)"
            )
        if self.split:
            found.append(
                f"{_count(self.split, 'block')} longer than {self.block_chars:,} characters cut into pieces of at "
                "most that size (KB_MAX_BLOCK_CHARS)"
            )
        if self.records:
            found.append(
                f"{_count(self.records, 'record')} longer than {self.block_chars:,} characters cut to that size; "
                "the rest of each was not read (KB_MAX_BLOCK_CHARS)"
            )
        return found


def bounded_blocks(blocks: list[Block], block_chars: int) -> tuple[list[Block], list[str]]:
    """`blocks` within the budget, and the warnings saying what was changed."""
    budget = BlockBudget(block_chars)
    bounded = list(budget.apply(blocks))
    return bounded, budget.warnings()


def split_text(text: str, limit: int, *, table: bool = False) -> Iterator[str]:
    """Pieces of at most `limit` characters, cut at the last line break in the window, else the last space,
    else where the window ends. A table's pieces repeat its header (the first line, and a Markdown rule)."""
    header = ""
    if table:
        lines = text.split("\n", 2)
        rule = len(lines) > 2 and set(lines[1].replace("|", "").replace(" ", "")) <= set("-:") and "-" in lines[1]
        header = "\n".join(lines[:2] if rule else lines[:1]) + "\n"
        if len(header) > limit // 2:
            header = ""  # a header that long is content, not a header to repeat
        else:
            text = text[len(header) :]
    room = limit - len(header)
    start = 0
    while start < len(text):
        if text[start].isspace():  # a piece never starts with the space or line break it was cut at
            start += 1
            continue
        end = min(len(text), start + room)
        if end < len(text):
            cut = text.rfind("\n", start + room // 2, end)
            if cut < 0:
                cut = text.rfind(" ", start + room // 2, end)
            if cut > start:
                end = cut
        piece = text[start:end].strip()
        if piece:
            yield header + piece
        start = end


def _count(n: int, noun: str) -> str:
    return f"1 {noun}" if n == 1 else f"{n:,} {noun}s"
