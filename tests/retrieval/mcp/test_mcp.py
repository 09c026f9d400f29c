"""The MCP server, driven by the official SDK's own client: over stdio (`manage.py mcp` as a subprocess) and
over streamable HTTP (/mcp on a live server). It lists the tools and answers a question with the same
paragraphs, in the same order, as POST /api/search with the same key.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any
from urllib.parse import quote

import anyio
import httpx2
import pytest
from django.conf import settings
from django.db import connection
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from accounts.issuing import api_key_create
from accounts.models import Role
from accounts.readers import reader_create
from collections_app.services.collections import collection_create
from retrieval.models import SearchEvent
from tests.conftest import client_for
from tests.files.documents import HANDBOOK, docx_bytes
from tests.files.sections import SECTIONS
from tests.margins import assert_clears, assert_leads, cosines

pytestmark = pytest.mark.django_db(transaction=True)

ASKED = "when is my money paid back"
QUESTION = {"query": ASKED, "collections": ["handbook"], "top_n": 5}


@pytest.fixture
def corpus(db, upload) -> dict[str, Any]:
    from accounts.models import Tenant

    tenant = Tenant.objects.create(name="acme")
    collection = collection_create(tenant=tenant, name="handbook")
    other = collection_create(tenant=tenant, name="policies")
    collection_create(tenant=tenant, name="hr", per_reader=True)
    ada = reader_create(tenant=tenant, name="ada@example.com", labels=["hr"])
    collection_create(tenant=Tenant.objects.create(name="globex"), name="globex-secrets")
    secret = api_key_create(tenant=tenant, role=Role.VIEWER, readers=[ada]).secret  # the agent acts for Ada
    editor = client_for(api_key_create(tenant=tenant, role=Role.EDITOR).secret)
    assert upload(editor, collection, "handbook.docx", docx_bytes(HANDBOOK)).status_code == 202
    assert upload(editor, other, "policies.docx", docx_bytes(SECTIONS)).status_code == 202
    return {"tenant": tenant, "collection": collection, "secret": secret, "api": client_for(secret)}


def _api_answer(corpus: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    answer = corpus["api"].post("/api/search", body, format="json")
    assert answer.status_code == 200, answer.content
    return answer.json()


async def _drive(session: ClientSession) -> dict[str, Any]:
    await session.initialize()
    tools = await session.list_tools()
    search = await session.call_tool("search", QUESTION)
    collections = await session.call_tool("collections", {})
    as_reader = await session.call_tool("collections", {"reader": "ada@example.com"})
    theirs = await session.call_tool("search", {"query": "secrets", "collections": ["globex-secrets"]})
    refused = await session.call_tool("search", {"query": "", "collections": ["handbook"]})
    return {
        "tools": {t.name: t for t in tools.tools},
        "search": search,
        "collections": collections,
        "as_reader": as_reader,
        "theirs": theirs,
        "refused": refused,
    }


def _check(outcome: dict[str, Any], corpus: dict[str, Any]) -> None:
    assert set(outcome["tools"]) == {"search", "verify_citations", "collections"}
    schema = outcome["tools"]["search"].input_schema
    assert schema["required"] == ["query"] and "reader" in schema["properties"]  # the API's request schema

    search = outcome["search"]
    assert not search.is_error, search.content
    via_mcp = json.loads(search.content[0].text)
    assert via_mcp == search.structured_content
    via_api = _api_answer(corpus, QUESTION)
    ids = [r["chunk_id"] for r in via_mcp["results"]]
    scores = (
        [(r["score"], r["chunk_id"][:8]) for r in via_mcp["results"]],
        [(r["score"], r["chunk_id"][:8]) for r in via_api["results"]],
    )
    assert ids and ids == [r["chunk_id"] for r in via_api["results"]], scores
    assert "original card" in via_mcp["results"][0]["text"]
    # The refund paragraph answers because its score passes the floor, and its first place does not hang on a
    # CPU's rounding: its cosine leads every other paragraph's (the keyword side ranks it first too).
    assert_clears(via_mcp["results"][0]["score"], via_mcp["floor"], what="the refund paragraph")
    best, runner_up = cosines(corpus["collection"], ASKED)[:2]
    assert "original card" in best.text
    assert_leads(best.score, runner_up.score, what="the refund paragraph")
    # Both were audited as searches of this key.
    assert SearchEvent.objects.filter(pk__in=[via_mcp["search_id"], via_api["search_id"]]).count() == 2

    listed = outcome["collections"].structured_content["collections"]
    assert [c["name"] for c in listed] == ["handbook", "hr", "policies"]  # nothing of another tenant
    handbook, hr = listed[0], listed[1]
    assert hr["map"] is None and "reader" in hr["map_refused"]  # per-reader: mapped for a named reader only
    as_ada = outcome["as_reader"].structured_content["collections"]
    assert as_ada[1]["map"]["reader"] == "ada@example.com" and as_ada[1]["map_refused"] is None
    theirs = corpus["api"].post("/api/search", {"query": "secrets", "collections": ["globex-secrets"]}, format="json")
    assert outcome["theirs"].structured_content == {"status": theirs.status_code, "error": theirs.json()}
    assert theirs.status_code == 400
    as_api = corpus["api"].get(f"/api/manage/collections/{corpus['collection'].pk}").json()
    assert handbook["languages"] == as_api["languages"] == ["en"] and handbook["per_reader"] is False
    assert handbook["metadata_schema"] == as_api["metadata_schema"]
    expected_map = corpus["api"].get(f"/api/manage/collections/{corpus['collection'].pk}/map").json()
    assert handbook["map"] == expected_map

    refused = outcome["refused"]
    assert refused.is_error
    error = refused.structured_content
    api_error = corpus["api"].post("/api/search", {"query": "", "collections": ["handbook"]}, format="json")
    assert error == {"status": 400, "error": api_error.json()}  # the API's own refusal, word for word


def test_an_agent_over_stdio_gets_the_apis_paragraphs_in_the_apis_order(corpus) -> None:
    db = connection.settings_dict
    host = quote(str(db["HOST"]), safe="")
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "kbsite.settings",
        "DATABASE_URL": f"postgres://{db['USER']}@{host}:{db['PORT']}/{db['NAME']}",
        "KB_STORAGE_ROOT": str(settings.MEDIA_ROOT),
        "KB_MCP_KEY": corpus["secret"],
    }
    server = StdioServerParameters(command=sys.executable, args=["manage.py", "mcp"], env=env, cwd=settings.BASE_DIR)

    async def run() -> dict[str, Any]:
        async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
            return await _drive(session)

    _check(anyio.run(run), corpus)


def test_an_agent_over_streamable_http_gets_the_apis_paragraphs_in_the_apis_order(corpus, live_server) -> None:
    url = f"{live_server.url}/mcp"

    async def run(headers: dict[str, str]) -> dict[str, Any]:
        async with (
            httpx2.AsyncClient(headers=headers, timeout=120) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            return await _drive(session)

    _check(anyio.run(run, {"Authorization": f"Bearer {corpus['secret']}"}), corpus)


def test_mcp_over_http_without_a_valid_key_is_a_401(corpus, live_server) -> None:
    import requests

    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream"}
    none = requests.post(f"{live_server.url}/mcp", json=message, headers=headers, timeout=30)
    wrong = requests.post(
        f"{live_server.url}/mcp", json=message, headers={**headers, "Authorization": "Bearer kb_wrong"}, timeout=30
    )
    assert none.status_code == wrong.status_code == 401
    assert none.headers["WWW-Authenticate"].startswith("Bearer")


def test_mcp_over_http_answers_what_it_cannot_serve_with_a_4xx(client) -> None:
    from accounts.models import Tenant

    secret = api_key_create(tenant=Tenant.objects.create(name="acme"), role=Role.VIEWER).secret
    auth = {"HTTP_AUTHORIZATION": f"Bearer {secret}", "HTTP_ACCEPT": "application/json, text/event-stream"}

    stream = client.get("/mcp", **auth)  # no server-sent stream: each POST stands alone
    garbage = client.post("/mcp", data=b"{not json", content_type="application/json", **auth)
    listed = client.post(
        "/mcp",
        data={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
        content_type="application/json",
        HTTP_MCP_PROTOCOL_VERSION="2025-06-18",
        **auth,
    )

    assert stream.status_code == 405 and stream["Allow"] == "POST"
    assert garbage.status_code == 400, garbage.content
    assert listed.status_code == 200, listed.content
    assert {t["name"] for t in listed.json()["result"]["tools"]} == {"search", "verify_citations", "collections"}


# (A lone surrogate never gets this far: the MCP SDK's JSON parser answers it with a JSON-RPC parse error.)
@pytest.mark.parametrize("reader", ["\x00", "ada\x00@example.com"])
def test_a_reader_name_no_row_can_hold_is_the_same_400_over_mcp_as_over_rest(corpus, client, reader) -> None:
    auth = {"HTTP_AUTHORIZATION": f"Bearer {corpus['secret']}", "HTTP_ACCEPT": "application/json, text/event-stream"}
    call = {"name": "collections", "arguments": {"reader": reader}}

    mcp = client.post(
        "/mcp",
        data={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call},
        content_type="application/json",
        HTTP_MCP_PROTOCOL_VERSION="2025-06-18",
        **auth,
    )

    rest = corpus["api"].get(f"/api/manage/collections/{corpus['collection'].pk}/map", {"reader": reader})
    assert rest.status_code == 400 and "reader" in rest.json()
    assert "result" in mcp.json(), mcp.content[:400]
    result = mcp.json()["result"]
    assert mcp.status_code == 200 and result["isError"] is True
    said = result["content"][0]["text"]
    assert "400" in said and "NUL" in said, said  # the platform's words, not the database's
