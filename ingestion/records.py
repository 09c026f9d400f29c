"""Spreadsheets, delimited text and structured data: one paragraph per record, or a sheet as one table.

Ingest options (validated by `validate_options`):
- `table_mode`: "records" (default) — one record block per row, which the chunker keeps as a paragraph of
  its own; "sheet" — each sheet as one table block, chunked like any document.
- `column_roles`: {column: role}. Roles: `index` (in the paragraph's text, embedded and keyword-indexed),
  `metadata` (a filterable value, see services/metadata_schema.py), `both`, `ignore`. Columns not named are
  given the role proposed from the header and the first 200 rows; the roles used are stored back on the
  document, so they can be edited (a change re-parses from the original).
- `records_path`: dotted path to the array of objects (JSON/YAML) or repeated elements (XML) to read as
  records; without it a structured file that is not an array of objects is flattened by path.

Readers: _sheets.py (csv, xlsx, xls, ods), _structured.py (json, yaml, xml). Value typing: values.py.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from infra.errors import InvalidIngestOptions

from ._sheets import Table, read_sheets
from ._structured import read_structured
from .blocks import Block, ParseResult
from .budgets import Budgets, rows_over
from .record_count import records_over
from .values import as_date, as_number, as_text, infer_type, is_empty, is_null_marker

ROLES = ("index", "metadata", "both", "ignore")
TABLE_MODES = ("records", "sheet")
PROPOSAL_ROWS = 200
SAMPLES = 3
_STRUCTURED = {".json", ".yaml", ".yml", ".xml"}
# Names that say "identifier": such a column is searched for exactly and filtered on.
_ID_NAME = re.compile(r"(^|[\s_.-])(id|key|code|ref|sku|uuid|no|number|nr)$", re.IGNORECASE)
_CAMEL_ID = re.compile(r"[a-z](Id|ID|Key|Code)$")  # orderId, customerKey
_MAX_WARNINGS = 20


def validate_options(options: dict[str, Any]) -> dict[str, Any]:
    """Clean table_mode, column_roles and records_path, or raise InvalidIngestOptions saying what to send."""
    cleaned: dict[str, Any] = {}
    if "table_mode" in options:
        mode = options["table_mode"]
        if mode not in TABLE_MODES:
            raise InvalidIngestOptions(f"table_mode {mode!r} is not one of: {', '.join(TABLE_MODES)}")
        cleaned["table_mode"] = mode
    if "column_roles" in options:
        roles = options["column_roles"]
        if not isinstance(roles, dict):
            raise InvalidIngestOptions('column_roles must be an object of column name → role, e.g. {"status": "both"}')
        for column, role in roles.items():
            if not isinstance(column, str) or not column.strip():
                raise InvalidIngestOptions("column_roles: a column name is empty")
            if role not in ROLES:
                raise InvalidIngestOptions(
                    f"column_roles: column {column!r} has role {role!r}; roles are {', '.join(ROLES)}"
                )
        cleaned["column_roles"] = {column.strip(): role for column, role in roles.items()}
    if "records_path" in options:
        path = options["records_path"]
        if path is None:
            path = ""
        if not isinstance(path, str) or (path.strip() and not all(p.strip() for p in path.strip().split("."))):
            raise InvalidIngestOptions('records_path must be a dotted path such as "data.items" (or empty)')
        cleaned["records_path"] = path.strip()
    return cleaned


def parse_records(path: Path, ext: str, options: dict[str, Any], budgets: Budgets | None = None) -> ParseResult:
    """Records (or a sheet as a table); more rows than the rows budget is refused (OverBudget, budgets.py)."""
    mode = options.get("table_mode") or "records"
    if ext in _STRUCTURED:
        records_path = options.get("records_path") or ""
        if budgets is not None and records_over(path, ext, records_path, budgets.rows):
            raise rows_over("file", None, budgets, noun="records")  # counted streaming, before loading
        structured = read_structured(path, ext, records_path)
        if not structured.is_records:
            return ParseResult(blocks=structured.blocks, warnings=structured.warnings)
        tables, warnings = structured.tables, structured.warnings
        records = sum(len(table.rows) for table in tables)
        if budgets is not None and records > budgets.rows:
            raise rows_over("file", records, budgets, noun="records")
    else:
        tables, warnings = read_sheets(path, ext, budgets)
        if options.get("records_path"):
            warnings.append("records_path applies to JSON, YAML and XML files; every row of this file is a record")
    columns = column_profiles(tables)
    given = options.get("column_roles") or {}
    unknown = sorted(set(given) - {c["name"] for c in columns})
    if unknown:
        warnings.append(f"column_roles names columns this file does not have: {', '.join(unknown)}")
    for column in columns:
        column["role"] = given.get(column["name"], column["proposed"])
    roles = {c["name"]: c["role"] for c in columns}
    types = {c["name"]: c["type"] for c in columns}
    if mode == "sheet":
        blocks = [b for b in (_table_block(t, roles) for t in tables) if b is not None]
        return ParseResult(blocks=blocks, warnings=warnings, columns=columns)
    result = ParseResult(blocks=[], warnings=warnings, columns=columns)
    _records(tables, roles, types, result)
    return result


# --- column roles -------------------------------------------------------------------------------------------


def column_profiles(tables: list[Table]) -> list[dict[str, Any]]:
    """Each column's name, type (from all its values), proposed role (from the first rows) and samples."""
    values: dict[str, list[Any]] = {}
    first: dict[str, list[Any]] = {}
    for table in tables:
        for index, name in enumerate(table.header):
            column = [row.cells[index] if index < len(row.cells) else None for row in table.rows]
            values.setdefault(name, []).extend(column)
            first.setdefault(name, []).extend(column[: max(0, PROPOSAL_ROWS - len(first.get(name, [])))])
    profiles = []
    for name, column in values.items():
        present = [v for v in column if not is_empty(v)]
        samples = list(dict.fromkeys(_short(as_text(v)) for v in present))[:SAMPLES]
        profiles.append(
            {
                "name": name,
                "type": infer_type(column)["type"],
                "proposed": propose_role(name, first[name]),
                "samples": samples,
            }
        )
    return profiles


