"""Metadata filters: validated against the searched collections' schemas, compiled to one SQL fragment.

    {"status": "open", "priority": {"in": ["P1", "P2"]}, "opened_on": {"gte": "2026-01-01"}, "n": {"lt": 5}}

A bare value means eq; operators are eq, gt, gte, lt, lte and in (a non-empty list). Keys are those the
searched collections' metadata schemas declare (their union), plus the platform keys, which need no schema:
`author`, `created` (document facts), `language` (each paragraph's language), `document` (a document id).
An unknown key, a value of the wrong type, or an operator the type has no use for is refused (InvalidFilters,
a 400 naming it) rather than silently matching nothing.

The fragment goes into every retrieval stage and the window query alike, so a neighbour that fails the
filter is never stitched into an answer. Keys and values travel as parameters, never inside the SQL.
Numbers compare as numeric and only where the stored value is a JSON number; dates compare as ISO
calendar days (the first 10 characters, guarded by a pattern), so no stored value can make a cast fail.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from collections_app.models import Collection
from infra.db_routing import read_connection
from infra.errors import Invalid
from ingestion.languages import language_label_variants

from ._visibility import FROM_VISIBLE, VISIBLE_SQL, Visibility

# Facts of the document every paragraph carries (services/documents/_rows.py copies them onto its chunks):
# the platform keys `author` and `created`, and an email's subject, recipients and thread.
DOCUMENT_KEYS = {
    "author": {"type": "string"},
    "created": {"type": "date"},
    "subject": {"type": "string"},
    "recipients": {"type": "string"},
    "thread": {"type": "string"},
}
# Keys answered by a column of the paragraph itself rather than its metadata.
COLUMN_KEYS = {"language": {"type": "string"}, "document": {"type": "uuid"}}

RANGE_OPERATORS = ("gt", "gte", "lt", "lte")
OPERATORS = ("eq", *RANGE_OPERATORS, "in")
_SQL_OPERATOR = {"eq": "=", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="}
MAX_IN_VALUES = 1000


class InvalidFilters(Invalid):
    """A filter the searched collections cannot answer; the message names the key and says what to send."""


@dataclass(frozen=True)
class Filters:
    """A compiled filter: a WHERE fragment on `c` (collections_app_chunk) and its named parameters."""

    sql: str = "TRUE"
    params: dict[str, Any] = field(default_factory=dict)
    # "status eq", "opened_on gte": keys and operators, for the trace (values stay out of the audit).
    described: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.described)


NO_FILTERS = Filters()


def compile_filters(raw: Any, collections: list[Collection]) -> Filters:
    if raw in (None, {}):
        return NO_FILTERS
    if not isinstance(raw, dict):
        raise InvalidFilters('filters must be an object such as {"status": "open", "n": {"gte": 2}}')
    keys = known_keys(collections)
    clauses: list[str] = []
    params: dict[str, Any] = {}
    described: list[str] = []
    for index, (key, condition) in enumerate(raw.items()):
        if key not in keys:
            raise InvalidFilters(
                f"filters: unknown key {key!r}; the keys these collections can filter on are: {', '.join(sorted(keys))}"
            )
        entry = keys[key]
        operations = condition if isinstance(condition, dict) else {"eq": condition}
        if not operations:
            raise InvalidFilters(f"filters.{key}: give a value or an operator ({', '.join(OPERATORS)})")
        for number, (op, value) in enumerate(operations.items()):
            name = f"flt_{index}_{number}"
            clauses.append(_clause(key, entry, op, value, name, params))
            described.append(f"{key} {op}")
    return Filters(" AND ".join(f"({c})" for c in clauses), params, described)


def known_keys(collections: list[Collection]) -> dict[str, dict[str, Any]]:
    """The union of the collections' schemas, with the platform keys; a key typed two ways is refused when used."""
    keys: dict[str, dict[str, Any]] = {**DOCUMENT_KEYS}
    declared_by: dict[str, str] = {}
    for collection in collections:
        for key, entry in (collection.metadata_schema or {}).items():
            kind = entry.get("type", "string")
            seen = keys.get(key) if key in declared_by else None
            if seen is None:
                keys[key], declared_by[key] = dict(entry), collection.name
            elif _family(seen["type"]) != _family(kind):
                keys[key] = {
                    "type": "conflict",
                    "detail": f"{declared_by[key]} declares it as {seen['type']} and {collection.name} as {kind}",
                }
            elif seen["type"] == "enum" and kind == "enum":
                keys[key] = {"type": "enum", "values": sorted({*seen.get("values", []), *entry.get("values", [])})}
            elif kind != seen["type"]:
                keys[key] = {"type": "string"}  # an enum in one collection, a string in another: compare as text
    keys.update(COLUMN_KEYS)
    return keys


def _family(kind: str) -> str:
    return "text" if kind in ("enum", "string") else kind


