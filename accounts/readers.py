"""Registered readers: who a search is made for, and the labels the server gives each."""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction

from accounts.issuing import ANY_READER
from accounts.models import Reader, Tenant
from infra.errors import Conflict, Invalid
from infra.validation import name_problem

READER_NAME_CHARS = Reader._meta.get_field("name").max_length or 200
LABEL_CHARS = Reader._meta.get_field("labels").base_field.max_length or 100


class ReaderNameTaken(Conflict):
    field = "name"


class InvalidReader(Invalid):
    pass


def _reader_clean(values: dict[str, Any]) -> dict[str, Any]:
    cleaned = dict(values)
    if "name" in values:
        problem = name_problem(values["name"], max_chars=READER_NAME_CHARS)
        if problem:
            raise InvalidReader(f"name {problem}", field="name")
        cleaned["name"] = values["name"].strip()
        if cleaned["name"].casefold() == ANY_READER:
            raise InvalidReader(
                f'name "{ANY_READER}" is reserved: it means every reader when a key is given readers', field="name"
            )
        if "," in cleaned["name"]:
            raise InvalidReader("name must not contain a comma: commas separate reader names", field="name")
    if "labels" in values:
        labels = values["labels"]
        if not isinstance(labels, list) or not all(isinstance(label, str) for label in labels):
            raise InvalidReader("labels must be a list of label names", field="labels")
        for label in labels:
            problem = name_problem(label, max_chars=LABEL_CHARS)
            if problem:
                raise InvalidReader(f"label {label[:40]!r} {problem}", field="labels")
        cleaned["labels"] = sorted({label.strip() for label in labels})
    return cleaned


def reader_create(*, tenant: Tenant, name: str, labels: list[str] | None = None) -> Reader:
    values = _reader_clean({"name": name, "labels": labels or []})
    reader = Reader(tenant=tenant, **values)
    _reader_save(reader)
    return reader


def reader_update(*, reader: Reader, **changes: Any) -> Reader:
    """Change a reader's name or labels; the next search as that reader reads with the new labels."""
    for field, value in _reader_clean(changes).items():
        setattr(reader, field, value)
    _reader_save(reader, update_fields=[*changes, "updated_at"])
    return reader


def reader_delete(*, reader: Reader) -> None:
    reader.delete()  # its past searches keep their audit rows (reader set to null)


def _reader_save(reader: Reader, update_fields: list[str] | None = None) -> None:
    try:
        with transaction.atomic():
            reader.save(update_fields=update_fields)
    except IntegrityError as exc:
        if "reader_name_unique_per_tenant" in str(exc):
            raise ReaderNameTaken(f"a reader named {reader.name!r} already exists") from exc
        raise
