"""The JSON parser of the API: bounded in size and depth, and no string reaches a view that cannot be stored."""

from __future__ import annotations

from collections.abc import Mapping
from typing import IO, Any

from django.conf import settings
from rest_framework import exceptions
from rest_framework.parsers import JSONParser

from infra.validation import json_problem, loads_bounded


class BodyTooLarge(exceptions.APIException):
    status_code = 413
    default_detail = "The request body is too large."
    default_code = "body_too_large"


class BoundedJSONParser(JSONParser):
    """DRF's JSONParser reads the stream without Django's body limit and recurses without a depth limit.

    This one reads at most KB_MAX_JSON_BYTES (413 past it), refuses nesting deeper than
    validation.MAX_JSON_DEPTH and refuses NUL characters and lone surrogates anywhere, keys included,
    with a 400 that names where (e.g. {"filters.status": [...]}).
    """

    def parse(
        self, stream: IO[Any] | None, media_type: str | None = None, parser_context: Mapping[str, Any] | None = None
    ) -> Any:
        limit: int = settings.KB_MAX_JSON_BYTES
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise BodyTooLarge(f"A JSON body may be at most {limit} bytes.")
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            data = loads_bounded(raw.decode(encoding))
        except (ValueError, LookupError) as exc:  # LookupError: a charset Python does not know
            raise exceptions.ParseError(f"JSON parse error - {exc}") from None
        found = json_problem(data)
        if found:
            path, problem = found
            raise exceptions.ValidationError({path or "body": [problem]})
        return data
