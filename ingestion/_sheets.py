"""Reading tables: delimited text (.csv .tsv) and workbooks (.xlsx .xls .ods) → Table, one per sheet.

Libraries, and why:
- the standard `csv` module for delimited text: exact control over the delimiter, the encoding and the line
  each row starts on (pandas would guess types and lose leading zeros and row numbers, for a big dependency);
- openpyxl in read-only mode for .xlsx: streams rows, so a large workbook is not held in memory;
- xlrd for .xls: the maintained reader of the old binary format (2.x reads nothing else);
- odfpy for .ods: the reference ODF library (pandas' own ODS reader is built on it).

Every row remembers where a person finds it: data rows count from 1 below the header, and the message also
gives the line of the file (CSV) or the row number the spreadsheet shows.

With a rows budget (KB_MAX_ROWS, budgets.py) every reader counts the rows it reads that hold something, the
header included, and stops at the first one over: a workbook is read sheet by sheet and row by row (openpyxl's
read-only mode streams), never loaded whole before it is counted.
"""

from __future__ import annotations

import codecs
import csv
import io
from collections import Counter
from collections.abc import Generator, Iterable
from contextlib import closing
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from pathlib import Path
from typing import Any

from .budgets import Budgets, rows_over
from .errors import NothingReadable

# Longest cell the csv module will read (its default, 128 KiB, refuses long descriptions).
csv.field_size_limit(max(csv.field_size_limit(), 16 * 1024 * 1024))

DELIMITERS = {".csv": [",", ";", "\t", "|"], ".tsv": ["\t", ",", ";", "|"]}
_SNIFF_BYTES = 64 * 1024
_SNIFF_ROWS = 50


@dataclass
class Row:
    cells: list[Any]
    # Where a person finds this row, e.g. "row 7 of the data (line 8 of the file)".
    where: str


@dataclass
class Table:
    header: list[str]
    rows: list[Row]
    page: int | None = None
    section: list[str] = field(default_factory=list)


def read_sheets(path: Path, ext: str, budgets: Budgets | None = None) -> tuple[list[Table], list[str]]:
    counter = _RowCounter(budgets)
    if ext in DELIMITERS:
        return read_delimited(path.read_bytes(), ext, counter)
    if ext == ".xlsx":
        with closing(_xlsx_sheets(path)) as sheets:
            return _read_workbook(sheets, counter)
    if ext == ".xls":
        return _read_workbook(_xls_sheets(path), counter)
    if ext == ".ods":
        notes: list[str] = []  # what the reader left out of what the file declares
        tables, warnings = _read_workbook(_ods_sheets(path, budgets, notes), counter)
        return tables, [*notes, *warnings]
    raise NothingReadable(f"{ext} is not a spreadsheet format")


class _RowCounter:
    """Counts the rows read that hold something; past the budget, refuses the file (OverBudget)."""

    def __init__(self, budgets: Budgets | None) -> None:
        self.budgets = budgets
        self.rows = 0

    def count(self) -> None:
        self.rows += 1
        if self.budgets is not None and self.rows > self.budgets.rows:
            raise rows_over("spreadsheet", None, self.budgets)


# --- delimited text -----------------------------------------------------------------------------------------


