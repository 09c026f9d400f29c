"""Per-reader collections: labels filter paragraphs, windows break around what the reader may not read."""

from __future__ import annotations

import json

import pytest

from collections_app.models import Build, Chunk
from collections_app.services.collections import collection_update
from retrieval.services import reader_create
from tests.files.documents import html_bytes

SECTIONS = [
    (1, "Office", ""),
    (2, "Parking", "Staff cars must be left in the underground garage beneath building B, level minus two."),
    (2, "Salaries", "Salary bands for the engineering department are reviewed every March by the board."),
    (2, "Bicycles", "Cyclists can lock their bikes in the covered rack next to the main entrance."),
]


@pytest.fixture
def per_reader(cast, collection):
    return collection_update(collection=collection, per_reader=True)


def test_a_build_with_unlabelled_paragraphs_says_how_many(cast, per_reader, upload):
    upload(cast.editor, per_reader, "office.html", html_bytes(SECTIONS))
    (build,) = Build.objects.filter(collection=per_reader)
    assert "3 paragraphs readable by every reader (they carry no reader label)" in build.warnings

    labelled = upload(
        cast.editor, per_reader, "hr.txt", b"Payroll runs on the 25th of every month.",
        labels=json.dumps(["hr"]),
    )  # fmt: skip
    build = Build.objects.get(document_id=labelled.json()["document_id"])
    assert build.warnings == []
    assert Chunk.objects.get(document_id=labelled.json()["document_id"]).labels == ["hr"]


def test_labels_filter_paragraphs_and_windows_break_around_a_restricted_one(cast, per_reader, upload):
    document_id = upload(cast.editor, per_reader, "office.html", html_bytes(SECTIONS)).json()["document_id"]
    Chunk.objects.filter(document_id=document_id, text__contains="Salary").update(labels=["hr"])

    reader_create(tenant=cast.tenant, name="bob@example.com", labels=["sales"])
    reader_create(tenant=cast.tenant, name="ada@example.com", labels=["hr"])

    def search(reader, query="where do I secure my cycle?"):
        body = {"query": query, "around": 1, "top_n": 1, "reader": reader}
        return cast.viewer.post("/api/search", body, format="json").json()["results"]

    (outsider_view,) = search("bob@example.com")
    assert "Salary" not in outsider_view["text"] and outsider_view["passages"] == 1
    (hr_view,) = search("ada@example.com")
    assert "Salary bands" in hr_view["text"] and hr_view["passages"] == 2
    assert all("Salary" not in r["text"] for r in search("bob@example.com", "salary bands review"))
