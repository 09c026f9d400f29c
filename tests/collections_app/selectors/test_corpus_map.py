"""GET /api/manage/collections/{id}/map: the table of contents an agent reads before it asks anything."""

from __future__ import annotations

import pytest

from accounts.readers import reader_create
from collections_app.models import Chunk
from collections_app.services.collections import collection_create
from tests.files.documents import HANDBOOK, docx_bytes, html_bytes
from tests.files.sections import SECTIONS

pytestmark = pytest.mark.django_db


def _headings(nodes: list[dict]) -> list:
    return [(n["heading"], n["paragraphs"], _headings(n["sections"])) for n in nodes]


def _check_counts(nodes: list[dict], trail: list[str], rows: list[list[str]]) -> None:
    """Every heading's counts are those of the stored paragraphs whose trail passes through it."""
    for node in nodes:
        path = [*trail, node["heading"]]
        under = [s for s in rows if s[: len(path)] == path]
        assert node["paragraphs"] == len(under) > 0, path
        assert node["direct"] == sum(1 for s in under if s == path), path
        _check_counts(node["sections"], path, rows)


def test_the_map_lists_each_document_with_its_heading_tree_and_paragraph_counts(cast, collection, upload):
    first = upload(cast.editor, collection, "handbook.docx", docx_bytes(HANDBOOK))
    second = upload(cast.editor, collection, "policies.html", html_bytes(SECTIONS))
    assert first.status_code == second.status_code == 202

    answer = cast.viewer.get(f"/api/manage/collections/{collection.pk}/map")

    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["collection"] == {"id": str(collection.pk), "name": collection.name}
    assert [d["filename"] for d in body["documents"]] == ["handbook.docx", "policies.html"]
    # Every count is the number of stored paragraphs under that heading trail, checked against the rows.
    for document in body["documents"]:
        rows = list(Chunk.objects.filter(document_id=document["id"]).values_list("section", flat=True))
        assert document["paragraphs"] == len(rows) > 0

        _check_counts(document["sections"], [], rows)
    assert body["paragraphs"] == Chunk.objects.filter(collection=collection).count()
    tree = _headings(body["documents"][0]["sections"])
    assert tree == [("Handbook", 4, [("3 Returns", 2, [("3.2 Refunds", 1, [])]), ("4 Delivery", 1, [])])]
    # Headings keep their document order, not the alphabet's.
    assert [n["heading"] for n in body["documents"][1]["sections"][0]["sections"]] == ["Returns", "Shipping", "Payroll"]


def test_the_same_paragraphs_give_the_same_map_every_time(cast, collection, upload):
    upload(cast.editor, collection, "policies.html", html_bytes(SECTIONS))
    upload(cast.editor, collection, "handbook.docx", docx_bytes(HANDBOOK))
    url = f"/api/manage/collections/{collection.pk}/map"
    cast.agent.collections.add(collection)  # an agent's key maps only its agent's collections

    first, second = cast.viewer.get(url), cast.agent_client.get(url)

    assert first.status_code == second.status_code == 200
    assert first.content == second.content  # byte for byte: order included


def test_another_tenants_collection_has_no_map(cast, collection, upload):
    upload(cast.editor, collection, "handbook.docx", docx_bytes(HANDBOOK))
    theirs = collection_create(tenant=cast.outsider_tenant, name="theirs")

    assert cast.outsider.get(f"/api/manage/collections/{collection.pk}/map").status_code == 404
    assert cast.viewer.get(f"/api/manage/collections/{theirs.pk}/map").status_code == 404


def test_a_per_reader_collection_is_mapped_for_a_registered_reader_only(cast, upload):
    hr = collection_create(tenant=cast.tenant, name="hr", per_reader=True)
    upload(cast.editor, hr, "policies.html", html_bytes(SECTIONS))
    Chunk.objects.filter(collection=hr, section__contains=["Payroll"]).update(labels=["payroll"])
    reader_create(tenant=cast.tenant, name="ada@example.com", labels=["payroll"])
    reader_create(tenant=cast.tenant, name="bob@example.com", labels=["sales"])
    reader_create(tenant=cast.outsider_tenant, name="eve@example.com", labels=["payroll"])
    url = f"/api/manage/collections/{hr.pk}/map"

    without = cast.viewer.get(url)
    assert without.status_code == 400 and "reader" in without.json()
    assert cast.viewer.get(url, {"reader": "eve@example.com"}).status_code == 403  # another tenant's reader

    ada = cast.viewer.get(url, {"reader": "ada@example.com"}).json()
    bob = cast.viewer.get(url, {"reader": "bob@example.com"}).json()
    ada_headings = [n["heading"] for n in ada["documents"][0]["sections"][0]["sections"]]
    bob_headings = [n["heading"] for n in bob["documents"][0]["sections"][0]["sections"]]
    assert ada["reader"] == "ada@example.com"
    assert ada_headings == ["Returns", "Shipping", "Payroll"]
    assert bob_headings == ["Returns", "Shipping"]  # a heading over nothing bob may read is not shown
    assert ada["paragraphs"] - bob["paragraphs"] == Chunk.objects.filter(labels=["payroll"]).count() > 0


def test_the_map_is_read_in_a_fixed_number_of_queries(cast, collection, upload, django_assert_max_num_queries):
    for n in range(3):
        upload(cast.editor, collection, f"policies-{n}.html", html_bytes([*SECTIONS, (2, f"Annex {n}", "x y z")]))
    with django_assert_max_num_queries(6):  # key, collection, grouped paragraphs, documents: not one per document
        assert cast.viewer.get(f"/api/manage/collections/{collection.pk}/map").status_code == 200
