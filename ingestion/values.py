"""Typing record values: one set of rules shared by the records parser and the collection's metadata schema.

Types a metadata column can have: `number`, `date` (ISO strings), `enum` (a small vocabulary of strings) and
`string`. The parser infers a column's type from its values; the schema keeps the type of a column once
declared and coerces later values to it (`coerce` raises ValueError with a reason a person can read).
"""

from __future__ import annotations

import math
import re
from datetime import date, datetime, time
from typing import Any

# A column with at most this many distinct values, each repeated on average (distinct <= half the values),
# and short, is a vocabulary (status, priority, country), not free text.
ENUM_MAX_VALUES = 20
ENUM_MAX_LENGTH = 60
# How far an enum's vocabulary may grow with later uploads before new values are refused.
ENUM_VOCABULARY_LIMIT = 100

# Placeholders people type into number and date columns for "no value": they are empty, not errors.
NULL_MARKERS = frozenset({"n/a", "na", "#n/a", "-", "--", "—", "null", "none", "nan", "nil"})

_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
# "0123" is a code (a zip code, an account number): numbers would lose its leading zero.
_LEADING_ZERO = re.compile(r"^[+-]?0\d")
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_ISO_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$")
_DOTTED_DATE = re.compile(r"^(\d{1,2})\.(\d{1,2})\.(\d{4})$")  # 31.01.2026, day first wherever dots are used
_SLASHED_ISO = re.compile(r"^(\d{4})/(\d{1,2})/(\d{1,2})$")  # 2026/01/31


def is_empty(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def is_null_marker(value: Any) -> bool:
    return isinstance(value, str) and value.strip().lower() in NULL_MARKERS


def as_text(value: Any) -> str:
    """How a value reads in a paragraph and in a string or enum column."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, datetime | date):
        return as_date(value) or str(value)
    return str(value).strip()


def as_number(value: Any) -> int | float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return int(value) if value.is_integer() and abs(value) < 2**53 else value
    if not isinstance(value, str):
        return None
    text = value.strip()
    if not _NUMBER.match(text) or _LEADING_ZERO.match(text):
        return None
    if re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    number = float(text)
    return as_number(number) if math.isfinite(number) else None


def as_date(value: Any) -> str | None:
    """An ISO date (YYYY-MM-DD) or date-time (YYYY-MM-DDTHH:MM:SS[+zone]); None if the value is not one."""
    if isinstance(value, datetime):
        if value.time() == time(0) and value.tzinfo is None:
            return value.date().isoformat()
        return value.isoformat(timespec="seconds")
    if isinstance(value, date):
        return value.isoformat()
    if not isinstance(value, str):
        return None
    text = value.strip()
    try:
        if _ISO_DATE.match(text):
            return date.fromisoformat(text).isoformat()
        if _ISO_DATETIME.match(text):
            return as_date(datetime.fromisoformat(text.replace(" ", "T", 1)))
        if match := _DOTTED_DATE.match(text):
            day, month, year = (int(g) for g in match.groups())
            return date(year, month, day).isoformat()
        if match := _SLASHED_ISO.match(text):
            year, month, day = (int(g) for g in match.groups())
            return date(year, month, day).isoformat()
    except ValueError:
        return None
    return None


def infer_type(values: list[Any]) -> dict[str, Any]:
    """A schema entry for a column from its values: {"type": ...} plus "values" for an enum."""
    present = [v for v in values if not is_empty(v)]
    typed = [v for v in present if not is_null_marker(v)]
    if typed and all(as_number(v) is not None for v in typed):
        return {"type": "number"}
    if typed and all(as_date(v) is not None for v in typed):
        return {"type": "date"}
    texts = [as_text(v) for v in present]
    distinct = sorted(set(texts))
    if (
        texts
        and len(distinct) <= ENUM_MAX_VALUES
        and len(distinct) * 2 <= len(texts)
        and max(len(t) for t in distinct) <= ENUM_MAX_LENGTH
    ):
        return {"type": "enum", "values": distinct}
    return {"type": "string"}


def coerce(value: Any, entry: dict[str, Any]) -> Any:
    """The value as the declared type stores it; None for an empty one; ValueError saying why it does not fit."""
    if is_empty(value):
        return None
    kind = entry.get("type", "string")
    if kind == "number":
        number = as_number(value)
        if number is None:
            if is_null_marker(value):
                return None
            raise ValueError(f"{as_text(value)!r} is not a number")
        return number
    if kind == "date":
        iso = as_date(value)
        if iso is None:
            if is_null_marker(value):
                return None
            raise ValueError(f"{as_text(value)!r} is not a date (expected YYYY-MM-DD)")
        return iso
    if kind == "enum" and as_text(value) not in entry.get("values", []):
        raise ValueError(f"{as_text(value)!r} is not one of its values ({', '.join(entry.get('values', [])[:20])})")
    return as_text(value)
