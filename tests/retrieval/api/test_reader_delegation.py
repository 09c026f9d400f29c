"""Reader delegation: a key acts only for the readers an admin gave it when it was made (a list, or any).

Naming another reader answers 403 at every door that reads as a reader — search, the corpus map, citations and
MCP — with the same words whether that reader exists or not, so a key cannot list the tenant's readers by asking.
Keys are made here the way an admin makes them: `manage.py create_api_key --readers ...`.
"""

from __future__ import annotations

import io
import json
import re

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from accounts.models import ApiKey
from accounts.readers import reader_create
from collections_app.models import Chunk
from collections_app.services.collections import collection_create
from tests.conftest import client_for
from tests.files.documents import html_bytes

SALARY = "Salary bands for the engineering department are reviewed every March by the board."
SECTIONS = [
    (1, "Office", ""),
    (2, "Salaries", SALARY),
    (2, "Bicycles", "Cyclists can lock their bikes in the covered rack next to the main entrance."),
]
NOT_DELEGATED = "this key may not act for reader"


def create_key(*args: str) -> str:
    out = io.StringIO()
    call_command("create_api_key", "--tenant", "acme", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue().strip().splitlines()[-1]


@pytest.fixture
def hr(cast, upload):
    hr = collection_create(tenant=cast.tenant, name="hr", per_reader=True)
    document = upload(cast.editor, hr, "office.html", html_bytes(SECTIONS)).json()["document_id"]
    Chunk.objects.filter(document_id=document, text__contains="Salary").update(labels=["payroll"])
    reader_create(tenant=cast.tenant, name="hr-reader", labels=["payroll"])
    reader_create(tenant=cast.tenant, name="ada@example.com", labels=["sales"])
    return hr


def ask(client, reader: str):
    body = {"query": "salary bands review", "collections": ["hr"], "around": 0, "reader": reader}
    return client.post("/api/search", body, format="json")


def test_a_viewer_key_made_without_readers_may_not_search_as_a_reader(cast, hr) -> None:
    viewer = client_for(create_key("--role", "viewer"))

    answer = ask(viewer, "hr-reader")

    assert answer.status_code == 403, answer.content[:300]
    said = answer.json()["detail"]
    assert NOT_DELEGATED in said and "hr-reader" in said and "--readers" in said
    assert SALARY not in answer.content.decode()


def test_a_key_acts_for_the_readers_it_was_given_and_for_no_other(cast, hr) -> None:
    ada = client_for(create_key("--role", "viewer", "--readers", "ada@example.com"))

    as_ada = ask(ada, "ada@example.com")
    as_hr = ask(ada, "hr-reader")
    as_nobody = ask(ada, "nobody@example.com")  # exists nowhere: the same refusal, so names cannot be probed

    assert as_ada.status_code == 200 and all(SALARY not in r["text"] for r in as_ada.json()["results"])
    assert as_hr.status_code == as_nobody.status_code == 403
    assert as_hr.json()["detail"].replace("hr-reader", "X") == as_nobody.json()["detail"].replace(
        "nobody@example.com", "X"
    )


def test_a_key_made_for_any_reader_reads_as_each_of_them(cast, hr) -> None:
    anyone = client_for(create_key("--role", "viewer", "--readers", "any"))

    as_hr = ask(anyone, "hr-reader")

    assert as_hr.status_code == 200
    assert any(SALARY in r["text"] for r in as_hr.json()["results"])


def test_the_corpus_map_and_citations_refuse_a_reader_the_key_may_not_act_for(cast, hr) -> None:
    secret = create_key("--role", "viewer", "--readers", "ada@example.com")
    client = client_for(secret)
    salary = Chunk.objects.get(collection=hr, text__contains="Salary")

    mapped = client.get(f"/api/manage/collections/{hr.pk}/map", {"reader": "hr-reader"})
    cited = client.post(
        "/api/citations/verify",
        {"citations": [{"paragraph_id": str(salary.pk), "quote": "Salary bands"}], "reader": "hr-reader"},
        format="json",
    )
    own_map = client.get(f"/api/manage/collections/{hr.pk}/map", {"reader": "ada@example.com"})

    assert mapped.status_code == 403 and NOT_DELEGATED in mapped.json()["detail"], mapped.content[:300]
    assert cited.status_code == 403 and NOT_DELEGATED in cited.json()["detail"], cited.content[:300]
    assert "Salaries" not in mapped.content.decode()
    assert own_map.status_code == 200 and own_map.json()["reader"] == "ada@example.com"


@pytest.mark.django_db(transaction=True)
def test_mcp_refuses_a_reader_the_key_may_not_act_for_in_its_tools(cast, hr, client) -> None:
    secret = create_key("--role", "viewer", "--readers", "ada@example.com")
    auth = {"HTTP_AUTHORIZATION": f"Bearer {secret}", "HTTP_ACCEPT": "application/json, text/event-stream"}

    def tool(name: str, arguments: dict) -> dict:
        answer = client.post(
            "/mcp",
            data={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}},
            content_type="application/json",
            HTTP_MCP_PROTOCOL_VERSION="2025-06-18",
            **auth,
        )
        assert answer.status_code == 200, answer.content[:300]
        return answer.json()["result"]

    listed = tool("collections", {"reader": "hr-reader"})
    searched = tool("search", {"query": "salary bands review", "collections": ["hr"], "reader": "hr-reader"})

    for result in (listed, searched):
        assert result["isError"] is True
        said = json.loads(result["content"][0]["text"])
        assert said["status"] == 403 and NOT_DELEGATED in json.dumps(said), said
    assert SALARY not in json.dumps(searched)


def test_create_api_key_refuses_a_reader_the_tenant_has_not_registered_and_makes_no_key(cast, hr) -> None:
    before = ApiKey.objects.count()

    with pytest.raises(CommandError, match=re.escape("no reader named 'eve@example.com' is registered in tenant acme")):
        create_key("--role", "viewer", "--readers", "ada@example.com,eve@example.com")

    assert ApiKey.objects.count() == before


def test_create_api_key_says_any_cannot_be_combined_with_named_readers(cast, hr) -> None:
    before = ApiKey.objects.count()

    with pytest.raises(CommandError, match="'any' cannot be combined"):
        create_key("--role", "viewer", "--readers", "any,hr-reader")

    assert ApiKey.objects.count() == before
