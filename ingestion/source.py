"""Source files: code is kept intact, split at blank lines between top-level definitions.

Code is never re-flowed as prose: each block is a run of lines exactly as in
the file, and the chunker packs whole blocks (a block longer than the chunk
size is split at whitespace like any other, which keeps lines readable).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .blocks import Block, ParseResult

# A line that starts a new top-level definition in common languages.
_DEFINITION = re.compile(
    r"^(def |class |async def |function |export |func |fn |pub |impl |struct |enum |interface |type |"
    r"public |private |protected |static |CREATE |ALTER |SELECT |module |package |const |let |var )",
    re.IGNORECASE,
)


def parse_source(path: Path, ext: str, options: dict[str, Any]) -> ParseResult:
    text = path.read_bytes().decode("utf-8", errors="replace")
    section = [path.name]
    blocks: list[Block] = []
    current: list[str] = []
    for line in text.splitlines():
        starts_definition = bool(_DEFINITION.match(line)) and current and not current[-1].strip()
        if starts_definition:
            _flush(blocks, current, section)
            current = []
        current.append(line)
    _flush(blocks, current, section)
    return ParseResult(blocks=blocks)


def _flush(blocks: list[Block], lines: list[str], section: list[str]) -> None:
    code = "\n".join(lines).strip("\n")
    if code.strip():
        blocks.append(Block(text=code, kind="code", page=None, section=list(section)))