def _clause(key: str, entry: dict[str, Any], op: str, value: Any, name: str, params: dict[str, Any]) -> str:
    kind = entry["type"]
    if kind == "conflict":
        raise InvalidFilters(f"filters.{key}: {entry['detail']}; search those collections separately")
    if op not in OPERATORS:
        raise InvalidFilters(f"filters.{key}: unknown operator {op!r}; use {', '.join(OPERATORS)}")
    if op in RANGE_OPERATORS and kind not in ("number", "date"):
        raise InvalidFilters(f"filters.{key}: {op} compares numbers and dates, and {key} is {_a(kind)}; use eq or in")
    if op == "in":
        if not isinstance(value, list) or not value:
            raise InvalidFilters(f"filters.{key}: in takes a non-empty list of values")
        if len(value) > MAX_IN_VALUES:
            raise InvalidFilters(f"filters.{key}: in takes at most {MAX_IN_VALUES} values")
        values = [_checked(key, entry, v) for v in value]
    else:
        values = [_checked(key, entry, value)]
    params[name] = values if op == "in" else values[0]
    params[f"{name}_key"] = key
    placeholder = f"%({name})s"
    field_text = f"c.metadata->>%({name}_key)s"

    if key == "language":
        # Labels as stored: "sh" (and sr, hr, bs, one label) also matches paragraphs labelled before they merged.
        params[name] = [old for code in values for old in language_label_variants(code)]
        return f"c.language = ANY({placeholder}::text[])"
    if key in COLUMN_KEYS:
        column, cast = ("c.language", "text") if key == "language" else ("c.document_id", "uuid")
        if op == "in":
            return f"{column} = ANY({placeholder}::{cast}[])"
        return f"{column} = {placeholder}::{cast}"
    if kind == "number":
        # Only a stored JSON number is cast: a stray string can never make the query fail.
        lhs = f"(CASE WHEN jsonb_typeof(c.metadata->%({name}_key)s) = 'number' THEN ({field_text})::numeric END)"
        if op == "in":
            return f"{lhs} = ANY({placeholder}::numeric[])"
        return f"{lhs} {_SQL_OPERATOR[op]} {placeholder}::numeric"
    if kind == "date":
        # ISO dates compare as text; the guard keeps values that are not dates out, the prefix makes
        # a date-time count as its calendar day.
        lhs = f"(CASE WHEN {field_text} ~ '^[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}}' THEN left({field_text}, 10) END)"
        if op == "in":
            return f"{lhs} = ANY({placeholder}::text[])"
        return f"{lhs} {_SQL_OPERATOR[op]} {placeholder}::text"
    # Text: the stored value itself, or one element of a stored list (an email's recipients).
    contains = f"jsonb_typeof(c.metadata->%({name}_key)s) = 'array' AND c.metadata->%({name}_key)s @> "
    if op == "in":
        return (
            f"({field_text} = ANY({placeholder}::text[]) OR ({contains}ANY(ARRAY(SELECT jsonb_build_array(v) "
            f"FROM unnest({placeholder}::text[]) AS v))))"
        )
    return f"({field_text} = {placeholder}::text OR ({contains}jsonb_build_array({placeholder}::text)))"


def _checked(key: str, entry: dict[str, Any], value: Any) -> Any:
    kind = entry["type"]
    if kind == "number":
        if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
            raise InvalidFilters(f"filters.{key}: {value!r} is not a number, and {key} is a number")
        return str(value)  # as text, cast to numeric in SQL: a list mixing 1 and 2.5 binds as one type
    if kind == "date":
        day = _day(value)
        if day is None:  # dates compare by calendar day, so a filter gives a day
            raise InvalidFilters(f"filters.{key}: {value!r} is not a date; {key} is a date, give YYYY-MM-DD")
        return day
    if kind == "uuid":
        try:
            return str(uuid.UUID(str(value)))
        except ValueError as exc:
            raise InvalidFilters(f"filters.{key}: {value!r} is not a document id") from exc
    if not isinstance(value, str):
        raise InvalidFilters(f"filters.{key}: {value!r} is not text; {key} is {_a(kind)}, compare it with a string")
    if kind == "enum" and value not in entry.get("values", []):
        shown = ", ".join(entry.get("values", [])[:30])
        raise InvalidFilters(f"filters.{key}: {value!r} is not one of its values ({shown})")
    return value


def _day(value: Any) -> str | None:
    if not isinstance(value, str) or len(value.strip()) != 10:
        return None
    try:
        return date.fromisoformat(value.strip()).isoformat()
    except ValueError:
        return None


def _a(kind: str) -> str:
    return {"enum": "an enum", "string": "a string", "uuid": "a document id"}.get(kind, f"a {kind}")


def count_matching(*, visible: Visibility, filters: Filters) -> int:
    """How many paragraphs the reader may read pass the filter: "filter too narrow" is then plain to see."""
    sql = f"SELECT count(*) FROM {FROM_VISIBLE} WHERE {VISIBLE_SQL} AND {filters.sql}"
    with read_connection().cursor() as cursor:
        cursor.execute(sql, {**visible.params, **filters.params})
        return int(cursor.fetchone()[0])
