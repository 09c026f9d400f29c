"""A hidden paragraph never comes back to a reader: not through search, a window (`around`), a parent section
(`expand`, `parent_return`), the corpus map, MCP or an export's read (live().paragraphs())."""

from __future__ import annotations

import pytest

from accounts.issuing import api_key_create
from collections_app.models import Chunk, Collection
from collections_app.services.paragraph_edits import paragraph_hide
from retrieval.mcp._tools import SEARCH_PATH, api_call
from tests.collections_app.paragraphs.conftest import base, paragraph, search, texts
from tests.files.documents import html_bytes
from tests.files.sections import SECTIONS


def hide(cast, document, contains: str) -> Chunk:
    row = paragraph(document, contains)
    answer = cast.editor.patch(f"{base(document)}/paragraphs/{row.pk}", {"hidden": True}, format="json")
    assert answer.status_code == 200, answer.content
    return row


def test_a_window_breaks_around_a_hidden_neighbour(cast, handbook):
    (before,) = search(cast.viewer, "refunds card purchase", around=1, top_n=1)
    assert "Parcels leave" in before["text"] and before["passages"] == 2  # the shipping paragraph stitched on

    hide(cast, handbook, "Parcels leave")

    (after,) = search(cast.viewer, "refunds card purchase", around=1, top_n=1)
    assert "Parcels" not in after["text"] and after["passages"] == 1
    (payroll,) = search(cast.viewer, "salaries last working day bank transfer", around=1, top_n=1)
    assert "Parcels" not in payroll["text"] and payroll["passages"] == 1  # nor closed over from the other side


def test_the_corpus_map_and_an_exports_read_leave_a_hidden_paragraph_out(cast, handbook):
    url = f"/api/manage/collections/{handbook.collection_id}/map"
    assert cast.viewer.get(url).json()["paragraphs"] == 3
    shipping = hide(cast, handbook, "Parcels leave")

    body = cast.viewer.get(url).json()
    assert body["paragraphs"] == 2
    headings = [n["heading"] for n in body["documents"][0]["sections"]]
    assert "Shipping" not in headings and {"Refunds", "Payroll"} <= set(headings)
    exported = Chunk.objects.filter(collection_id=handbook.collection_id).live().paragraphs()
    assert shipping.pk not in set(exported.values_list("pk", flat=True)) and exported.count() == 2


def test_mcp_never_hands_back_a_hidden_paragraph(cast, handbook):
    secret = api_key_create(tenant=cast.tenant, role="viewer").secret
    question = {"query": "parcels leave the warehouse", "around": 1, "top_n": 8}
    status, body = api_call(secret, SEARCH_PATH, question)
    assert status == 200 and "Parcels" in texts(body["results"])

    hide(cast, handbook, "Parcels leave")

    status, body = api_call(secret, SEARCH_PATH, question)
    assert status == 200 and body["results"] and "Parcels" not in texts(body["results"])


@pytest.fixture
def hierarchical(cast, collection, upload) -> Collection:
    reply = cast.editor.patch(
        f"/api/manage/collections/{collection.pk}",
        {"chunk_strategy": "hierarchical", "chunk_size": 200, "chunk_overlap": 20, "min_score": 0},
        format="json",
    )
    assert reply.status_code == 200, reply.json()
    upload(cast.editor, collection, "handbook.html", html_bytes(SECTIONS))
    return collection


def test_a_parent_section_is_put_together_without_its_hidden_child(cast, hierarchical):
    document = hierarchical.documents.get()
    query = "goods unused complete original packaging"
    (section,) = search(cast.viewer, query, top_n=1, expand=True)
    matched = Chunk.objects.get(pk=section["chunk_id"])
    siblings = list(Chunk.objects.filter(parent_id=matched.parent_id).order_by("position__ordinal"))
    assert len(siblings) >= 3 and section["passages"] == len(siblings)
    victim = next(s for s in siblings if s.pk != matched.pk and s.text not in matched.text)
    paragraph_hide(document=document, paragraph_id=victim.pk, hidden=True, by="test")

    for extra in ({"expand": True}, {}):
        if not extra:
            Collection.objects.filter(pk=hierarchical.pk).update(parent_return="parent")
        results = search(cast.viewer, query, top_n=8, **extra)
        assert all(victim.pk != r["chunk_id"] for r in results)
        parent_of = [r for r in results if Chunk.objects.get(pk=r["chunk_id"]).parent_id == matched.parent_id]
        assert parent_of and all(victim.text not in r["text"] for r in parent_of)
        assert all(r["passages"] < len(siblings) for r in parent_of)
