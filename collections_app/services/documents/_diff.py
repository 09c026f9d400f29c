"""What changed between two versions of a document, paragraph by paragraph, with the changed words marked.

    rows = paragraphs_diff(old_paragraphs, new_paragraphs)          # pure: lists of text in, rows out
    diff = document_versions_diff(document=..., old=1, new=2)        # the texts of two versions, compared

Which text is compared: a retired version's paragraphs are not kept (a publish replaces them), only its original
file (_versions.py). So every version is compared as its file reads: the parser's blocks (headings, paragraphs,
list items, tables), each one paragraph of the diff. The version whose blocks the document stores is read from
them; any other version's stored original is parsed again in a child process, within the document budgets and at
most PARSE_SECONDS (a page waits for it). That is the text an editor calls the document's, without the cut into
search paragraphs (which moves with chunk settings, not with the file) and without the editor's own paragraph
edits (which belong to no version).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from django.conf import settings
from django.core.cache import cache

from collections_app.models import Document, DocumentStatus, DocumentVersion
from collections_app.services.documents._read import document_budgets, document_stored_blocks
from ingestion import (
    NothingReadable,
    OutOfMemory,
    OutOfTime,
    OverBudget,
    UnsupportedFile,
    memory_over,
    parse_document_bounded,
)
from ingestion.blocks import Block
from ingestion.errors import ParserUnavailable

# Two paragraphs at least this alike are one paragraph changed; below it, one removed and another added.
ALIKE = 0.5
# A run of changes longer than this on both sides is not paired paragraph by paragraph (that costs len × len
# comparisons): its paragraphs are shown removed, then added.
MAX_PAIRING = 200
# Seconds a page waits for an older version's file to be parsed again (a scanned PDF's OCR can take far longer).
PARSE_SECONDS = 60
# Parsed texts of versions, by their content: a version's file never changes, so its text is kept for a while.
CACHE_SECONDS = 3600

# What the ingestion says for a person (_ingest.py's refusals), shown as it is.
_SAID_AS_THEY_ARE = (NothingReadable, UnsupportedFile, OverBudget, ParserUnavailable)

_WORDS = re.compile(r"\s+|\w+|[^\w\s]")
_TOKENS = re.compile(r"\w+|[^\w\s]")


class VersionsNotComparable(Exception):
    """The two versions cannot be compared (one is unknown, or its original cannot be read); says why."""


@dataclass
class DiffRow:
    """One row of the diff: `same`, `added`, `removed`, `changed`, or `skipped` (`count` unchanged paragraphs
    not shown). `old`/`new`: the paragraph's text on each side (empty where it has none); in a changed row, `marks`
    are the two sides' pieces, each (`same` | `removed` | `added`, text)."""

    kind: str
    old: str = ""
    new: str = ""
    old_number: int | None = None  # the paragraph's place in its version, from 1
    new_number: int | None = None
    old_marks: list[tuple[str, str]] = field(default_factory=list)
    new_marks: list[tuple[str, str]] = field(default_factory=list)
    count: int = 0


