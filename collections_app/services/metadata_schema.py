"""The collection's metadata schema: which record columns are filterable, and as what type.

Collection.metadata_schema = {column: {"type": "number" | "date" | "enum" | "string", "values": [...] (enum)}}.

- A metadata column declares itself on the first upload that has it, with the type its values there share
  (ingestion/values.py: number, date, a small vocabulary as enum, else string).
- It only ever adds. A declared column keeps its type, and later values are checked against it: a value
  that does not fit is reported in the document's warnings (row and column) and left out of that
  paragraph's metadata; the document itself does not fail.
- An enum's vocabulary grows with later uploads ("open", "closed", then "blocked") up to
  ENUM_VOCABULARY_LIMIT values; past that a new value is reported like any value that does not fit.
- A column the collection already declares is filterable in every later upload: where its role was only
  proposed as `index` (its values there look like free text, e.g. a date column with typos), it becomes
  `both`, so its values are checked and the ones that do not fit are reported.
- Declaring runs under a row lock on the collection, so two uploads at once never lose each other's columns.
- Metadata given at upload (`metadata` of the API upload, the admin's metadata fields) is checked against the
  same schema, but strictly: a value that does not fit its column refuses the upload (InvalidMetadata, a 400
  naming the column and its type), since a person is there to correct it. A key the schema does not declare
  declares a column, typed from its one value as a record column is from its values (number, date, else
  string; an enum needs repeated values to be recognised). An enum's vocabulary grows as it does for records.
  The values are stored as the document's `metadata` ingest option and merged into every paragraph's metadata
  at publish (services/documents/_rows.py), under a record's own columns.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any
from uuid import UUID

from django.db import transaction

from collections_app.models import Collection, Document
from infra.errors import Invalid
from ingestion.blocks import ParseResult
from ingestion.values import ENUM_VOCABULARY_LIMIT, as_text, coerce, infer_type, is_empty

# Problems listed one by one on a document before the rest are counted.
MAX_VALUE_WARNINGS = 50

# Document facts every paragraph carries (services/documents/_rows.py), typed as filters compare them
# (retrieval/selectors/search/_filters.py): a value given for one at upload is checked as that type, not declared.
DOCUMENT_FACT_TYPES: dict[str, dict[str, Any]] = {
    "author": {"type": "string"},
    "created": {"type": "date"},
    "subject": {"type": "string"},
    "recipients": {"type": "string"},
    "thread": {"type": "string"},
}
# Filters answer these from the paragraph's own columns, never its metadata: a value under them could never
# be filtered on, so an upload may not give one.
PARAGRAPH_COLUMN_KEYS = frozenset({"language", "document"})
MAX_UPLOAD_METADATA_KEYS = 50
MAX_METADATA_KEY_CHARS = 100


SCHEMA_TYPES = ("number", "date", "enum", "string")
MAX_SCHEMA_KEYS = 20_000  # the settings JSON holds at most 64 KB anyway (collection_file._schema)
MAX_SCHEMA_KEY_CHARS = 1_000


def metadata_schema_problem(schema: Any) -> str | None:
    """Why `schema` is not a metadata schema filters can read (module docstring), or None. A collection's own
    schema is only ever written by declaring (below); one that comes from outside (a collection file) is checked
    here first, since every filtered search of the tenant reads it."""
    if not isinstance(schema, dict):
        return 'must be a JSON object, e.g. {"year": {"type": "number"}}'
    if len(schema) > MAX_SCHEMA_KEYS:
        return f"declares {len(schema)} columns; at most {MAX_SCHEMA_KEYS}"
    for key, entry in schema.items():
        # Looser than an upload's keys: a records file's column names are declared as they are.
        if not isinstance(key, str) or not key.strip() or len(key) > MAX_SCHEMA_KEY_CHARS:
            return f"a column name must be non-blank text of at most {MAX_SCHEMA_KEY_CHARS} characters"
        shown = key[:40]
        if not isinstance(entry, dict) or entry.get("type") not in SCHEMA_TYPES:
            return f'{shown!r} must be {{"type": one of {", ".join(SCHEMA_TYPES)}}}'
        values = entry.get("values")
        if entry["type"] == "enum" and not (
            isinstance(values, list)
            and len(values) <= ENUM_VOCABULARY_LIMIT
            and all(isinstance(v, str) and len(v) <= MAX_SCHEMA_KEY_CHARS for v in values)
        ):
            return f"{shown!r}: an enum needs its values as a list of at most {ENUM_VOCABULARY_LIMIT} texts"
    return None


class InvalidMetadata(Invalid):
    """Metadata given at upload that the collection's schema cannot take; the message names the column."""

    field = "metadata"


