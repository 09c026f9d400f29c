"""The collection format (DSL 0.31) as one SQLite file: its tables, and the checks a file must pass to be read.

    store_meta         key/value: schema_version, and (ignored by other readers) kbsite.settings
    agents_chunks      one row per paragraph and agent: agent_id, collection, document, ordinal, text,
                       vector (float32 little-endian), dims, language, page, section, metadata, labels
    collection_built   one row per collection and agent: model, dimensions, method, built_from, passages,
                       built_at, agent_id, refused (null / [] / names, JSON)
    kb_documents       kbsite's own (other readers ignore it): each document's name, language, labels, metadata
    kb_golden_questions  kbsite's own, written by retrieval through collections_app/hooks.py (other readers
                       ignore it; a file without it imports as before): the collection's golden questions

A table is optional unless REQUIRED_COLUMNS names it, so kbsite's own tables need no new schema_version: an older
file lacks them, and a reader of the format never looks for them.

Reading is defensive: a file comes from outside. It is opened read-only and immutable, with the schema
untrusted; only the tables named here are read, and only when they are tables (a view could compute anything).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from embedding import vector_problem
from infra.errors import Invalid
from infra.validation import (
    MAX_PARAGRAPH_CHARS,
    control_problem,
    json_problem,
    loads_bounded,
    paragraph_text_problem,
    text_problem,
)

SCHEMA_VERSION = "0.31"
SQLITE_HEADER = b"SQLite format 3\x00"

# kbsite's settings of the collection that affect ranking, as a store_meta value other readers ignore.
SETTINGS_KEY = "kbsite.settings"
# How agents_chunks.vector is laid out (store_meta `vector`); a file that names another layout is refused, never
# read as this one. A file without the key is read as this (the DSL's default).
VECTOR_FORMAT = "float32 little-endian"

SCHEMA_SQL = """
CREATE TABLE store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE agents_chunks (
    id INTEGER PRIMARY KEY,
    agent_id TEXT,
    collection TEXT NOT NULL,
    document TEXT NOT NULL,
    ordinal INTEGER NOT NULL,
    text TEXT NOT NULL,
    vector BLOB NOT NULL,
    dims INTEGER NOT NULL,
    language TEXT NOT NULL,
    page INTEGER,
    section TEXT NOT NULL,
    metadata TEXT NOT NULL,
    labels TEXT NOT NULL,
    continues INTEGER,
    document_seq INTEGER
);
CREATE TABLE collection_built (
    collection TEXT NOT NULL,
    agent_id TEXT,
    model TEXT NOT NULL,
    dimensions INTEGER NOT NULL,
    method TEXT NOT NULL,
    built_from TEXT NOT NULL,
    passages INTEGER NOT NULL,
    built_at TEXT NOT NULL,
    refused TEXT
);
CREATE TABLE kb_documents (
    seq INTEGER PRIMARY KEY,
    collection TEXT NOT NULL,
    filename TEXT NOT NULL,
    language TEXT NOT NULL,
    labels TEXT NOT NULL,
    metadata TEXT NOT NULL
);
"""
# Created after the rows are in: one sort instead of a b-tree kept up row by row.
INDEX_SQL = "CREATE INDEX agents_chunks_agent ON agents_chunks (agent_id, collection, id)"

REQUIRED_COLUMNS = {
    "store_meta": {"key", "value"},
    "agents_chunks": {
        "agent_id", "collection", "document", "ordinal", "text", "vector", "dims", "language", "page", "section",
        "metadata", "labels",
    },
    "collection_built": {
        "collection", "agent_id", "model", "dimensions", "method", "built_from", "passages", "built_at",
    },
}  # fmt: skip

# Bounds of what one row may hold: a paragraph is cut far below this (chunk_size is at most 20,000 units); an
# editor's edit, split or merge keeps the same text limit (infra/validation.py), so what exports imports.
MAX_TEXT_CHARS = MAX_PARAGRAPH_CHARS
MAX_DIMS = 16_000  # pgvector's widest vector
MAX_NAME_CHARS = {"collection": 200, "document": 255, "label": 100, "agent_id": 200, "language": 10}
MAX_SECTION_PARTS = 64
MAX_SECTION_PART_CHARS = 2_000
MAX_JSON_CHARS = 64 * 1024


class BadCollectionFile(Invalid):
    """The file cannot be imported as it is; the message names the problem (never a path)."""

    field = "file"


def check_name(value: object, what: str, *, max_chars: int, blank: bool = False, control: bool = True) -> str:
    """The name as stored, or BadCollectionFile naming what is wrong with it.

    A name is free text: it is only ever bound as a parameter, so only what no column or screen can hold is
    refused (its length, NUL, a lone surrogate, a control character). Pattern-matching names for SQL refused
    "Trade Union Select Committee" and "Board minutes; update 2.md" while protecting nothing.
    `control`: False for names that are only recorded, never shown as a name (what a build could not read).
    """
    if not isinstance(value, str):
        raise BadCollectionFile(f"{what} must be text")
    problem = text_problem(value) or (control_problem(value) if control else None)
    if problem:
        raise BadCollectionFile(f"{what} {problem}")
    if not blank and not value.strip():
        raise BadCollectionFile(f"{what} must not be blank")
    if len(value) > max_chars:
        raise BadCollectionFile(f"{what} is too long: at most {max_chars} characters")
    return value


def check_text(value: object, where: str, *, paragraph: bool = True) -> str:
    """`paragraph`: checked as an editor's edit is (not blank), so what imports an edit could have written."""
    if not isinstance(value, str):
        raise BadCollectionFile(f"{where}: the text must be text")
    problem = paragraph_text_problem(value) if paragraph else text_problem(value)
    if problem is None and len(value) > MAX_TEXT_CHARS:
        problem = f"is too long ({len(value)} characters, at most {MAX_TEXT_CHARS})"
    if problem:
        raise BadCollectionFile(f"{where}: the text {problem}")
    return value