def words_diff(old: str, new: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The two texts as pieces, the words only one side has marked (`removed` on the old, `added` on the new)."""
    a, b = _WORDS.findall(old), _WORDS.findall(new)
    old_marks: list[tuple[str, str]] = []
    new_marks: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            old_marks.append(("same", "".join(a[i1:i2])))
            new_marks.append(("same", "".join(b[j1:j2])))
            continue
        if i2 > i1:
            old_marks.append(("removed", "".join(a[i1:i2])))
        if j2 > j1:
            new_marks.append(("added", "".join(b[j1:j2])))
    return _joined(old_marks), _joined(new_marks)


def _joined(marks: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Neighbouring pieces of one kind as one, and a lone space between two marked pieces marked with them: one
    marked phrase, not a word at a time."""
    out: list[tuple[str, str]] = []
    for n, (kind, text) in enumerate(marks):
        between = (
            kind == "same" and text.isspace() and 0 < n < len(marks) - 1 and marks[n - 1][0] == marks[n + 1][0] != kind
        )
        if between:
            kind = marks[n - 1][0]
        if out and out[-1][0] == kind:
            out[-1] = (kind, out[-1][1] + text)
        else:
            out.append((kind, text))
    return out


def paragraphs_diff(old: list[str], new: list[str], *, context: int | None = None) -> list[DiffRow]:
    """The rows that turn `old` into `new`: paragraphs kept, removed, added, or changed (alike enough to be one
    paragraph edited, with its words marked). `context`: keep only that many unchanged paragraphs around each
    change; a longer run of unchanged ones becomes one `skipped` row with their count."""
    rows: list[DiffRow] = []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            rows.extend(
                DiffRow("same", old[i], new[j], i + 1, j + 1) for i, j in zip(range(i1, i2), range(j1, j2), strict=True)
            )
        elif op == "delete":
            rows.extend(DiffRow("removed", old=old[i], old_number=i + 1) for i in range(i1, i2))
        elif op == "insert":
            rows.extend(DiffRow("added", new=new[j], new_number=j + 1) for j in range(j1, j2))
        else:
            rows.extend(_replaced(old, new, i1, i2, j1, j2))
    return rows if context is None else _collapse(rows, context)


def _replaced(old: list[str], new: list[str], i1: int, i2: int, j1: int, j2: int) -> list[DiffRow]:
    """A run of old paragraphs replaced by new ones: paired in order where alike (the most alike pairs that keep
    both sides' order, by dynamic programming), the rest removed or added where they stand."""
    a, b = i2 - i1, j2 - j1
    if a > MAX_PAIRING or b > MAX_PAIRING:
        return [DiffRow("removed", old=old[i], old_number=i + 1) for i in range(i1, i2)] + [
            DiffRow("added", new=new[j], new_number=j + 1) for j in range(j1, j2)
        ]
    alike = [[_alike(old[i1 + x], new[j1 + y]) for y in range(b)] for x in range(a)]
    # best[x][y]: the most likeness pairing old[x:] with new[y:] can keep.
    best = [[0.0] * (b + 1) for _ in range(a + 1)]
    for x in range(a - 1, -1, -1):
        for y in range(b - 1, -1, -1):
            pair = alike[x][y] + best[x + 1][y + 1] if alike[x][y] >= ALIKE else -1.0
            best[x][y] = max(pair, best[x + 1][y], best[x][y + 1])
    rows: list[DiffRow] = []
    x = y = 0
    while x < a or y < b:
        if x < a and y < b and alike[x][y] >= ALIKE and best[x][y] == alike[x][y] + best[x + 1][y + 1]:
            i, j = i1 + x, j1 + y
            old_marks, new_marks = words_diff(old[i], new[j])
            rows.append(DiffRow("changed", old[i], new[j], i + 1, j + 1, old_marks, new_marks))
            x, y = x + 1, y + 1
        elif x < a and (y == b or best[x][y] == best[x + 1][y]):
            rows.append(DiffRow("removed", old=old[i1 + x], old_number=i1 + x + 1))
            x += 1
        else:
            rows.append(DiffRow("added", new=new[j1 + y], new_number=j1 + y + 1))
            y += 1
    return rows


def _alike(old: str, new: str) -> float:
    # On the words and marks only: the spaces between them would make any two sentences look half alike.
    matcher = difflib.SequenceMatcher(None, _TOKENS.findall(old.lower()), _TOKENS.findall(new.lower()), autojunk=False)
    return matcher.quick_ratio() and matcher.ratio()


def _collapse(rows: list[DiffRow], context: int) -> list[DiffRow]:
    changed = [n for n, row in enumerate(rows) if row.kind != "same"]
    keep = {n for c in changed for n in range(c - context, c + context + 1)}
    out: list[DiffRow] = []
    for n, row in enumerate(rows):
        if row.kind != "same" or n in keep:
            out.append(row)
        elif out and out[-1].kind == "skipped":
            out[-1].count += 1
        else:
            out.append(DiffRow("skipped", count=1))
    return out


@dataclass
class VersionsDiff:
    old: DocumentVersion
    new: DocumentVersion
    rows: list[DiffRow]
    added: int
    removed: int
    changed: int


def document_versions_diff(*, document: Document, old: int, new: int, context: int | None = 2) -> VersionsDiff:
    """The diff of version `old` against version `new` of `document` (any two, either order as given).
    VersionsNotComparable says why not, when a version is unknown or its original cannot be read."""
    versions = {v.number: v for v in DocumentVersion.objects.filter(document=document, number__in=[old, new])}
    for number in (old, new):
        if number not in versions:
            raise VersionsNotComparable(f"{document.filename} has no version {number}")
    rows = paragraphs_diff(version_paragraphs(document, versions[old]), version_paragraphs(document, versions[new]))
    counts = {kind: sum(1 for row in rows if row.kind == kind) for kind in ("added", "removed", "changed")}
    if context is not None:
        rows = _collapse(rows, context)
    return VersionsDiff(versions[old], versions[new], rows, counts["added"], counts["removed"], counts["changed"])


def version_paragraphs(document: Document, version: DocumentVersion) -> list[str]:
    """The version's text as its file reads, one entry per block (see the module's docstring)."""
    if version.content_hash == document.content_hash and document.status == DocumentStatus.DONE:
        stored = document_stored_blocks(document)
        if stored is not None:
            return _texts(stored)
    if not version.file.name or not version.file.storage.exists(version.file.name):
        raise VersionsNotComparable(f"the original of version {version.number} is no longer stored")
    key = f"kb:version-text:{version.content_hash}:{_options_key(document)}"
    found = cache.get(key)
    if found is None:
        found = _texts(_parse(document, version))
        cache.set(key, found, CACHE_SECONDS)
    return list(found)


def _options_key(document: Document) -> str:
    return ",".join(f"{k}={document.ingest_options[k]}" for k in sorted(document.ingest_options))[:200]


def _parse(document: Document, version: DocumentVersion) -> list[Block]:
    # A page waits for this parse: at most PARSE_SECONDS, however long an ingestion may read (KB_PARSE_SECONDS).
    # (KB_PARSE_SECONDS = 0 is no limit for an ingestion; a page's still is PARSE_SECONDS.)
    budgets = document_budgets()
    budgets = replace(budgets, seconds=min(budgets.seconds or PARSE_SECONDS, PARSE_SECONDS))
    try:
        outcome = parse_document_bounded(
            Path(version.file.path), version.filename, document.ingest_options, budgets,
            directory=settings.KB_STAGING_DIR or None,
        )  # fmt: skip
    except OutOfTime:
        raise VersionsNotComparable(
            f"reading version {version.number} again takes over {budgets.seconds:,.0f} s, longer than a page waits; "
            "download both versions to compare them"
        ) from None
    except OutOfMemory:
        raise VersionsNotComparable(f"version {version.number} cannot be read: {memory_over(budgets)}") from None
    except _SAID_AS_THEY_ARE as exc:  # a version that could not be read then cannot be now: said, never a 500
        raise VersionsNotComparable(f"version {version.number} cannot be read: {exc}") from None
    except Exception as exc:  # anything else by its kind only (an OS error can carry a path)
        raise VersionsNotComparable(f"version {version.number} cannot be read ({type(exc).__name__})") from None
    return outcome.value.blocks


def _texts(blocks: list[Block]) -> list[str]:
    return [block.text.strip() for block in blocks if block.text.strip()]
