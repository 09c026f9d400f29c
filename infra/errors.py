"""Domain errors: refusals a caller can act on, each saying what kind of refusal it is.

A service raises one with a message for a person ("chunk_overlap must be smaller than chunk_size"),
never an HTTP status. `meaning` is what the API's one exception handler (doors/api/errors.py)
turns into a status, and `field` names the input at fault so the API (and an admin form) can put the
message beside it.
"""

from __future__ import annotations

from typing import ClassVar, Literal

Meaning = Literal["invalid", "forbidden", "conflict", "not_found", "too_large", "no_storage", "unavailable"]


class DomainError(Exception):
    meaning: ClassVar[Meaning] = "invalid"
    field: str | None = None

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        if field is not None:
            self.field = field


class Invalid(DomainError, ValueError):
    """The input cannot be used as sent (the message says what to send instead)."""

    meaning = "invalid"


class Forbidden(DomainError):
    """The caller may not do this, whatever it sends (an unknown reader, a right it does not hold)."""

    meaning = "forbidden"


class Conflict(DomainError):
    """The input is fine but clashes with what exists (a name taken, a confirmation missing)."""

    meaning = "conflict"


class InvalidIngestOptions(Invalid):
    """An ingest option cannot be used; raised by the module that owns the option (OCR, records)."""

    field = "ingest_options"
