"""The MCP tools: `search` (the API's POST /api/search, in-process), `verify_citations` (POST
/api/citations/verify, in-process) and `collections` (what the key may search).

The caller is an API key's secret: from the Authorization header over HTTP, from KB_MCP_KEY over stdio. It
is held in a context variable for the one exchange, so a tool never takes it as an argument (an agent
could otherwise name someone else's).

`search` and `verify_citations` are the API operations themselves, dispatched in-process with the caller's key:
authentication, throttling, validation, the audit record and the answer's shape are the API's own code, so the
two cannot drift. Their input schemas are the API's request schemas, read from the OpenAPI description.
"""

from __future__ import annotations

import copy
import io
import json
import logging
from contextvars import ContextVar
from functools import cache
from typing import Any

import mcp_types as types
from asgiref.sync import sync_to_async
from django.core.handlers.wsgi import WSGIRequest
from django.urls import resolve

from accounts.keys import api_key_resolve
from accounts.models import ApiKey
from collections_app.selectors.corpus_map import MapReaderInvalid, collection_map_for_reader
from collections_app.selectors.languages import collection_languages
from infra.db_routing import ReplicaUnavailable, read_only_call
from infra.errors import DomainError
from retrieval.selectors.search import searchable_collections

logger = logging.getLogger(__name__)

SEARCH_PATH = "/api/search"
VERIFY_PATH = "/api/citations/verify"
# What a tool says when the operation itself failed (the API's 500): never the exception's text, which names the
# code's internals (`'float' object has no attribute 'numerator'`) and may quote what it was working on.
SERVER_ERROR = (
    "A server error occurred (500): the request could not be answered. Try again; if it keeps failing, tell the "
    "administrator."
)
# The secret of the API key this exchange acts for (never logged, never returned).
caller_secret: ContextVar[str | None] = ContextVar("kb_mcp_caller_secret", default=None)
# The Host the HTTP request came with; the in-process API call answers as if asked there.
caller_host: ContextVar[str] = ContextVar("kb_mcp_caller_host", default="localhost")

SEARCH_DESCRIPTION = (
    "Search the knowledge base: cited paragraphs that answer a question, from the collections this key may "
    "read. The same contract as POST /api/search: `query` is required; `collections` narrows (never widens) "
    "the key's set; per-reader collections need the registered `reader`. The answer carries `results` "
    "(text, score, collection, document, page, section, chunk_id, passages, and `matches`: where in `text` each "
    "matched paragraph lies, by character offsets, best first), `refused` (null: could not refuse, false: "
    "the judge approved, true: nothing here answers), the `floor` used, `reason` when results are empty, "
    "the stage-by-stage `trace` and `search_id` (the audit record)."
)
VERIFY_DESCRIPTION = (
    "Check the citations of an answer before giving it: for each cited paragraph id (and optionally the words "
    "quoted from it), whether it exists for this key, is still served or was replaced or deleted since (and "
    "when), was returned in the search the answer was built from (`search_id`), is readable by that search's "
    "reader, and whether the quote is in it (exact, normalised or absent, with a similarity). The same contract "
    "as POST /api/citations/verify; no paragraph text is returned."
)
COLLECTIONS_DESCRIPTION = (
    "The collections this key may search: name, description, languages, whether paragraphs are filtered per "
    "reader, the metadata fields `filters` may use, and a corpus map (each document's headings with paragraph "
    "counts). A per-reader collection is mapped only for a registered `reader`."
)


def tool_list() -> list[types.Tool]:
    return [
        types.Tool(
            name="search",
            title="Search the knowledge base",
            description=SEARCH_DESCRIPTION,
            input_schema=api_input_schema(SEARCH_PATH),
            annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
        ),
        types.Tool(
            name="verify_citations",
            title="Check an answer's citations",
            description=VERIFY_DESCRIPTION,
            input_schema=api_input_schema(VERIFY_PATH),
            annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
        ),
        types.Tool(
            name="collections",
            title="What this key may search",
            description=COLLECTIONS_DESCRIPTION,
            input_schema={
                "type": "object",
                "properties": {
                    "reader": {
                        "type": "string",
                        "description": "the registered reader per-reader collections are mapped for",
                    }
                },
                "additionalProperties": False,
            },
            annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
        ),
    ]