def check_json(value: object, where: str, *, kind: type) -> Any:
    if not isinstance(value, str) or len(value) > MAX_JSON_CHARS:
        raise BadCollectionFile(f"{where} must be JSON text of at most {MAX_JSON_CHARS} characters")
    try:
        parsed = loads_bounded(value)  # NaN, Infinity and 1e400 refused here: JSONB holds none of them
    except ValueError as exc:
        raise BadCollectionFile(f"{where} is not JSON a database can hold: {exc}") from None
    if not isinstance(parsed, kind):
        raise BadCollectionFile(f"{where} must be a JSON {'object' if kind is dict else 'array'}")
    problem = json_problem(parsed)
    if problem:
        raise BadCollectionFile(f"{where}{'.' + problem[0] if problem[0] else ''} {problem[1]}")
    return parsed


def check_vector(blob: object, dims: object, where: str) -> np.ndarray:
    if isinstance(dims, bool) or not isinstance(dims, int) or not 1 <= dims <= MAX_DIMS:
        raise BadCollectionFile(f"{where}: dims must be a whole number from 1 to {MAX_DIMS}")
    if not isinstance(blob, bytes):
        raise BadCollectionFile(f"{where}: the vector must be a blob of float32")
    if len(blob) != dims * 4:
        raise BadCollectionFile(f"{where}: the vector holds {len(blob) / 4:g} float32 values but its dims say {dims}")
    vector = np.frombuffer(blob, dtype="<f4")
    problem = vector_problem(vector)
    if problem:
        raise BadCollectionFile(f"{where}: the vector {problem}")
    return vector


def version_tuple(value: str) -> tuple[int, ...] | None:
    if not re.fullmatch(r"\d{1,4}(\.\d{1,4}){0,2}", value or ""):
        return None
    return tuple(int(part) for part in value.split("."))


# A generated column is computed whenever its row is read, by the file's own expression: 32 KB of file whose
# column is hex(zeroblob(300000000)) took 1.9 s and 1.5 GB of the web worker's memory per three rows to check.
# (hidden 2: virtual, 3: stored; functions in them are allowed with trusted_schema off when "innocuous", as these are.)
COMPUTED_COLUMN = """
SELECT m.name FROM sqlite_master m, pragma_table_xinfo(m.name) x
 WHERE m.type = 'table' AND x.hidden IN (2, 3) LIMIT 1
"""


@dataclass
class StoreShape:
    """What opening a file found: its store_meta and which optional columns it has."""

    meta: dict[str, str]
    chunk_columns: set[str] = field(default_factory=set)
    built_columns: set[str] = field(default_factory=set)
    has_documents: bool = False