def propose_role(name: str, values: list[Any]) -> str:
    """A first guess a person can correct.

    - nothing in it → ignore;
    - long or free text (titles, descriptions) → index: what the paragraph is about;
    - identifiers (unique codes without spaces, or named id/key/code) → both: searched for exactly,
      filtered on, and shown;
    - numbers, dates and short vocabularies (status, priority) → both: filterable, and the paragraph
      still reads "status: open" for the person or agent reading it.
    """
    present = [v for v in values if not is_empty(v)]
    if not present:
        return "ignore"
    texts = [as_text(v) for v in present]
    longest = max(len(t) for t in texts)
    average = sum(len(t) for t in texts) / len(texts)
    if longest > 200 or average > 60:
        return "index"
    entry = infer_type(present)
    if entry["type"] in ("number", "date", "enum"):
        return "both"
    if _ID_NAME.search(name) or _CAMEL_ID.search(name):
        return "both"
    # Unique, short and without spaces: codes, e-mail addresses, ticket keys.
    unique = len(set(texts)) == len(texts) > 1
    if unique and longest <= 40 and not any(" " in t for t in texts):
        return "both"
    return "index"


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 60 else text[:59] + "…"


# --- records ------------------------------------------------------------------------------------------------


def _typed(value: Any, kind: str) -> Any:
    """A metadata value as this file's column type reads it (the collection's schema has the last word)."""
    if is_empty(value) or (kind in ("number", "date") and is_null_marker(value)):
        return None
    if kind == "number":
        return as_number(value)
    if kind == "date":
        return as_date(value)
    return as_text(value)


def _records(tables: list[Table], roles: dict[str, str], types: dict[str, str], result: ParseResult) -> None:
    extra_cells = 0
    for table in tables:
        width = len(table.header)
        for row in table.rows:
            if any(not is_empty(v) for v in row.cells[width:]):
                extra_cells += 1
                if extra_cells <= _MAX_WARNINGS:
                    result.warnings.append(
                        f"{row.where} has more values than the header names ({width} columns); "
                        "the extra values were left out"
                    )
            lines, metadata, values, fallback = [], {}, {}, []
            for name, value in zip(table.header, row.cells, strict=False):
                role = roles.get(name, "index")
                if is_empty(value) or role == "ignore":
                    continue
                line = f"{name}: {as_text(value)}"
                typed = _typed(value, types.get(name, "string"))
                if typed is not None:
                    values[name] = typed
                if role in ("index", "both"):
                    lines.append(line)
                if role in ("metadata", "both"):
                    if typed is not None:
                        metadata[name] = typed
                    fallback.append(line)
            # A row whose indexed columns are all empty still reads as its metadata, so every record
            # keeps its paragraph (1,000 rows are 1,000 paragraphs).
            text = "\n".join(lines or fallback)
            if not text:
                continue
            block = Block(text, "record", page=table.page, section=list(table.section), metadata=metadata)
            result.blocks.append(block)
            result.record_rows.append((block, row.where, values))
    if extra_cells > _MAX_WARNINGS:
        result.warnings.append(f"…and {extra_cells - _MAX_WARNINGS} more rows with more values than the header")


def _table_block(table: Table, roles: dict[str, str]) -> Block | None:
    """The whole sheet as one Markdown table, without its ignored columns."""
    keep = [i for i, name in enumerate(table.header) if roles.get(name) != "ignore"]
    if not keep or not table.rows:
        return None

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |"

    lines = [line([table.header[i] for i in keep]), line(["---"] * len(keep))]
    for row in table.rows:
        cells = [as_text(row.cells[i]) if i < len(row.cells) and not is_empty(row.cells[i]) else "" for i in keep]
        if any(cells):
            lines.append(line(cells))
    return Block("\n".join(lines), "table", page=table.page, section=list(table.section))
