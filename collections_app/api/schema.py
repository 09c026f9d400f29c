"""OpenAPI description helpers for drf-spectacular: the bearer scheme, and every refusal an operation can give."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import OpenApiResponse


class ApiKeyScheme(OpenApiAuthenticationExtension):
    target_class = "collections_app.api.authentication.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema):  # type: ignore[no-untyped-def]
        return {"type": "http", "scheme": "bearer", "description": "An API key: `Authorization: Bearer kb_...`"}


REFUSALS = {
    400: "Invalid input. Each field at fault maps to its messages; `detail` when no single field is.",
    401: "No API key, or one that is unknown or revoked.",
    403: "This key's role may not do this: creating or changing needs an editor or admin key.",
    404: "No such collection or document for this key's tenant.",
    409: "Conflict",
    413: "The upload, or the JSON body, is larger than the server takes.",
    415: "The body is not in a media type this operation reads (JSON; an upload is multipart/form-data).",
    429: "This key's rate limit is reached: retry after the `Retry-After` header's seconds.",
    507: "Not enough free storage to import the archive.",
}


def refusals(*codes: int, conflict: str = "") -> dict[int, OpenApiResponse]:
    """The error answers of an operation, for `extend_schema(responses={..., **refusals(400, 401)})`."""
    from collections_app.api.serializers import ErrorOutput, ValidationErrorOutput

    answers = {}
    for code in codes:
        description = REFUSALS[code] if code != 409 else f"Conflict: {conflict}." if conflict else "Conflict."
        answers[code] = OpenApiResponse(ValidationErrorOutput if code == 400 else ErrorOutput, description=description)
    return answers


def add_retry_after(result: dict[str, Any], generator, request, public) -> dict[str, Any]:  # type: ignore[no-untyped-def]
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
