"""Navigation hubs: README files that are mostly links and headings.

A docs index or an awesome-list README points at pages; it holds little an agent could quote. Its
paragraphs ("Installation", "API reference", one link each) match many questions and answer none, so
folder sources and zip imports skip such a README unless `keep_navigation_readmes` is set, and their
Build says which file was skipped and why. A README with real prose (what the project is, how to
install it) is kept.

The rule is counted on the Markdown as markdown-it (CommonMark, with tables) parses it, by lines:
- a heading's lines are navigation;
- a paragraph, list item or table row is a link line when it holds a link and little else: at most
  `WORDS_BESIDE_A_LINK` words outside its links, or, for a list item that begins with a link (an
  awesome-list entry and its description), at most `WORDS_AFTER_A_LEADING_LINK`; a paragraph of
  several lines each beginning with a link (links without bullets) is links line by line;
- an HTML block of links and images with almost no text (centred logos, badges) is navigation;
- every other line (prose, code, tables of values) is content; blank lines are not counted.
A README is a hub when at least `HUB_SHARE` of its counted lines are navigation, it holds at least
`MIN_LINK_LINES` link lines (a title and one badge do not make an index) and fewer than
`PROSE_WORDS_KEPT` words of prose: a README that explains (what the project is, how to install it)
is kept even when a long list of links follows (Node.js's README lists its whole team).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token

from infra.errors import InvalidIngestOptions

# Names judged (case-insensitive); any other file is always indexed.
README_NAMES = frozenset({"readme.md", "readme.markdown"})
HUB_SHARE = 0.7
MIN_LINK_LINES = 3
WORDS_BESIDE_A_LINK = 12
WORDS_AFTER_A_LEADING_LINK = 30
PROSE_WORDS_KEPT = 150
# A README is judged on its first bytes: an index does not turn into prose after 2 MiB.
JUDGED_BYTES = 2 * 1024 * 1024

OPTION = "keep_navigation_readmes"

_WORD = re.compile(r"\w+")
_URL = re.compile(r"^(?:https?://|www\.)\S+$")
_TAG = re.compile(r"<[^>]*>")
_MARKDOWN = MarkdownIt("commonmark").enable("table")


@dataclass(frozen=True)
class HubVerdict:
    hub: bool
    navigation_lines: int  # headings and link lines
    link_lines: int
    counted_lines: int  # every non-blank line the parser placed in a block
    prose_words: int  # words of the paragraphs, items and rows that are not links

    @property
    def share(self) -> float:
        return self.navigation_lines / self.counted_lines if self.counted_lines else 0.0

    @property
    def reason(self) -> str:
        """Why, for a person: "navigation hub (83 % of its lines are links or headings)"."""
        return f"navigation hub ({round(self.share * 100)} % of its lines are links or headings)"


def is_readme(name: str) -> bool:
    return PurePosixPath(name.replace("\\", "/")).name.lower() in README_NAMES


def is_navigation_hub(text: str) -> HubVerdict:
    """Judge a Markdown text: is it mostly links and headings? Pure: no I/O, no settings."""
    navigation = links = counted = prose = 0
    for kind, inlines, lines in _units(_MARKDOWN.parse(text)):
        counted += lines
        if kind == "heading":
            navigation += lines
        elif kind == "html":
            if inlines:  # a block of links and images with almost no text
                navigation += lines
                links += lines
        elif kind != "code":
            found = _link_lines(inlines, lines, in_list=kind == "item")
            navigation += found
            links += found
            if not found:
                prose += sum(_measure(group)[1] for group in inlines)
    hub = counted > 0 and links >= MIN_LINK_LINES and navigation >= HUB_SHARE * counted and prose < PROSE_WORDS_KEPT
    return HubVerdict(hub=hub, navigation_lines=navigation, link_lines=links, counted_lines=counted, prose_words=prose)


def navigation_hub_reason(name: str, head: bytes) -> str | None:
    """Why a file of a folder or zip is skipped as a navigation hub, or None when it is indexed.

    `head` is the file's first JUDGED_BYTES (or all of it).
    """
    if not is_readme(name):
        return None
    verdict = is_navigation_hub(head[:JUDGED_BYTES].decode("utf-8", errors="replace"))
    return verdict.reason if verdict.hub else None


def skipped_line(path: str, reason: str) -> str:
    """The line a Build and an import's answer carry for a skipped hub (a relative path, never a server path)."""
    return f"{path}: {reason}, not indexed (the ingest option {OPTION} keeps it)"