def upload_metadata_check(*, schema: dict[str, Any], metadata: Any) -> dict[str, Any]:
    """The upload's metadata as it will be stored (each value coerced to its column's type, empty ones left out),
    or InvalidMetadata naming every key that does not fit. Writes nothing (collection_upload_metadata_declare
    does, under the collection's lock)."""
    if metadata in (None, ""):
        return {}
    if not isinstance(metadata, dict):
        raise InvalidMetadata('metadata must be a JSON object, e.g. {"year": 2026, "department": "HR"}')
    if len(metadata) > MAX_UPLOAD_METADATA_KEYS:
        raise InvalidMetadata(f"metadata holds {len(metadata)} keys; at most {MAX_UPLOAD_METADATA_KEYS} are taken")
    clean: dict[str, Any] = {}
    problems: list[str] = []
    for key, value in metadata.items():
        name = key.strip() if isinstance(key, str) else ""
        if not name or len(name) > MAX_METADATA_KEY_CHARS:
            problems.append(f"a metadata key must be 1-{MAX_METADATA_KEY_CHARS} characters")
            continue
        if name in PARAGRAPH_COLUMN_KEYS:
            problems.append(
                f"{name}: filters answer {name} from each paragraph itself; give the value under another name"
            )
            continue
        if isinstance(value, dict | list):
            problems.append(f"{name}: give one value (a number, a date YYYY-MM-DD or text), not a list or object")
            continue
        entry = schema.get(name) or DOCUMENT_FACT_TYPES.get(name) or infer_type([value])
        if entry.get("type") == "enum":
            entry = _grow_vocabulary(entry, [value]) or entry  # a new value joins the vocabulary, as in records
        try:
            typed = coerce(value, entry)
        except ValueError as exc:
            source = "the collection declares" if name in schema else "every document has"
            problems.append(f"{name}: {exc} ({source} {name} as {entry.get('type', 'string')})")
            continue
        if typed is not None:
            clean[name] = typed
    if problems:
        raise InvalidMetadata("metadata: " + "; ".join(problems))
    return clean


def collection_upload_metadata_declare(*, collection_id: UUID | str, metadata: Any) -> dict[str, Any]:
    """Check the upload's metadata under the collection's lock and declare the columns it names first; the values
    as stored. Raises InvalidMetadata before anything is declared."""
    with transaction.atomic():
        locked = Collection.objects.select_for_update().only("id", "metadata_schema").get(pk=collection_id)
        schema = locked.metadata_schema or {}
        clean = upload_metadata_check(schema=schema, metadata=metadata)
        # Document facts (author, created) are filterable without a schema entry; a records column of that name
        # that the collection declares keeps its own.
        declarable = {k: [v] for k, v in clean.items() if k in schema or k not in DOCUMENT_FACT_TYPES}
        if declarable:
            collection_schema_declare(collection_id=collection_id, values_by_key=declarable)
    return clean


