"""The API's one exception handler: domain errors become statuses here, and nowhere else.

Views do not catch and map; services raise errors that say what kind of refusal they are
(infra.errors.DomainError.meaning) and, where one input is at fault, which
(`field`). A 400 answers `{"<field>": ["message"]}` when a field is named; every other refusal `{"detail": "message"}`:
the same shapes DRF gives its own validation and permission errors, so a client reads one format.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import RequestDataTooBig, SuspiciousOperation, TooManyFieldsSent
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from infra.errors import DomainError, Meaning

STATUS: dict[Meaning, int] = {
    "invalid": status.HTTP_400_BAD_REQUEST,
    "forbidden": status.HTTP_403_FORBIDDEN,
    "conflict": status.HTTP_409_CONFLICT,
    "not_found": status.HTTP_404_NOT_FOUND,
    "too_large": status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
    "no_storage": status.HTTP_507_INSUFFICIENT_STORAGE,
    "unavailable": status.HTTP_503_SERVICE_UNAVAILABLE,
}


def meaning_of(exc: Exception) -> tuple[Meaning, str | None] | None:
    if isinstance(exc, DomainError):
        return exc.meaning, exc.field
    return None


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    found = meaning_of(exc)
    if found is not None:
        meaning, field = found
        # Only a 400 is about one input; any other refusal is about the request as a whole.
        body = {field: [str(exc)]} if field and meaning == "invalid" else {"detail": str(exc)}
        return Response(body, status=STATUS[meaning])
    # Django refuses these while reading the request (too many query or form fields, a body past
    # DATA_UPLOAD_MAX_MEMORY_SIZE); inside a DRF view they would otherwise escape as a 500.
    if isinstance(exc, TooManyFieldsSent):
        return Response({"detail": f"Too many fields or query parameters: {exc}"}, status=400)
    if isinstance(exc, RequestDataTooBig):
        return Response({"detail": "The request body is too large."}, status=413)
    if isinstance(exc, SuspiciousOperation):
        return Response({"detail": "The request was refused as malformed."}, status=400)
    return drf_exception_handler(exc, context)
