"""Golden questions travel with the collection file (kb_golden_questions) and come back on import, linked to the
imported documents and paragraphs: an evaluation of the copy scores what the original scores."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path

import pytest

from collections_app.models import Build, Collection, CollectionFile, Document
from retrieval.models import GoldenQuestion
from tests.retrieval.services.golden.corpus import document, paragraph
from tests.retrieval.services.golden.test_evaluate import evaluate


def export_bytes(client, collection: Collection) -> bytes:
    response = client.get(f"/api/manage/collections/{collection.pk}/export")
    assert response.status_code == 200, response.content
    return b"".join(response.streaming_content)


def import_file(client, content: bytes, name: str, capture):
    file = io.BytesIO(content)
    file.name = "collection.db"
    with capture(execute=True):
        return client.post("/api/manage/collections/import", {"file": file, "name": name}, format="multipart")


@pytest.fixture
def golden(cast, corpus):
    make = GoldenQuestion.objects.create
    return [
        make(tenant=cast.tenant, collection=corpus, question="Where can I lock my bicycle?",
             markers=["covered rack"], note="asked at every induction"),
        make(tenant=cast.tenant, collection=corpus, question="What time is lunch?",
             paragraphs=[paragraph(corpus, "Lunch is served").pk]),
        make(tenant=cast.tenant, collection=corpus, question="How much is the daily allowance abroad?",
             documents=[document(corpus, "travel.html").pk]),
        make(tenant=cast.tenant, collection=corpus, question="Which planet has the most moons?", control=True),
    ]  # fmt: skip


def test_golden_questions_come_back_with_an_import_linked_to_its_documents_and_evaluate_the_same(
    cast, corpus, golden, django_capture_on_commit_callbacks
) -> None:
    before = evaluate(cast.editor, corpus, django_capture_on_commit_callbacks)
    content = export_bytes(cast.editor, corpus)

    response = import_file(cast.editor, content, "handbook-copy", django_capture_on_commit_callbacks)

    assert response.status_code == 202, response.content
    record = CollectionFile.objects.get(pk=response.json()["id"])
    assert record.status == "done", record.error
    copy = Collection.objects.get(tenant=cast.tenant, name="handbook-copy")
    questions = {g.question: g for g in GoldenQuestion.objects.filter(collection=copy)}
    assert sorted(questions) == sorted(g.question for g in golden)
    assert questions["Where can I lock my bicycle?"].markers == ["covered rack"]
    assert questions["Where can I lock my bicycle?"].note == "asked at every induction"
    assert questions["Which planet has the most moons?"].control is True
    # Linked to the copy's own rows, never to the original's ids.
    assert questions["What time is lunch?"].paragraphs == [paragraph(copy, "Lunch is served").pk]
    assert questions["How much is the daily allowance abroad?"].documents == [document(copy, "travel.html").pk]
    assert Build.objects.get(collection=copy).warnings == []

    after = evaluate(cast.editor, copy, django_capture_on_commit_callbacks)
    assert after["status"] == "done" and after["progress"] == {"done": 4, "total": 4}
    assert before["metrics"]["hit_at_1"] is not None
    assert after["metrics"]["hit_at_1"] == before["metrics"]["hit_at_1"]
    assert after["metrics"]["hit_at_5"] == before["metrics"]["hit_at_5"]


def test_the_table_is_one_a_plain_reader_can_ignore_and_names_no_id_of_this_installation(
    cast, corpus, golden, tmp_path: Path
) -> None:
    path = tmp_path / "handbook.db"
    path.write_bytes(export_bytes(cast.editor, corpus))
    with sqlite3.connect(path) as store:
        meta = dict(store.execute("SELECT key, value FROM store_meta"))
        rows = store.execute("SELECT question, documents, paragraphs FROM kb_golden_questions ORDER BY seq").fetchall()
        seqs = dict(store.execute("SELECT filename, seq FROM kb_documents"))
        lunch_ordinal = paragraph(corpus, "Lunch is served").ordinal
    assert meta["schema_version"] == "0.31"  # an optional table: no new version for readers of the format
    by_question = {q: (json.loads(d), json.loads(p)) for q, d, p in rows}
    assert by_question["How much is the daily allowance abroad?"] == ([seqs["travel.html"]], [])
    assert by_question["What time is lunch?"] == ([], [[seqs["office.html"], lunch_ordinal]])
    assert str(golden[1].paragraphs[0]) not in path.read_bytes().decode("latin-1")


def test_a_file_without_the_table_imports_as_before_with_no_golden_questions(
    cast, corpus, golden, django_capture_on_commit_callbacks, tmp_path: Path
) -> None:
    path = tmp_path / "older.db"
    path.write_bytes(export_bytes(cast.editor, corpus))
    with sqlite3.connect(path) as store:
        store.execute("DROP TABLE kb_golden_questions")

    response = import_file(cast.editor, path.read_bytes(), "older-copy", django_capture_on_commit_callbacks)

    assert response.status_code == 202, response.content
    copy = Collection.objects.get(tenant=cast.tenant, name="older-copy")
    assert CollectionFile.objects.get(pk=response.json()["id"]).status == "done"
    assert Document.objects.filter(collection=copy, status="done").count() == 2
    assert not GoldenQuestion.objects.filter(collection=copy).exists()


def test_a_bad_golden_row_refuses_the_file_at_the_door_naming_it(
    cast, corpus, golden, django_capture_on_commit_callbacks, tmp_path: Path
) -> None:
    path = tmp_path / "bad.db"
    path.write_bytes(export_bytes(cast.editor, corpus))
    with sqlite3.connect(path) as store:
        store.execute("UPDATE kb_golden_questions SET paragraphs = '[[1]]' WHERE seq = 2")

    response = import_file(cast.editor, path.read_bytes(), "bad-copy", django_capture_on_commit_callbacks)

    assert response.status_code == 400, response.content
    assert "kb_golden_questions row 2" in json.dumps(response.json())
    assert not Collection.objects.filter(tenant=cast.tenant, name="bad-copy").exists()


def test_a_question_whose_answer_did_not_travel_is_skipped_and_the_build_says_so(
    cast, corpus, golden, django_capture_on_commit_callbacks, tmp_path: Path
) -> None:
    path = tmp_path / "partial.db"
    path.write_bytes(export_bytes(cast.editor, corpus))
    with sqlite3.connect(path) as store:
        store.execute("UPDATE kb_golden_questions SET paragraphs = '[[1, 9999]]' WHERE seq = 2")

    response = import_file(cast.editor, path.read_bytes(), "partial-copy", django_capture_on_commit_callbacks)

    assert response.status_code == 202, response.content
    copy = Collection.objects.get(tenant=cast.tenant, name="partial-copy")
    assert GoldenQuestion.objects.filter(collection=copy).count() == 3
    warnings = Build.objects.get(collection=copy).warnings
    assert any("1 not imported" in w and "2" in w for w in warnings), warnings
    assert not any("lunch" in w.lower() for w in warnings)  # by number, never the question's text
