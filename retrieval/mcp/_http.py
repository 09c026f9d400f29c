"""Streamable HTTP at /mcp, served by Django under WSGI.

The SDK's transport is an ASGI application. Each POST is one self-contained exchange in stateless
JSON-response mode (no session to keep between requests, no open stream), so this view hands the request to
a fresh `StreamableHTTPSessionManager` inside `async_to_sync`, collects the ASGI answer and returns it as an
ordinary Django response. The tools' database work runs back on the request's own thread
(`sync_to_async(thread_sensitive=True)` under `async_to_sync`), with the request's connection.

The key is checked here first: no key or a wrong one is a 401 before any MCP message is read.
"""

from __future__ import annotations

import json
from collections.abc import MutableMapping
from typing import Any

import anyio
from asgiref.sync import async_to_sync
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.request import split_domain_port
from django.views.decorators.csrf import csrf_exempt
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from accounts.keys import api_key_resolve

from ._server import mcp_server
from ._tools import caller_host, caller_secret

# The largest JSON-RPC message read (the API's own JSON limit is of the same order).
MAX_BODY_BYTES = 1_000_000
# The longest one exchange may take (a search with a judge and a planner is well under it).
EXCHANGE_SECONDS = 300


@csrf_exempt
def mcp_http(request: HttpRequest) -> HttpResponse:
    scheme, _, secret = request.headers.get("Authorization", "").partition(" ")
    secret = secret.strip()
    if scheme.lower() != "bearer" or not secret:
        return _unauthorized("An API key is required: 'Authorization: Bearer <key>'.")
    if api_key_resolve(secret=secret) is None:
        return _unauthorized("This API key is not valid (unknown or revoked).")
    if request.method != "POST":
        # Every exchange is one POST (stateless, JSON answers): no server-sent stream to open (GET) and no
        # session to end (DELETE). 405 is the answer the protocol names for a server without them.
        refusal = JsonResponse({"detail": "MCP here is one POST per message (stateless)."}, status=405)
        refusal["Allow"] = "POST"
        return refusal
    if _declared_length(request) > MAX_BODY_BYTES:
        return JsonResponse({"detail": f"An MCP message is at most {MAX_BODY_BYTES} bytes."}, status=413)
    malformed = jsonrpc_refusal(request.body)
    if malformed is not None:
        code, message = malformed
        return JsonResponse({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}, status=400)
    status, headers, body = async_to_sync(_exchange)(_asgi_scope(request), request.body, secret, request.get_host())
    response = HttpResponse(body, status=status)
    for name, value in headers:
        if name.lower() not in ("content-length", "transfer-encoding", "connection"):
            response[name] = value
    return response


# JSON-RPC's own error codes.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600


def jsonrpc_refusal(body: bytes) -> tuple[int, str] | None:
    """A message this server does not take, as (JSON-RPC error code, plain words); None when it may go on to the
    protocol (which answers its own errors). Said here, before the SDK, whose refusals of these are its
    validation library's internals."""
    try:
        message = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return PARSE_ERROR, "Parse error: the body is not JSON; send one JSON-RPC 2.0 message as a JSON object."
    if isinstance(message, list):
        return INVALID_REQUEST, (
            "Invalid request: a JSON-RPC batch (a list of messages) is not accepted; send one message per POST."
        )
    if not isinstance(message, dict):
        return INVALID_REQUEST, "Invalid request: a JSON-RPC message is a JSON object."
    if "id" in message and (isinstance(message["id"], bool) or not isinstance(message["id"], str | int)):
        return INVALID_REQUEST, "Invalid request: id must be a string or an integer (leave it out for a notification)."
    return None


def _declared_length(request: HttpRequest) -> int:
    value = request.headers.get("Content-Length") or "0"
    return int(value) if value.isdigit() else 0  # Django itself refuses a body it cannot bound


def _unauthorized(message: str) -> JsonResponse:
    response = JsonResponse({"detail": message}, status=401)
    response["WWW-Authenticate"] = 'Bearer realm="kbsite"'
    return response


def _asgi_scope(request: HttpRequest) -> dict[str, Any]:
    headers = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in request.headers.items()]
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.path.encode(),
        "root_path": "",
        "query_string": request.META.get("QUERY_STRING", "").encode("latin-1"),
        "headers": headers,
        "client": (request.META.get("REMOTE_ADDR", ""), 0),
        "server": (split_domain_port(request.get_host())[0], int(request.get_port() or 80)),
    }


async def _exchange(scope: dict[str, Any], body: bytes, secret: str, host: str) -> tuple[int, list, bytes]:
    caller_secret.set(secret)
    caller_host.set(host)
    sent: dict[str, Any] = {"status": 500, "headers": [], "body": b""}
    delivered = False
    answered = anyio.Event()

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await answered.wait()  # the client stays connected until the whole answer is written
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            sent["status"] = message["status"]
            sent["headers"] = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in message.get("headers", [])]
        elif message["type"] == "http.response.body":
            sent["body"] += message.get("body", b"")
            if not message.get("more_body", False):
                answered.set()

    # Host and origin are Django's to check (ALLOWED_HOSTS); the SDK's own check is off (security_settings None).
    manager = StreamableHTTPSessionManager(app=mcp_server(), json_response=True, stateless=True)
    async with manager.run():
        # A bound, so a worker is never held by an answer that does not end (JSON mode always ends).
        with anyio.move_on_after(EXCHANGE_SECONDS) as bound:
            await manager.handle_request(scope, receive, send)
    if bound.cancelled_caught and not answered.is_set():
        return 504, [("Content-Type", "application/json")], b'{"detail": "the MCP exchange did not finish in time"}'
    return sent["status"], sent["headers"], sent["body"]
