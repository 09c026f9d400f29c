"""Every file and function the docs point at exists: `path.py`, `path.py: name` and `name()` in docs/*.md.

A pointer that outlived a move sends a reader to the wrong module (`_stages.py` for `keyword_retrieve`, which
is in `_keyword.py`). A path is read from the project root, or as the end of a path in it (the docs write
`services/labels.py` for collections_app/services/labels.py).
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted((ROOT / "docs").glob("*.md"))
SKIPPED = {".venv", "var", "node_modules", ".git"}

# `path.py` or `path.py: name` inside backticks.
FILE_POINTER = re.compile(r"`([\w./-]+\.py)(?::\s*(\w+))?`")
# `name()`: a function by name alone.
CALL_POINTER = re.compile(r"`(\w+)\(\)`")
# Named in the docs as what they are, not as ours: Django's and PostgreSQL's own.
NOT_OURS = {"save", "get_connection_params", "pg_export_snapshot"}


@cache
def python_files() -> tuple[Path, ...]:
    return tuple(p for p in ROOT.rglob("*.py") if not SKIPPED & set(p.relative_to(ROOT).parts))


@cache
def defined_names() -> frozenset[str]:
    names: set[str] = set()
    for path in python_files():
        names.update(re.findall(r"^\s*(?:async\s+)?def\s+(\w+)", path.read_text(errors="replace"), re.M))
    return frozenset(names)


def files_named(pointer: str) -> list[Path]:
    exact = ROOT / pointer
    if exact.is_file():
        return [exact]
    return [p for p in python_files() if p.as_posix().endswith("/" + pointer.lstrip("./"))]


def defines(path: Path, name: str) -> bool:
    pattern = rf"^\s*(?:(?:async\s+)?def|class)\s+{name}\b|^\s*{name}\s*(?::[^=]*)?="
    return re.search(pattern, path.read_text(errors="replace"), re.M) is not None


def pointers() -> list[tuple[str, int, str, str | None]]:
    found = []
    for doc in DOCS:
        for number, line in enumerate(doc.read_text().splitlines(), 1):
            found += [(doc.name, number, path, name) for path, name in FILE_POINTER.findall(line)]
            found += [(doc.name, number, "", name) for name in CALL_POINTER.findall(line)]
    return found


def test_the_docs_point_at_something() -> None:
    assert len([p for p in pointers() if p[2]]) > 50, "the pattern no longer finds the docs' file pointers"


@pytest.mark.parametrize(("doc", "line", "path", "name"), pointers(), ids=lambda v: str(v))
def test_each_pointer_names_what_exists(doc: str, line: int, path: str, name: str | None) -> None:
    where = f"docs/{doc}:{line}"
    if not path:
        assert name in NOT_OURS or name in defined_names(), f"{where}: no function {name}() in the project"
        return
    files = files_named(path)
    assert files, f"{where}: no file {path}"
    if name:
        assert any(defines(f, name) for f in files), f"{where}: {name} is not defined in {path}"


def anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def headings(text: str) -> list[tuple[int, str]]:
    return [(len(m[1]), m[2]) for m in re.finditer(r"^(#{1,6}) (.+)$", text, re.M)]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_link_inside_a_doc_reaches_a_heading(doc: Path) -> None:
    text = re.sub(r"`[^`]*`", "", doc.read_text())  # a link in code is an example, not a link
    anchors = {anchor(title) for _, title in headings(text)}
    broken = sorted({link for link in re.findall(r"\]\(#([^)]+)\)", text) if link not in anchors})
    assert not broken, f"docs/{doc.name} links to no heading: {broken}"


def test_every_section_of_the_decisions_is_in_their_contents() -> None:
    text = (ROOT / "docs" / "DECISIONS.md").read_text()
    contents = text.split("## Contents", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"\]\(#([^)]+)\)", contents))
    sections = [title for level, title in headings(text) if level == 2 and title != "Contents"]
    missing = [title for title in sections if anchor(title) not in listed]
    assert not missing, f"sections missing from the Contents of docs/DECISIONS.md: {missing}"