@contextmanager
def store_open(path: Path) -> Iterator[sqlite3.Connection]:
    """A connection that only reads `path`, as untrusted input (BadCollectionFile when it is not SQLite)."""
    with open(path, "rb") as head:
        if head.read(len(SQLITE_HEADER)) != SQLITE_HEADER:
            raise BadCollectionFile("the file is not an SQLite database (a collection file is one)")
    try:
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
    except sqlite3.Error as exc:
        raise BadCollectionFile("the file cannot be opened as an SQLite database") from exc
    try:
        # No function of the file's own schema (a trigger, a view, a generated column) runs on our behalf.
        connection.execute("PRAGMA trusted_schema = OFF")
        yield connection
    except sqlite3.DatabaseError as exc:
        raise _read_problem(exc) from exc
    finally:
        connection.close()


def _read_problem(exc: sqlite3.DatabaseError) -> BadCollectionFile:
    # A text that is not UTF-8 (a file written by a tool in Latin-1) is a sound file with one wrong value: "damaged"
    # sent its editor looking for a broken disk. sqlite3 names the column (ours: every selected value is aliased)
    # and quotes the text, which is not repeated here.
    found = re.match(r"Could not decode to UTF-8 column '(\w{1,40})'", str(exc))
    if found:
        return BadCollectionFile(
            f"a value of the file's {found[1]} column is not UTF-8 text: a collection file's text is UTF-8 (write or "
            "convert the file's text as UTF-8)"
        )
    return BadCollectionFile(f"the SQLite file is damaged or not a collection file ({type(exc).__name__})")


def store_shape(connection: sqlite3.Connection) -> StoreShape:
    """The file's shape, checked: the tables (as tables, not views), their columns, the schema version."""
    quick = None
    try:
        kinds = dict(connection.execute("SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view')"))
        computed = connection.execute(COMPUTED_COLUMN).fetchone()
        if computed is None:  # quick_check computes every generated column of every row: refused before it runs
            quick = connection.execute("PRAGMA quick_check").fetchone()
    except sqlite3.DatabaseError as exc:
        raise BadCollectionFile("the SQLite file is damaged or unreadable") from exc
    if computed is not None:
        raise BadCollectionFile(
            "the file has a generated column (a value computed when it is read, not stored): a collection file "
            "stores its values, refused"
        )
    if not quick or quick[0] != "ok":
        raise BadCollectionFile("the SQLite file is damaged (its integrity check fails)")
    missing = sorted(name for name in REQUIRED_COLUMNS if kinds.get(name) != "table")
    if missing:
        raise BadCollectionFile(f"the file is not a collection file: table {', '.join(missing)} is missing")
    columns = {}
    for table, needed in REQUIRED_COLUMNS.items():
        found = {row[1] for row in connection.execute(f"PRAGMA table_info({table})")}  # names from our own list
        lacking = sorted(needed - found)
        if lacking:
            raise BadCollectionFile(f"table {table} lacks the column {', '.join(lacking)}")
        columns[table] = found
    meta = {}
    for key, value in connection.execute("SELECT key, value FROM store_meta LIMIT 100"):
        if isinstance(key, str) and isinstance(value, str | int | float):
            meta[key] = str(value)
    version = meta.get("schema_version")
    if version is None:
        raise BadCollectionFile("store_meta holds no schema_version: which schema this is is unknown")
    parsed = version_tuple(version)
    if parsed is None:
        raise BadCollectionFile(f"schema_version {version[:20]!r} is not a version this installation knows")
    if parsed > version_tuple(SCHEMA_VERSION):  # type: ignore[operator]
        raise BadCollectionFile(
            f"schema_version {version} is newer than this installation reads ({SCHEMA_VERSION}): upgrade it first"
        )
    if parsed < (0, 31):
        raise BadCollectionFile(f"schema_version {version} is older than this installation reads ({SCHEMA_VERSION})")
    layout = meta.get("vector", VECTOR_FORMAT)
    if layout.strip().lower() != VECTOR_FORMAT:
        raise BadCollectionFile(
            f"unknown vector format {layout[:40]!r} in store_meta: the accepted format is {VECTOR_FORMAT!r}"
        )
    return StoreShape(
        meta=meta,
        chunk_columns=columns["agents_chunks"],
        built_columns=columns["collection_built"],
        has_documents=kinds.get("kb_documents") == "table",
    )
