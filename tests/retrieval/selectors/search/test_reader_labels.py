"""Per-reader collections: labels filter paragraphs, windows break around what the reader may not read."""

from __future__ import annotations

import json

import pytest

from accounts.readers import reader_create
from collections_app.models import Build, Chunk
from collections_app.services.collections import collection_update
from tests.files.documents import html_bytes
from tests.margins import assert_clears, assert_leads, cosines

SECTIONS = [
    (1, "Office", ""),
    (2, "Parking", "Staff cars must be left in the underground garage beneath building B, level minus two."),
    (2, "Salaries", "Salary bands for the engineering department are reviewed every March by the board."),
    (2, "Bicycles", "Cyclists can lock their bikes in the covered rack next to the main entrance."),
]
CYCLE = "where do I secure my cycle?"


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
    # The one result (top_n 1) is the bicycle paragraph for either reader: the question shares no keyword with
    # any paragraph, so the cosines alone rank them, and the bicycle one leads all three (scored while every
    # paragraph is still unlabelled: the salary one competes for the reader allowed to read it).
    best, runner_up = cosines(per_reader, CYCLE)[:2]
    assert "bikes" in best.text
    assert_leads(best.score, runner_up.score, what="the bicycle paragraph")
    bikes = Chunk.objects.get(document_id=document_id, text__contains="bikes")
    Chunk.objects.filter(document_id=document_id, text__contains="Salary").update(labels=["hr"])

    reader_create(tenant=cast.tenant, name="bob@example.com", labels=["sales"])
    reader_create(tenant=cast.tenant, name="ada@example.com", labels=["hr"])

    def search(reader, query=CYCLE):
        body = {"query": query, "around": 1, "top_n": 1, "reader": reader}
        return cast.viewer.post("/api/search", body, format="json").json()

    def found(reader):
        answer = search(reader)
        (result,) = answer["results"]
        assert result["chunk_id"] == str(bikes.pk)
        assert_clears(result["score"], answer["floor"], what=f"the bicycle paragraph as {reader}")
        return result

    outsider_view = found("bob@example.com")
    assert "Salary" not in outsider_view["text"] and outsider_view["passages"] == 1
    hr_view = found("ada@example.com")
    assert "Salary bands" in hr_view["text"] and hr_view["passages"] == 2
    assert all("Salary" not in r["text"] for r in search("bob@example.com", "salary bands review")["results"])