def decode_text(data: bytes) -> tuple[str, str]:
    """Text and, when it was not UTF-8, a warning naming the encoding used instead."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16"), ""  # Excel's "Unicode text" export
    try:
        return data.decode("utf-8-sig"), ""  # plain UTF-8, with or without Excel's byte order mark
    except UnicodeDecodeError:
        pass
    # Windows-1252 is what Excel writes on Western Windows (it has € and curly quotes where Latin-1 has
    # control codes); Latin-1 decodes any byte, so it is the last resort.
    for encoding, name in (("cp1252", "Windows-1252"), ("latin-1", "Latin-1 (ISO-8859-1)")):
        try:
            return data.decode(encoding), f"the file is not UTF-8; it was read as {name}"
        except UnicodeDecodeError:
            continue
    raise AssertionError("latin-1 decodes every byte")


def sniff_delimiter(text: str, ext: str) -> str:
    """The candidate that splits the first rows into the same number (>1) of columns most consistently.

    Parsing each candidate with the csv module respects quotes, so a comma inside "a, b" does not count;
    ties go to the extension's own delimiter. csv.Sniffer is not used: it guesses letters as delimiters
    on short samples.
    """
    candidates = DELIMITERS.get(ext, DELIMITERS[".csv"])
    sample = text[:_SNIFF_BYTES]
    if len(text) > _SNIFF_BYTES and "\n" in sample:
        sample = sample[: sample.rindex("\n")]  # never judge a row cut in half
    best, best_score = candidates[0], (0.0, 0)
    for delimiter in candidates:
        try:
            rows = [r for r in csv.reader(io.StringIO(sample, newline=""), delimiter=delimiter) if any(r)]
        except csv.Error:
            continue
        counts = [len(r) for r in rows[:_SNIFF_ROWS]]
        if not counts:
            continue
        width, hits = Counter(counts).most_common(1)[0]
        if width < 2:
            continue
        score = (hits / len(counts), width)
        if score > best_score:
            best, best_score = delimiter, score
    return best


def read_delimited(data: bytes, ext: str, counter: _RowCounter | None = None) -> tuple[list[Table], list[str]]:
    counter = counter or _RowCounter(None)
    text, note = decode_text(data)
    warnings = [note] if note else []
    delimiter = sniff_delimiter(text, ext)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    header: list[str] | None = None
    rows: list[Row] = []
    try:
        while True:
            line = reader.line_num + 1  # the line this row starts on (a quoted cell may span lines)
            try:
                cells = next(reader)
            except StopIteration:
                break
            if not any(cell.strip() for cell in cells):
                continue
            counter.count()
            if header is None:
                header, renamed = clean_header(cells)
                warnings.extend(renamed)
                continue
            rows.append(Row(cells, f"row {len(rows) + 1} of the data (line {line} of the file)"))
    except csv.Error as exc:
        raise NothingReadable(f"the file could not be read as delimited text (line {reader.line_num}: {exc})") from exc
    if header is None:
        return [], warnings
    return [Table(header, rows)], warnings


# --- workbooks ----------------------------------------------------------------------------------------------

# A sheet as the readers below give it: name, then (spreadsheet row number, cells) for each row, read while
# the workbook is open (each sheet's rows before the next sheet is asked for).
Sheet = tuple[str, Iterable[tuple[int, list[Any]]]]


def _read_workbook(sheets: Iterable[Sheet], counter: _RowCounter) -> tuple[list[Table], list[str]]:
    tables: list[Table] = []
    warnings: list[str] = []
    for number, (name, numbered_rows) in enumerate(sheets, start=1):
        header: list[str] | None = None
        rows: list[Row] = []
        for sheet_row, cells in numbered_rows:
            if all(_blank(c) for c in cells):
                continue
            counter.count()
            if header is None:
                header, renamed = clean_header(cells)
                warnings.extend(f"sheet {name}: {w}" for w in renamed)
                continue
            rows.append(Row(cells, f"row {len(rows) + 1} of the data (sheet {name}, row {sheet_row})"))
        if header is not None:
            tables.append(Table(header, rows, page=number, section=[name]))
    return tables, warnings


def _xlsx_sheets(path: Path) -> Generator[Sheet, None, None]:
    """Each sheet with its rows as a stream: the workbook stays open until the generator is closed."""
    import openpyxl

    workbook = openpyxl.load_workbook(path, read_only=True, data_only=True)
    try:
        for sheet in workbook.worksheets:
            # Some writers declare a wrong sheet size; without this, read-only mode would trust it.
            sheet.reset_dimensions()
            rows = sheet.iter_rows(min_row=1, values_only=True)
            yield sheet.title, ((number, [_cell(v) for v in values]) for number, values in enumerate(rows, start=1))
    finally:
        workbook.close()


def _xls_sheets(path: Path) -> list[Sheet]:
    import xlrd

    book = xlrd.open_workbook(str(path), logfile=io.StringIO(), on_demand=True)
    try:
        sheets: list[Sheet] = []
        for index in range(book.nsheets):
            sheet = book.sheet_by_index(index)
            rows = []
            for r in range(sheet.nrows):
                cells = []
                for cell in sheet.row(r):
                    if cell.ctype == xlrd.XL_CELL_DATE:
                        cells.append(_cell(xlrd.xldate_as_datetime(cell.value, book.datemode)))
                    elif cell.ctype == xlrd.XL_CELL_BOOLEAN:
                        cells.append(bool(cell.value))
                    elif cell.ctype in (xlrd.XL_CELL_EMPTY, xlrd.XL_CELL_BLANK, xlrd.XL_CELL_ERROR):
                        cells.append(None)
                    else:
                        cells.append(_cell(cell.value))
                rows.append((r + 1, cells))
            sheets.append((sheet.name, rows))
            book.unload_sheet(index)
        return sheets
    finally:
        book.release_resources()


def _ods_sheets(path: Path, budgets: Budgets | None = None, notes: list[str] | None = None) -> list[Sheet]:
    from odf.namespaces import TABLENS
    from odf.opendocument import load

    document = load(str(path))
    sheets: list[Sheet] = []
    # A row declared more times than the budget allows is refused by its count before (extent.py), and by the
    # row counter here: expanding one past the budget would only be thrown away.
    row_limit = budgets.rows + 1 if budgets is not None else ODS_MAX_REPEAT
    for table in document.spreadsheet.childNodes:
        if table.qname != (TABLENS, "table"):
            continue
        name = table.getAttribute("name") or f"Sheet{len(sheets) + 1}"
        sheets.append((name, list(_ods_rows(table, name, row_limit, notes if notes is not None else []))))
    return sheets


# A style applied to "all rows" repeats an empty row a million times; without a rows budget a row holding
# something is expanded at most this many times (with a warning).
ODS_MAX_REPEAT = 10_000
# The widest row read: a cell declared 16,000 columns wide (a 1.5 KB file) would otherwise be expanded into
# every row it is in. Values past it are left out, with a warning saying which.
ODS_MAX_COLUMNS = 1_024


def _ods_rows(table, name: str, row_limit: int, notes: list[str]):  # type: ignore[no-untyped-def]  # odfpy ships no types: its elements are untyped nodes
    from odf.namespaces import TABLENS

    number = 0
    widest = 0  # the furthest column a value was declared in, past ODS_MAX_COLUMNS
    first_wide: int | None = None
    for row in _ods_row_elements(table):
        repeat = int(row.getAttribute("numberrowsrepeated") or 1)
        cells: list[Any] = []
        declared = 0
        for cell in row.childNodes:
            if cell.qname not in ((TABLENS, "table-cell"), (TABLENS, "covered-table-cell")):
                continue
            value = _ods_value(cell)
            columns = int(cell.getAttribute("numbercolumnsrepeated") or 1)
            room = max(0, ODS_MAX_COLUMNS - len(cells))
            cells.extend([value] * min(columns, room))
            declared += columns
            if columns > room and not _blank(value):
                widest = max(widest, declared)
                first_wide = first_wide or number + 1
        while cells and _blank(cells[-1]):
            cells.pop()
        if not cells:
            number += repeat  # empty rows keep the numbering right without being expanded
            continue
        if repeat > row_limit:
            notes.append(
                f"sheet {name}: row {number + 1} is declared {repeat:,} times; only the first {row_limit:,} were read"
            )
        for _ in range(min(repeat, row_limit)):
            number += 1
            yield number, list(cells)
    if widest:
        notes.append(
            f"sheet {name}: rows hold values up to column {widest:,} (first at row {first_wide}); only the first "
            f"{ODS_MAX_COLUMNS:,} columns are read: the values past column {ODS_MAX_COLUMNS:,} were left out"
        )


def _ods_row_elements(table):  # type: ignore[no-untyped-def]  # odfpy ships no types: its elements are untyped nodes
    """Rows in order, including those inside header-rows and row-groups."""
    from odf.namespaces import TABLENS

    for node in table.childNodes:
        if node.qname == (TABLENS, "table-row"):
            yield node
        elif node.qname in ((TABLENS, "table-header-rows"), (TABLENS, "table-rows"), (TABLENS, "table-row-group")):
            yield from _ods_row_elements(node)


def _ods_value(cell) -> Any:  # type: ignore[no-untyped-def]  # odfpy ships no types: its elements are untyped nodes
    from odf import teletype
    from odf.namespaces import TEXTNS

    kind = cell.getAttribute("valuetype")
    if kind in ("float", "percentage", "currency"):
        return _cell(float(cell.getAttribute("value")))
    if kind == "date":
        value = cell.getAttribute("datevalue")
        try:
            return _cell(datetime.fromisoformat(value))
        except ValueError:
            return value
    if kind == "boolean":
        return cell.getAttribute("booleanvalue") == "true"
    paragraphs = [teletype.extractText(p) for p in cell.childNodes if p.qname == (TEXTNS, "p")]
    return "\n".join(paragraphs).strip() or None


# --- cells and headers --------------------------------------------------------------------------------------


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _cell(value: Any) -> Any:
    """Spreadsheet cell → str | int | float | bool | ISO date string | None."""
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, datetime):
        if value.time() == time(0):
            return value.date().isoformat()
        return value.isoformat(timespec="seconds")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, time):
        return value.isoformat(timespec="seconds")
    if isinstance(value, timedelta):
        return str(value)
    return value


def clean_header(cells: list[Any]) -> tuple[list[str], list[str]]:
    """Column names: blank ones become "column N", repeated ones get a suffix; trailing blanks are dropped."""
    cells = list(cells)
    while cells and _blank(cells[-1]):
        cells.pop()
    names: list[str] = []
    warnings: list[str] = []
    seen: set[str] = set()
    for index, cell in enumerate(cells, start=1):
        name = " ".join(str(_cell(cell) if not _blank(cell) else "").split()) or f"column {index}"
        if name in seen:
            renamed, n = name, 2
            while renamed in seen:
                renamed, n = f"{name}_{n}", n + 1
            warnings.append(f"column {index} repeats the name {name!r}; it was read as {renamed!r}")
            name = renamed
        seen.add(name)
        names.append(name)
    return names, warnings
