"""Metadata given at upload: checked against the collection's schema, on every paragraph, selected by `filters`,
kept through a re-chunk; a value that does not fit is a 400 naming the column, and nothing is stored."""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from collections_app.models import Chunk, Collection, Document
from tests.files.documents import HANDBOOK, html_bytes
from tests.files.records import csv_bytes, issue_rows

DELIVERY = [(1, "Delivery notes", "Parcels leave the warehouse every weekday morning and arrive within two days.")]


@pytest.fixture
def open_collection(collection: Collection) -> Collection:
    collection.min_score = 0  # every paragraph can answer: what is counted is what the filter lets through
    collection.save()
    return collection


def uploaded(upload, client, collection, name: str, content: bytes, **extra) -> Document:
    answer = upload(client, collection, name, content, **extra)
    assert answer.status_code == 202, answer.content
    document = Document.objects.get(pk=answer.json()["document_id"])
    assert document.status == "done", document.error
    return document


def search(client, **body) -> dict:
    answer = client.post("/api/search", {"top_n": 50, "around": 0, **body}, format="json")
    assert answer.status_code == 200, answer.content
    return answer.json()


def test_metadata_given_at_upload_is_on_every_paragraph_and_filters_select_it(cast, open_collection, upload):
    hr = uploaded(
        upload, cast.editor, open_collection, "handbook.html", html_bytes(HANDBOOK),
        metadata=json.dumps({"department": "HR", "year": "2026", "valid_from": "2026-01-01"}),
    )  # fmt: skip
    sales = uploaded(
        upload, cast.editor, open_collection, "delivery.html", html_bytes(DELIVERY),
        metadata=json.dumps({"department": "Sales", "year": 2024}),
    )  # fmt: skip

    # Each new key declared a column, typed from its value as a record column is.
    open_collection.refresh_from_db()
    assert open_collection.metadata_schema == {
        "department": {"type": "string"},
        "year": {"type": "number"},
        "valid_from": {"type": "date"},
    }
    assert hr.ingest_options["metadata"] == {"department": "HR", "year": 2026, "valid_from": "2026-01-01"}
    assert {tuple(sorted(m.items())) for m in Chunk.objects.filter(document=hr).values_list("metadata", flat=True)} == {
        (("department", "HR"), ("valid_from", "2026-01-01"), ("year", 2026))
    }

    question = "When do parcels leave the warehouse?"  # both documents answer it
    assert {r["document"]["id"] for r in search(cast.viewer, query=question)["results"]} == {str(hr.pk), str(sales.pk)}
    for filters, expected in [
        ({"department": "HR"}, {str(hr.pk)}),
        ({"year": {"lt": 2025}}, {str(sales.pk)}),
        ({"valid_from": {"gte": "2025-12-31"}}, {str(hr.pk)}),
    ]:
        answer = search(cast.viewer, query=question, filters=filters)
        assert answer["results"], filters
        assert {r["document"]["id"] for r in answer["results"]} == expected, filters
        assert all(r["metadata"].get("department") for r in answer["results"])


def test_a_value_that_does_not_fit_its_column_is_a_400_naming_it_and_nothing_is_stored(cast, collection, upload):
    collection.metadata_schema = {"year": {"type": "number"}, "status": {"type": "enum", "values": ["open"]}}
    collection.save()

    answer = upload(
        cast.editor, collection, "handbook.html", html_bytes(HANDBOOK),
        metadata=json.dumps({"year": "next year", "owner": "Ana", "language": "de"}),
    )  # fmt: skip

    assert answer.status_code == 400, answer.content
    message = answer.json()["metadata"][0]
    assert "year: 'next year' is not a number (the collection declares year as number)" in message
    assert "language: filters answer language from each paragraph itself" in message
    assert not Document.objects.exists()
    collection.refresh_from_db()
    assert set(collection.metadata_schema) == {"year", "status"}  # "owner" was not declared either

    # A date for a document fact is checked as the filters compare it; a list is not one value.
    for metadata, expected in [
        ({"created": "last spring"}, "created: 'last spring' is not a date (expected YYYY-MM-DD)"),
        ({"tags": ["a", "b"]}, "tags: give one value"),
        ([1, 2], "metadata must be a JSON object"),
    ]:
        answer = upload(cast.editor, collection, "handbook.html", html_bytes(HANDBOOK), metadata=json.dumps(metadata))
        assert answer.status_code == 400, answer.content
        assert expected in answer.json()["metadata"][0]
    assert not Document.objects.exists()


