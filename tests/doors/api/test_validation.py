"""One validation layer: what a caller sends is checked before it reaches the database, and the 400 says where."""

from __future__ import annotations

import json

import pytest

from collections_app.models import Document
from collections_app.services.collections import InvalidSettings, collection_update


def test_a_source_uri_must_be_one_a_reader_can_follow_safely(cast, collection, upload):
    refused = upload(cast.editor, collection, "a.txt", b"alpha", source_uri="javascript:alert(1)")
    assert refused.status_code == 400
    assert "upload://, http://, https://, mailto:" in refused.json()["source_uri"][0]
    accepted = upload(cast.editor, collection, "b.txt", b"beta", source_uri="https://wiki.example.org/beta")
    assert accepted.status_code == 202
    assert Document.objects.get(pk=accepted.json()["document_id"]).source_uri == "https://wiki.example.org/beta"


def test_a_nul_inside_a_filter_is_refused_naming_where_it_is(cast, collection):
    body = {"query": "bikes", "filters": {"author": {"in": ["ada", "x\x00y"]}}}
    response = cast.viewer.post("/api/search", body, format="json")
    assert response.status_code == 400
    assert response.json() == {"filters.author.in.1": ["must not contain NUL characters"]}


def test_a_lone_surrogate_in_a_label_is_refused(cast, collection, upload):
    response = upload(cast.editor, collection, "a.txt", b"alpha", ingest_options='{"labels": ["\\udc00"]}')
    assert response.status_code == 400
    assert "lone surrogate" in response.json()["ingest_options"][0]


def test_an_offset_past_what_postgresql_holds_is_a_400_naming_it(cast, collection):
    url = f"/api/manage/collections/{collection.pk}/documents"
    response = cast.viewer.get(url, {"offset": 2**63})
    assert response.status_code == 400 and "offset" in response.json()
    assert cast.viewer.get(url, {"offset": 10}).json()["results"] == []


def test_json_nested_too_deeply_is_a_400_and_too_large_a_413(cast, collection, settings):
    deep = '{"query": "x", "filters": ' + '{"a": ' * 40 + "1" + "}" * 40 + "}"
    nested = cast.viewer.post("/api/search", deep, content_type="application/json")
    assert nested.status_code == 400
    assert "nested too deeply (at most 32 levels)" in next(iter(nested.json().values()))[0]
    settings.KB_MAX_JSON_BYTES = 1000
    large = cast.viewer.post("/api/search", {"query": "x" * 2000}, format="json")
    assert large.status_code == 413
    assert "at most 1000 bytes" in large.json()["detail"]


def test_names_must_fit_their_column_in_bytes_as_well_as_characters(cast):
    assert cast.editor.post("/api/manage/collections", {"name": "é" * 100}, format="json").status_code == 201
    too_long = cast.editor.post("/api/manage/collections", {"name": "é" * 101}, format="json")
    assert too_long.status_code == 400
    assert "200 bytes" in too_long.json()["name"][0]


def test_thousands_of_query_parameters_are_a_json_400(cast, collection):
    url = f"/api/manage/collections/{collection.pk}/documents?" + "&".join(f"p{i}=1" for i in range(5000))
    response = cast.viewer.get(url)
    assert response.status_code == 400
    assert "Too many fields" in response.json()["detail"]


@pytest.mark.parametrize(
    ("field", "value"),
    [("around", 32_767), ("rerank_top_n", 0), ("hybrid_weight", -5), ("min_score", 1e308), ("rerank_top_k", 10**6)],
)
def test_the_collection_service_bounds_settings_for_every_caller(collection, field, value):
    # The admin's collection form saves through this same service, so it gets the same refusal.
    with pytest.raises(InvalidSettings) as refused:
        collection_update(collection=collection, **{field: value})
    assert refused.value.field == field
    collection.refresh_from_db()
    assert getattr(collection, field) != value


def test_a_refused_setting_leaves_the_collection_as_it_was(cast, collection):
    url = f"/api/manage/collections/{collection.pk}"
    response = cast.editor.patch(url, {"chunk_size": 500, "around": 99}, format="json")
    assert response.status_code == 400 and "around" in response.json()
    assert cast.viewer.get(url).json()["chunk_size"] == 1000
    assert json.loads(cast.viewer.get(url).content)["around"] is None


def test_a_form_body_where_json_is_read_is_a_415(cast, collection):
    response = cast.viewer.post("/api/search", {"query": "bikes"}, format="multipart")
    assert response.status_code == 415
    assert "multipart/form-data" in response.json()["detail"]
