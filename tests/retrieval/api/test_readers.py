"""Readers are registered by admins; a search names its reader and the server decides its labels."""

from __future__ import annotations

import pytest

from accounts.readers import reader_create
from collections_app.models import Chunk
from collections_app.services.collections import collection_update
from retrieval.models import SearchEvent
from tests.files.documents import html_bytes
from tests.margins import assert_clears

SECTIONS = [
    (1, "Office", ""),
    (2, "Salaries", "Salary bands for the engineering department are reviewed every March by the board."),
    (2, "Bicycles", "Cyclists can lock their bikes in the covered rack next to the main entrance."),
]


@pytest.fixture
def admin(cast):
    return cast.admin


@pytest.fixture
def hr(cast, collection, upload):
    hr = collection_update(collection=collection, per_reader=True)
    document = upload(cast.editor, hr, "office.html", html_bytes(SECTIONS)).json()["document_id"]
    Chunk.objects.filter(document_id=document, text__contains="Salary").update(labels=["payroll"])
    return hr


def ask(client, **body):
    return client.post("/api/search", {"query": "salary bands review", "around": 0, **body}, format="json")


def test_an_admin_registers_reads_renames_and_removes_a_reader(cast, admin) -> None:
    created = admin.post(
        "/api/manage/readers", {"name": "ada@example.com", "labels": ["hr", "hr", " payroll"]}, format="json"
    )
    assert created.status_code == 201 and created.json()["labels"] == ["hr", "payroll"]
    reader = created.json()["id"]

    assert admin.post("/api/manage/readers", {"name": "ada@example.com"}, format="json").status_code == 409
    assert [r["name"] for r in admin.get("/api/manage/readers").json()] == ["ada@example.com"]
    changed = admin.patch(f"/api/manage/readers/{reader}", {"labels": ["finance"]}, format="json")
    assert changed.status_code == 200 and changed.json()["labels"] == ["finance"]
    assert admin.delete(f"/api/manage/readers/{reader}").status_code == 204
    assert admin.get(f"/api/manage/readers/{reader}").status_code == 404


def test_only_admin_keys_see_or_change_readers_and_never_another_tenants(cast, admin) -> None:
    reader = reader_create(tenant=cast.tenant, name="ada@example.com", labels=["hr"])

    assert cast.editor.get("/api/manage/readers").status_code == 403
    assert cast.viewer.post("/api/manage/readers", {"name": "eve"}, format="json").status_code == 403
    assert cast.outsider.get(f"/api/manage/readers/{reader.pk}").status_code == 404
    assert cast.outsider.get("/api/manage/readers").json() == []


def test_a_bad_reader_name_or_label_is_a_400_naming_it(cast, admin) -> None:
    assert "name" in admin.post("/api/manage/readers", {"name": "é" * 150}, format="json").json()
    answer = admin.post("/api/manage/readers", {"name": "x", "labels": ["a\x00b"]}, format="json").json()
    assert any(key.startswith("labels") for key in answer)
    long_label = admin.post("/api/manage/readers", {"name": "x", "labels": ["l" * 101]}, format="json")
    assert long_label.status_code == 400 and "labels" in long_label.json()


def test_a_search_reads_with_the_labels_the_server_gives_its_reader(cast, hr) -> None:
    reader_create(tenant=cast.tenant, name="ada@example.com", labels=["payroll"])
    reader_create(tenant=cast.tenant, name="bob@example.com", labels=["sales"])

    ada = ask(cast.viewer, reader="ada@example.com").json()
    bob = ask(cast.viewer, reader="bob@example.com").json()["results"]

    # Ada's answer holds the salary paragraph because its score passes the floor.
    (salary,) = [r for r in ada["results"] if "Salary bands" in r["text"]]
    assert_clears(salary["score"], ada["floor"], what="the salary paragraph")
    assert all("Salary" not in r["text"] for r in bob)
    assert SearchEvent.objects.filter(reader__name="ada@example.com").count() == 1


def test_a_search_may_not_claim_labels(cast, hr) -> None:
    response = ask(cast.viewer, reader_labels=["payroll"])
    assert response.status_code == 400 and "reader" in str(response.json()["reader_labels"])


def test_a_per_reader_collection_without_a_reader_is_refused_before_retrieval(cast, hr) -> None:
    response = ask(cast.viewer)
    assert response.status_code == 400 and "handbook" in response.json()["reader"][0]
    assert SearchEvent.objects.count() == 0


def test_an_unknown_reader_reads_nothing(cast, hr) -> None:
    reader_create(tenant=cast.outsider_tenant, name="mallory@example.com", labels=["payroll"])

    theirs = ask(cast.viewer, reader="mallory@example.com")
    nowhere = ask(cast.viewer, reader="nobody@example.com")

    assert theirs.status_code == nowhere.status_code == 403
    assert "registered" in theirs.json()["detail"]


@pytest.mark.parametrize("name", ["any", " ANY ", "a,b"])
def test_a_reader_name_that_reads_as_key_delegation_syntax_is_a_400_saying_why(cast, admin, name) -> None:
    answer = admin.post("/api/manage/readers", {"name": name}, format="json")
    assert answer.status_code == 400, answer.content
    message = str(answer.json()["name"])
    assert ("reserved" in message) if "," not in name else ("comma" in message)
    reader = reader_create(tenant=cast.tenant, name="ada@example.com")
    renamed = admin.patch(f"/api/manage/readers/{reader.pk}", {"name": name}, format="json")
    assert renamed.status_code == 400 and "name" in renamed.json()
