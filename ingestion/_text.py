"""Large .txt and .md files, read as a stream of blocks with memory bounded by the block size.

`unstructured` reads a whole file and builds every element (and spaCy's view of it) in memory: a 60 MB text
file took a worker past 700 MB and more than ten minutes. Above `KB_STREAM_TEXT_ABOVE` bytes (see
services/documents/_read.py) a text file is read here instead, line by line:

- paragraphs are runs of lines between blank lines, their lines joined with a space;
- Markdown: ATX (`# Title`) and setext (underlined) headings build the heading trail, fenced code blocks
  stay code, list items are blocks of their own;
- plain text has no markup to trust, so it is paragraphs only (unstructured's guess of titles needs the
  language model we are avoiding here);
- no block is longer than `block_chars` (BLOCK_CHARS unless the block budget is smaller: a file without blank
  lines, or without line breaks at all, is cut at a line, else at that many characters), so the chunker's work
  per block is bounded too. Headings longer than the budget allows are dealt with by budgets.BlockBudget, as
  for any parser's blocks.

Encoding: a BOM decides (UTF-8, UTF-16); otherwise UTF-8 when the first 64 KiB decode as UTF-8, else
Windows-1252. Bytes that do not decode become U+FFFD rather than failing the whole file.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator
from pathlib import Path

from .blocks import Block

BLOCK_CHARS = 20_000
_SNIFF = 64 * 1024

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_LIST_ITEM = re.compile(r"^ {0,3}(?:[-*+]|\d{1,9}[.)])[ \t]+\S")


def text_encoding(path: Path) -> str:
    with open(path, "rb") as handle:
        head = handle.read(_SNIFF)
    if head.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 3:  # not merely a character cut by the sniff's end
            return "cp1252"
    return "utf-8"


def iter_text_blocks(path: Path, ext: str, block_chars: int = BLOCK_CHARS) -> Iterator[Block]:
    """Blocks of a .txt or .md file in document order, read a line at a time (at most `block_chars` of a line
    at once: a longer line goes on in the next read)."""
    block_chars = max(1, min(block_chars, BLOCK_CHARS))
    markdown = ext == ".md"
    trail: list[str] = []
    lines: list[str] = []  # the paragraph (or list item) being read
    size = 0
    kind = "paragraph"
    fence = ""  # the opening fence while inside a fenced code block

    def flush() -> Iterator[Block]:
        nonlocal size
        if lines:
            joiner = "\n" if kind == "code" else " "
            text = joiner.join(lines) if kind == "code" else joiner.join(line.strip() for line in lines)
            if text.strip():
                yield Block(text=text, kind=kind, section=list(trail))
            lines.clear()
            size = 0

    with open(path, encoding=text_encoding(path), errors="replace", newline=None) as handle:
        while True:
            line = handle.readline(block_chars)
            if not line:
                break
            line = line.rstrip("\n")
            if fence:
                if line.lstrip().startswith(fence):
                    yield from flush()
                    fence, kind = "", "paragraph"
                    continue
            elif not line.strip():
                yield from flush()
                kind = "paragraph"
                continue
            elif markdown:
                heading = _ATX.match(line)
                if heading:
                    yield from flush()
                    kind = "paragraph"
                    title = (heading.group(2) or "").strip()
                    if title:
                        trail = [*trail[: len(heading.group(1)) - 1], title]
                        yield Block(text=title, kind="heading", section=list(trail))
                    continue
                underline = _SETEXT.match(line)
                if underline and not lines:
                    continue  # a thematic break (---, ===) with nothing above it: no content
                if underline and len(lines) == 1 and kind == "paragraph":
                    title = lines[0].strip()
                    lines.clear()
                    size = 0
                    trail = [title] if underline.group(1).startswith("=") else [*trail[:1], title]
                    yield Block(text=title, kind="heading", section=list(trail))
                    continue
                opening = _FENCE.match(line)
                if opening:
                    yield from flush()
                    fence, kind = opening.group(1), "code"
                    continue
                if _LIST_ITEM.match(line):
                    yield from flush()
                    kind = "list_item"
            if size + len(line) > block_chars:
                yield from flush()  # a long run without blank lines goes on in the next block
            lines.append(line)
            size += len(line) + 1
        yield from flush()