def collection_schema_declare(*, collection_id: UUID | str, values_by_key: dict[str, list[Any]]) -> dict[str, Any]:
    """Add the keys the collection does not declare yet (typed from their values); return the schema as stored."""
    with transaction.atomic():
        # The lock makes a concurrent upload wait and then read this one's columns, instead of writing
        # back a schema read before this one committed.
        collection = Collection.objects.select_for_update().only("id", "metadata_schema").get(pk=collection_id)
        schema: dict[str, Any] = dict(collection.metadata_schema or {})
        changed = False
        for key, values in values_by_key.items():
            if key not in schema:
                schema[key] = infer_type(values)
                changed = True
            elif schema[key].get("type") == "enum":
                grown = _grow_vocabulary(schema[key], values)
                if grown is not None:
                    schema[key], changed = grown, True
        if changed:
            Collection.objects.filter(pk=collection_id).update(metadata_schema=schema)
    return schema


def _grow_vocabulary(entry: dict[str, Any], values: list[Any]) -> dict[str, Any] | None:
    known = list(entry.get("values", []))
    new = sorted({as_text(v) for v in values if not is_empty(v)} - set(known))
    room = max(0, ENUM_VOCABULARY_LIMIT - len(known))
    if not new or not room:
        return None
    return {**entry, "values": sorted([*known, *new[:room]])}


def metadata_validate(*, schema: dict[str, Any], metadata: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """The values that fit their declared type (coerced), and for each one that does not, why."""
    clean: dict[str, Any] = {}
    problems: dict[str, str] = {}
    for key, value in metadata.items():
        entry = schema.get(key)
        if entry is None:
            clean[key] = value
            continue
        try:
            typed = coerce(value, entry)
        except ValueError as exc:
            problems[key] = str(exc)
            continue
        if typed is not None:
            clean[key] = typed
    return clean, problems


def document_records_declare(*, document: Document, result: ParseResult) -> list[str]:
    """Declare a records file's metadata columns, check its values, and keep its column roles on the document.

    Record blocks lose the values their collection refuses (in place); the returned warnings say which,
    by row and column. The roles used become the document's `column_roles` ingest option and the column
    profile its `columns`, which the column-roles editor (admin) and the API show.
    """
    warnings: list[str] = []
    refused = 0
    with transaction.atomic():
        declared = Collection.objects.select_for_update().only("id", "metadata_schema").get(pk=document.collection_id)
        given = set(document.ingest_options.get("column_roles") or {})
        _follow_declared_columns(result, declared.metadata_schema or {}, given)
        values_by_key: dict[str, list[Any]] = defaultdict(list)
        for block, _, _ in result.record_rows:
            for key, value in block.metadata.items():
                values_by_key[key].append(value)
        schema = collection_schema_declare(collection_id=document.collection_id, values_by_key=values_by_key)
        for block, where, _ in result.record_rows:
            block.metadata, problems = metadata_validate(schema=schema, metadata=block.metadata)
            for key, reason in problems.items():
                refused += 1
                if refused <= MAX_VALUE_WARNINGS:
                    warnings.append(
                        f"{where}, column {key}: {reason} (the collection declares {key} as "
                        f"{schema[key]['type']}); the value was left out of this row's metadata"
                    )
        if refused > MAX_VALUE_WARNINGS:
            warnings.append(f"…and {refused - MAX_VALUE_WARNINGS} more values that did not fit their column's type")
        columns = result.columns or []
        current = Document.objects.select_for_update().only("id", "ingest_options").get(pk=document.pk)
        options = {
            **current.ingest_options,
            "column_roles": {c["name"]: c["role"] for c in columns},
            "columns": [{k: c[k] for k in ("name", "type", "proposed", "samples")} for c in columns],
        }
        Document.objects.filter(pk=document.pk).update(ingest_options=options)
        document.ingest_options = options
    return warnings


def _follow_declared_columns(result: ParseResult, declared: dict[str, Any], given: set[str]) -> None:
    """A proposed `index` role becomes `both` for a column the collection declares; given roles stand."""
    followed = set()
    for column in result.columns or []:
        name = column["name"]
        if column["role"] == "index" and name in declared and name not in given:
            column["role"] = "both"
            followed.add(name)
    if not followed:
        return
    for block, _, values in result.record_rows:
        for name in followed & set(values):
            block.metadata[name] = values[name]
