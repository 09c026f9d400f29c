"""A request field the endpoint does not take is a 400 naming it and the fields it does take, never ignored.

`{"query": ..., "min_score": 0.9}` used to search unfloored as if the caller had not asked: a typo, or a setting
sent to the wrong endpoint, changed the answer without a word. Every request body and the map's query string
are checked in one place (doors/api/inputs.py).
"""

from __future__ import annotations

import uuid

import pytest

from accounts.readers import reader_create


def _cases(collection_id: str) -> list[tuple[str, str, dict, str, str]]:
    """(method, path, what is sent, the unknown field, one field the request does take)."""
    base = f"/api/manage/collections/{collection_id}"
    cited = [{"paragraph_id": str(uuid.uuid4()), "quote": "x"}]
    return [
        ("post", "/api/search", {"query": "where do I lock my bicycle", "min_score": 0.9}, "min_score", "query"),
        ("get", f"{base}/map", {"reder": "ada@example.com"}, "reder", "reader"),
        ("post", "/api/citations/verify", {"citations": cited, "serch_id": None}, "serch_id", "search_id"),
        ("post", f"{base}/golden", {"question": "Bikes?", "markers": ["rack"], "answer": "rack"}, "answer", "markers"),
        ("post", f"{base}/evaluate", {"top_n": 5, "as_reader": "ada@example.com"}, "as_reader", "reader"),
        ("post", f"{base}/measure", {"preset": "chunkings", "flor": 0.5}, "flor", "floor"),
    ]


@pytest.mark.parametrize("case", range(6), ids=["search", "map", "citations", "golden", "evaluate", "measure"])
def test_an_unknown_field_is_a_400_naming_it_and_the_accepted_fields(cast, collection, case) -> None:
    reader_create(tenant=cast.tenant, name="ada@example.com", labels=["hr"])
    method, path, body, unknown, accepted = _cases(str(collection.pk))[case]

    send = getattr(cast.editor, method)
    answer = send(path, body) if method == "get" else send(path, body, format="json")

    assert answer.status_code == 400, (answer.status_code, answer.content[:300])
    said = answer.json()
    assert unknown in said, said
    assert said[unknown][0].startswith("unknown field; the accepted fields are: ") and accepted in said[unknown][0]


def test_an_unknown_field_inside_a_citation_is_named_where_it_is(cast) -> None:
    body = {"citations": [{"paragraph_id": str(uuid.uuid4()), "qoute": "x"}]}

    answer = cast.viewer.post("/api/citations/verify", body, format="json")

    assert answer.status_code == 400, answer.content[:300]
    assert "qoute" in answer.json()["citations"]["0"], answer.json()  # the first citation


def test_a_search_with_only_known_fields_still_answers(cast, collection) -> None:
    answer = cast.viewer.post("/api/search", {"query": "lockers", "top_n": 3, "around": 0}, format="json")

    assert answer.status_code == 200, answer.content[:300]


# --- collections: create, PATCH, re-index, re-chunk ------------------------------------------------------------


def _refused(answer, unknown: str, accepted: str | None) -> None:
    assert answer.status_code == 400, (answer.status_code, answer.content[:300])
    said = answer.json()
    assert unknown in said, said
    assert said[unknown][0].startswith("unknown field; "), said
    if accepted:
        assert accepted in said[unknown][0], said


def test_a_collection_create_with_an_unknown_field_is_refused(cast) -> None:
    answer = cast.editor.post("/api/manage/collections", {"name": "uf1", "chunk_sise": 64}, format="json")

    _refused(answer, "chunk_sise", "chunk_size")


def test_a_collection_patch_with_an_unknown_field_is_refused(cast, collection) -> None:
    path = f"/api/manage/collections/{collection.pk}"

    answer = cast.editor.patch(path, {"descriptoin": "typo"}, format="json")

    _refused(answer, "descriptoin", "description")


def test_what_get_answered_may_be_patched_back_unchanged(cast, collection) -> None:
    path = f"/api/manage/collections/{collection.pk}"
    body = cast.editor.get(path).json()

    answer = cast.editor.patch(path, body, format="json")

    assert answer.status_code == 200, answer.content[:300]


def test_a_reindex_with_a_field_is_refused_and_nothing_is_queued(cast, collection) -> None:
    answer = cast.editor.post(
        f"/api/manage/collections/{collection.pk}/reindex", {"chunk_strategy": "fixed"}, format="json"
    )

    _refused(answer, "chunk_strategy", None)
    assert "no fields" in answer.json()["chunk_strategy"][0]
    collection.refresh_from_db()
    assert collection.chunk_strategy != "fixed" and collection.reindex_generation is None


def test_a_rechunk_with_a_field_is_refused(cast, collection, upload) -> None:
    from collections_app.models import Document
    from tests.files.documents import html_bytes

    sent = upload(cast.editor, collection, "office.html", html_bytes([(1, "Lockers", "Bikes go in the rack.")]))
    document = Document.objects.get(pk=sent.json()["document_id"])

    answer = cast.editor.post(
        f"/api/manage/collections/{collection.pk}/documents/{document.pk}/rechunk", {"chunk_sise": 10}, format="json"
    )

    _refused(answer, "chunk_sise", None)