async def tool_call(name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
    """Run one tool for the exchange's caller. A refusal is a tool error the agent can read and act on."""
    secret = caller_secret.get()
    if not secret:
        return _error({"detail": "An API key is required: 'Authorization: Bearer <key>' (stdio: KB_MCP_KEY)."}, 401)
    if name not in (*API_TOOLS, "collections"):
        return _error(
            {"detail": f"no tool named {name!r}: the tools are search, verify_citations and collections"}, 400
        )
    try:
        if name in API_TOOLS:
            status, body = await sync_to_async(api_call, thread_sensitive=True)(
                secret, API_TOOLS[name], arguments or {}, caller_host.get()
            )
        else:
            status, body = await sync_to_async(key_collections, thread_sensitive=True)(secret, arguments or {})
    except Exception as exc:
        # What the API answers 500 to: logged by kind only (its message may quote the question); the agent gets
        # a server error in the platform's words.
        logger.error("MCP tool %s failed: %s", name, type(exc).__name__)
        return _error({"detail": SERVER_ERROR}, 500)
    if status >= 400:
        return _error(body, status)
    return types.CallToolResult(
        content=[types.TextContent(text=json.dumps(body, ensure_ascii=False))], structured_content=body
    )


def _error(body: Any, status: int) -> types.CallToolResult:
    answer = {"status": status, "error": body}
    return types.CallToolResult(
        content=[types.TextContent(text=json.dumps(answer, ensure_ascii=False))],
        structured_content=answer,
        is_error=True,
    )


# --- search and verify_citations: the API operations, in-process -------------------------------------------

API_TOOLS = {"search": SEARCH_PATH, "verify_citations": VERIFY_PATH}


def api_call(secret: str, path: str, arguments: dict[str, Any], host: str = "localhost") -> tuple[int, Any]:
    """POST `path` with this key and these arguments as the body: (status, the JSON answer)."""
    raw = json.dumps(arguments).encode()
    name, _, port = host.partition(":")
    request = WSGIRequest(
        {
            "REQUEST_METHOD": "POST",
            "PATH_INFO": path,
            "SCRIPT_NAME": "",
            "QUERY_STRING": "",
            "CONTENT_TYPE": "application/json",
            "CONTENT_LENGTH": str(len(raw)),
            "HTTP_AUTHORIZATION": f"Bearer {secret}",
            "HTTP_HOST": host,
            "SERVER_NAME": name,
            "SERVER_PORT": port or "80",
            "REMOTE_ADDR": "127.0.0.1",
            "wsgi.input": io.BytesIO(raw),
            "wsgi.url_scheme": "http",
        }
    )
    match = resolve(path)
    response = match.func(request, *match.args, **match.kwargs)
    response.render()
    return response.status_code, json.loads(response.content or b"null")


@cache
def api_input_schema(path: str) -> dict[str, Any]:
    """The API's request schema of POST `path`, as a self-contained JSON Schema."""
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    body = schema["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]
    return _json_schema(_inline(body, schema.get("components", {}).get("schemas", {})))


def _inline(node: Any, components: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
            return _inline(copy.deepcopy(components[ref.rsplit("/", 1)[1]]), components)
        return {k: _inline(v, components) for k, v in node.items()}
    if isinstance(node, list):
        return [_inline(v, components) for v in node]
    return node


def _json_schema(node: Any) -> Any:
    # OpenAPI 3.0's `nullable: true` is not JSON Schema: say it the JSON Schema way, so a client validating
    # arguments accepts the nulls the API accepts.
    if isinstance(node, dict):
        out = {k: _json_schema(v) for k, v in node.items() if k != "nullable"}
        if node.get("nullable") and isinstance(node.get("type"), str):
            out["type"] = [node["type"], "null"]
        return out
    if isinstance(node, list):
        return [_json_schema(v) for v in node]
    return node


# --- collections ------------------------------------------------------------------------------------------


def key_collections(secret: str, arguments: dict[str, Any]) -> tuple[int, Any]:
    key = api_key_resolve(secret=secret)
    if key is None:
        return 401, {"detail": "This API key is not valid (unknown or revoked)."}
    reader = arguments.get("reader")
    if reader is not None and not isinstance(reader, str):
        return 400, {"reader": ["must be the name of a registered reader"]}
    unexpected = sorted(set(arguments) - {"reader"})
    if unexpected:
        return 400, {"detail": f"unknown arguments: {', '.join(unexpected)}; this tool takes only `reader`"}
    # Reads only: from a read replica when one is fresh (infra/db_routing.py).
    try:
        return read_only_call(lambda: _listed_collections(key, reader))[0]
    except ReplicaUnavailable as exc:  # KB_REPLICA_FALLBACK=refuse and no fresh replica: the REST doors' 503
        return 503, {"detail": str(exc)}


def _listed_collections(key: ApiKey, reader: str | None) -> tuple[int, Any]:
    listed = []
    for collection in searchable_collections(key).order_by("name"):
        try:
            corpus_map: dict[str, Any] | None = collection_map_for_reader(key=key, collection=collection, reader=reader)
            why_no_map = None
        except DomainError as exc:
            if exc.meaning == "forbidden":  # an unknown reader reads nothing anywhere: say so once
                return 403, {"detail": str(exc)}
            if isinstance(exc, MapReaderInvalid):  # a name no row can hold: the REST map's 400, word for word
                return 400, {"reader": [str(exc)]}
            corpus_map, why_no_map = None, str(exc)
        listed.append(
            {
                "name": collection.name,
                "description": collection.description,
                "languages": collection_languages(collection),
                "languages_pinned": collection.languages,
                "per_reader": collection.per_reader,
                "metadata_schema": collection.metadata_schema,
                "map": corpus_map,
                "map_refused": why_no_map,
            }
        )
    return 200, {"collections": listed}
