"""Generated record files: an issue tracker export as CSV/TSV, xlsx (openpyxl) and ods (odfpy)."""

from __future__ import annotations

import csv
import io
import random
from collections.abc import Mapping, Sequence
from datetime import date, timedelta
from typing import Any

HEADER = ["id", "title", "status", "priority", "opened_on", "estimate", "description"]
STATUSES = ["open", "closed", "review", "blocked"]
WORDS = [
    "login",
    "checkout",
    "invoice",
    "search",
    "export",
    "import",
    "upload",
    "avatar",
    "payment",
    "refund",
    "report",
    "dashboard",
    "calendar",
    "email",
    "password",
    "profile",
    "session",
    "cache",
    "timeout",
    "latency",
    "printer",
    "badge",
    "locker",
    "parking",
    "canteen",
]


def issue_rows(count: int, seed: int = 7) -> list[dict[str, Any]]:
    """Rows of an issue tracker; blocked issues are rare, so a filter on them selects a few dozen of 1,000."""
    rng = random.Random(seed)
    start = date(2025, 6, 1)
    rows = []
    for number in range(1, count + 1):
        a, b = rng.sample(WORDS, 2)
        rows.append(
            {
                "id": number,
                "title": f"{a.capitalize()} fails after {b} change",
                "status": rng.choices(STATUSES, weights=[50, 37, 10, 3])[0],
                "priority": rng.choice(["P1", "P2", "P3", "P4"]),
                "opened_on": start + timedelta(days=rng.randrange(300)),
                "estimate": rng.randrange(1, 80) / 2,
                "description": f"The {a} screen stops responding when the {b} step runs twice in a row.",
            }
        )
    return rows


def csv_bytes(rows: list[dict[str, Any]], delimiter: str = ",", encoding: str = "utf-8") -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, delimiter=delimiter, lineterminator="\r\n")
    writer.writerow(HEADER)
    for row in rows:
        writer.writerow([_text(row[k]) for k in HEADER])
    return out.getvalue().encode(encoding)


def _text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return value.isoformat() if isinstance(value, date) else str(value)


def xlsx_bytes(sheets: Mapping[str, Sequence[Sequence[Any]]]) -> bytes:
    import openpyxl

    workbook = openpyxl.Workbook()
    workbook.remove(workbook.active)
    for name, rows in sheets.items():
        sheet = workbook.create_sheet(name)
        for row in rows:
            sheet.append(row)
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


def ods_bytes(sheets: Mapping[str, Sequence[Sequence[Any]]]) -> bytes:
    from odf.opendocument import OpenDocumentSpreadsheet
    from odf.table import Table, TableCell, TableRow
    from odf.text import P

    document = OpenDocumentSpreadsheet()
    for name, rows in sheets.items():
        table = Table(name=name)
        for row in rows:
            table_row = TableRow()
            for value in row:
                if isinstance(value, bool) or value is None:
                    cell = TableCell()
                elif isinstance(value, int | float):
                    cell = TableCell(valuetype="float", value=value)
                elif isinstance(value, date):
                    cell = TableCell(valuetype="date", datevalue=value.isoformat())
                else:
                    cell = TableCell(valuetype="string")
                if value is not None:
                    cell.addElement(P(text=_text(value)))
                table_row.addElement(cell)
            table.addElement(table_row)
        document.spreadsheet.addElement(table)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()