def test_a_new_enum_value_joins_the_vocabulary_as_a_records_upload_would(cast, collection, upload):
    collection.metadata_schema = {"status": {"type": "enum", "values": ["closed", "open"]}}
    collection.save()

    given = json.dumps({"status": "review"})
    document = uploaded(upload, cast.editor, collection, "handbook.html", html_bytes(HANDBOOK), metadata=given)

    collection.refresh_from_db()
    assert collection.metadata_schema["status"]["values"] == ["closed", "open", "review"]
    assert document.ingest_options["metadata"] == {"status": "review"}


def test_upload_metadata_survives_a_rechunk_and_a_new_version_keeps_it(
    cast, collection, upload, django_capture_on_commit_callbacks
):
    document = uploaded(
        upload, cast.editor, collection, "handbook.html", html_bytes(HANDBOOK), metadata=json.dumps({"year": 2026})
    )
    before = set(Chunk.objects.filter(document=document).values_list("pk", flat=True))
    collection.chunk_strategy, collection.chunk_size, collection.chunk_overlap = "fixed", 60, 0
    collection.save()

    with django_capture_on_commit_callbacks(execute=True):
        answer = cast.editor.post(f"/api/manage/collections/{collection.pk}/documents/{document.pk}/rechunk")

    assert answer.status_code == 202, answer.content
    chunks = Chunk.objects.filter(document=document)
    assert not before & set(chunks.values_list("pk", flat=True))  # new rows
    assert chunks.count() > len(before)
    assert all(m == {"year": 2026} for m in chunks.values_list("metadata", flat=True))

    # A changed file under its name, uploaded without metadata: the document's values stay.
    again = uploaded(upload, cast.editor, collection, "handbook.html", html_bytes(HANDBOOK[:2]))
    assert again.pk == document.pk and again.version == 2
    assert all(m == {"year": 2026} for m in Chunk.objects.filter(document=document).values_list("metadata", flat=True))


def test_a_records_own_column_wins_over_the_value_given_at_upload(cast, collection, upload):
    rows = issue_rows(6)
    document = uploaded(
        upload, cast.editor, collection, "issues.csv", csv_bytes(rows),
        metadata=json.dumps({"status": "open", "team": "platform"}),
    )  # fmt: skip

    metadata = list(
        Chunk.objects.filter(document=document).order_by("position__ordinal").values_list("metadata", flat=True)
    )
    assert [m["status"] for m in metadata] == [row["status"] for row in rows]
    assert all(m["team"] == "platform" for m in metadata)


def test_metadata_is_refused_with_a_zip_and_among_ingest_options(cast, collection, upload):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("notes.md", "# Notes\n\nSome notes.")
    answer = upload(cast.editor, collection, "notes.zip", out.getvalue(), metadata=json.dumps({"year": 2026}))
    assert answer.status_code == 400
    assert "a .zip import takes no metadata" in answer.json()["metadata"][0]

    answer = upload(
        cast.editor, collection, "handbook.html", html_bytes(HANDBOOK), ingest_options=json.dumps({"metadata": {}})
    )
    assert answer.status_code == 400
    assert "own `metadata` field" in answer.json()["ingest_options"][0]
    assert not Document.objects.exists()


def test_the_same_content_with_other_metadata_is_a_conflict(cast, collection, upload):
    given = json.dumps({"year": 2026})
    uploaded(upload, cast.editor, collection, "handbook.html", html_bytes(HANDBOOK), metadata=given)

    same = upload(cast.editor, collection, "handbook.html", html_bytes(HANDBOOK), metadata=json.dumps({"year": 2026}))
    other = upload(cast.editor, collection, "handbook.html", html_bytes(HANDBOOK), metadata=json.dumps({"year": 2025}))

    assert same.status_code == 200
    assert other.status_code == 409
    assert "already held as handbook.html" in other.json()["detail"]
