"""OpenAPI description helpers for drf-spectacular: the bearer scheme, and every refusal an operation can give."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiExample, OpenApiResponse
from rest_framework import serializers

from ingestion.languages import SH, language_name

# How an answer's language labels read in the docs: one wording, from the one function that names languages.
LABEL_HELP = f"an ISO 639-1 code; {SH}: {language_name(SH)}"


class ApiKeyScheme(OpenApiAuthenticationExtension):
    target_class = "doors.api.authentication.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema: AutoSchema) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer", "description": "An API key: `Authorization: Bearer kb_...`"}


class ErrorOutput(serializers.Serializer):
    """The answer to a refusal that names no one field (401, 403, 404, 409, 413, 429, ...)."""

    detail = serializers.CharField()


class ValidationErrorOutput(serializers.Serializer):
    """A 400: each input at fault maps to its messages, e.g. {"name": ["..."]}; or {"detail": "..."}."""

    detail = serializers.CharField(required=False, help_text="when no single field is at fault")


REFUSALS = {
    400: "Invalid input. Each field at fault maps to its messages; `detail` when no single field is.",
    401: "No API key, or one that is unknown or revoked.",
    403: "This key's role may not do this: creating or changing needs an editor or admin key.",
    404: "No such collection or document for this key's tenant.",
    413: "The upload, or the JSON body, is larger than the server takes.",
    415: "The body is not in a media type this operation reads (JSON; an upload is multipart/form-data).",
    429: "This key's rate limit is reached: retry after the `Retry-After` header's seconds.",
    507: "Not enough free storage to import the archive.",
}


# The refusals operations share, named once: `refusals(*GUARDED)`, and one with more adds its own codes
# (`refusals(*BODY, 409, conflict=..., conflict_example=...)`). 401: no valid key; 403: the key's role or agent
# may not; 404: no such row in the key's tenant; 400: what the request says is wrong; 413/415: a body too large
# or not JSON.
READ = (401, 404)  # any key reads it
GUARDED = (401, 403, 404)  # a role decides: an editor's reading, a delete, an action without a body
LISTED = (400, 401, 404)  # a page of a list any key reads (400: a bad page or filter)
GUARDED_LISTED = (400, 401, 403, 404)
BODY = (400, 401, 403, 404, 413, 415)  # a JSON body to one of the tenant's rows
NEW_BODY = (400, 401, 403, 413, 415)  # a JSON body that makes something new


def refusals(*codes: int, conflict: str = "", conflict_example: str = "") -> dict[int, OpenApiResponse]:
    """The error answers of an operation, for `extend_schema(responses={..., **refusals(400, 401)})`.

    A 409 is particular to its operation: `conflict` says when it happens and `conflict_example` is the message
    the service gives then (each operation's own, so the description and the example tell the same story).
    """
    if 409 in codes and not (conflict and conflict_example):
        raise ValueError("a 409 needs its conflict= description and its conflict_example= message")
    answers = {}
    for code in sorted(set(codes)):
        if code == 409:
            answers[code] = OpenApiResponse(
                ErrorOutput,
                description=f"Conflict: {conflict}.",
                examples=[OpenApiExample("Conflict", value={"detail": conflict_example}, status_codes=["409"])],
            )
            continue
        answers[code] = OpenApiResponse(
            ValidationErrorOutput if code == 400 else ErrorOutput, description=REFUSALS[code]
        )
    return answers


def add_retry_after(result: dict[str, Any], generator: SchemaGenerator, request: Any, public: bool) -> dict[str, Any]:
    """Postprocessing hook: every 429 declares its Retry-After header (drf-spectacular has no per-response headers)."""
    for path in result.get("paths", {}).values():
        for operation in path.values():
            answer = operation.get("responses", {}).get("429") if isinstance(operation, dict) else None
            if answer is not None:
                answer["headers"] = {
                    "Retry-After": {
                        "schema": {"type": "integer"},
                        "description": "seconds until this key may call again",
                        "required": True,
                    }
                }
    return result


# What each refusal looks like, for the documentation: the messages are the platform's own.
ERROR_EXAMPLES: dict[str, dict[str, Any]] = {
    "400": {"name": ["must not contain NUL characters"]},
    "401": {"detail": "An API key is required: 'Authorization: Bearer <key>'."},
    "403": {"detail": "This key may only read: creating or changing needs an editor or admin key."},
    "404": {"detail": "Not found."},
    "413": {"detail": "report.pdf is larger than the upload limit of 104857600 bytes"},
    "415": {"detail": 'Unsupported media type "text/plain" in request.'},
    "429": {"detail": "Request was throttled. Expected available in 42 seconds."},
    "507": {"detail": "not enough free storage to unpack this archive"},
}


def add_examples_and_descriptions(
    result: dict[str, Any], generator: SchemaGenerator, request: Any, public: bool
) -> dict[str, Any]:
    """Postprocessing hook: an example on every error answer, and a description on every operation.

    An operation without a description of its own is described by its summary and the role it needs,
    so no operation in the docs is a bare line.
    """
    for path in result.get("paths", {}).values():
        for method, operation in path.items():
            if not isinstance(operation, dict):
                continue
            if not operation.get("description"):
                needs = "any valid key" if method == "get" else "an editor or admin key"
                if "readers" in str(operation.get("operationId", "")):
                    needs = "an admin key"
                operation["description"] = f"{operation.get('summary', '')}. Needs {needs}."
            for code, answer in operation.get("responses", {}).items():
                example = ERROR_EXAMPLES.get(code)
                for content in answer.get("content", {}).values():
                    if example is not None and "examples" not in content:
                        content["examples"] = {"refusal": {"value": example}}
    return result