def validate_options(options: dict[str, Any]) -> dict[str, Any]:
    """The ingest option this module owns: keep_navigation_readmes (bool, default false)."""
    value = options.get(OPTION, False)
    if not isinstance(value, bool):
        raise InvalidIngestOptions(f"{OPTION} must be true or false")
    return {OPTION: value}


# --- counting ---------------------------------------------------------------------------------------------------


def _units(tokens: list[Token]) -> list[tuple[str, list[list[Token]], int]]:
    """(kind, inline children per line group, non-blank lines) for each heading, paragraph, row, code, HTML block."""
    units: list[tuple[str, list[list[Token]], int]] = []
    opened: list[str] = []
    row: list[Token] = []
    row_lines = 0
    for token in tokens:
        if token.nesting == 1:
            opened.append(token.type)
            if token.type == "tr_open":
                row, row_lines = [], _span(token)
        elif token.nesting == -1:
            opened.pop()
            if token.type == "tr_close":
                units.append(("row", [row], row_lines))
        elif token.type == "inline":
            children = token.children or []
            if "heading_open" in opened[-1:]:
                units.append(("heading", [children], _span(token)))
            elif "tr_open" in opened:
                row.extend(children)
            else:
                kind = "item" if "list_item_open" in opened else "paragraph"
                units.append((kind, _split_lines(children), _span(token)))
        elif token.type in ("fence", "code_block"):
            units.append(("code", [], len([line for line in token.content.splitlines() if line.strip()])))
        elif token.type == "html_block":
            lines = len([line for line in token.content.splitlines() if line.strip()])
            decoration = re.search(r"<(?:a|img)\b", token.content, re.I) and _words(_TAG.sub(" ", token.content)) <= 3
            units.append(("html", [[token]] if decoration else [], lines))
    return [unit for unit in units if unit[2] > 0]


def _span(token: Token) -> int:
    return token.map[1] - token.map[0] if token.map else 1


def _split_lines(children: list[Token]) -> list[list[Token]]:
    lines: list[list[Token]] = [[]]
    for child in children:
        if child.type in ("softbreak", "hardbreak"):
            lines.append([])
        else:
            lines[-1].append(child)
    return [line for line in lines if line]


def _link_lines(groups: list[list[Token]], lines: int, *, in_list: bool) -> int:
    """How many of a block's lines are links: all of them, or (line by line) all that begin with one, or none."""
    whole = [child for group in groups for child in group]
    if _is_link_line(whole, entry=in_list):
        return lines
    if len(groups) > 1 and all(_begins_with_link(g) and _is_link_line(g, entry=False) for g in groups):
        return len(groups)
    return 0


def _is_link_line(children: list[Token], *, entry: bool) -> bool:
    """A link with little beside it; a list entry that begins with a link may carry a short description."""
    linked, outside = _measure(children)
    if not linked:
        return False
    limit = WORDS_AFTER_A_LEADING_LINK if entry and _begins_with_link(children) else WORDS_BESIDE_A_LINK
    return outside <= limit


def _measure(children: list[Token]) -> tuple[bool, int]:
    """(holds a link or image, words outside links)."""
    depth, linked, outside = 0, False, 0
    for child in children:
        if child.type == "link_open":
            depth, linked = depth + 1, True
        elif child.type == "link_close":
            depth = max(depth - 1, 0)
        elif child.type == "image":
            linked = True
        elif depth == 0 and child.type in ("text", "code_inline"):
            for word in child.content.split():
                if _URL.match(word):
                    linked = True  # a bare address is a link too
                else:
                    outside += _words(word)
        elif depth == 0 and child.type in ("html_inline",) and re.match(r"<a\b", child.content, re.I):
            depth, linked = depth + 1, True
        elif depth > 0 and child.type == "html_inline" and re.match(r"</a\s*>", child.content, re.I):
            depth -= 1
    return linked, outside


def _begins_with_link(children: list[Token]) -> bool:
    for child in children:
        if child.type in ("em_open", "strong_open") or (
            child.type == "text" and not child.content.strip(" \t*_-–—•·|:[]()")
        ):
            continue  # emphasis, bullets and separators before the link
        if child.type == "text":
            return bool(_URL.match(child.content.split()[0]))  # a bare address first
        return child.type in ("link_open", "image")
    return False


def _words(text: str) -> int:
    return len(_WORD.findall(text))
