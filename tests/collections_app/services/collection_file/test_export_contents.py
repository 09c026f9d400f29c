"""What an exported file holds (every column read) and who may download or follow one."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings as django_settings

from accounts.models import ApiKey
from collections_app.models import Chunk, Collection, Document
from retrieval.models import GoldenQuestion, SearchEvent
from tests.collections_app.services.collection_file.corpus import OFFICE
from tests.collections_app.services.collection_file.test_round_trip import export_bytes, import_file
from tests.files.documents import html_bytes

QUESTION = "where exactly is the secret staff garage located?"
GOLDEN = "which level of building B do staff cars go to?"


@pytest.fixture
def office(cast, collection, upload, settings) -> Collection:
    collection.per_reader = True
    collection.save()
    response = upload(
        cast.editor, collection, "office.html", html_bytes(OFFICE), labels=json.dumps(["staff"]),
        source_uri="https://intranet.example/office.html",
    )  # fmt: skip
    assert response.status_code == 202
    cast.agent.collections.add(collection)
    # A question asked and audited: it may not reach the file. A golden question kept: it travels, in its own
    # table only (issue 41).
    settings.KB_AUDIT_QUESTIONS = True
    Collection.objects.filter(pk=collection.pk).update(per_reader=False)  # searched without a reader, once
    assert cast.viewer.post("/api/search", {"query": QUESTION}, format="json").status_code == 200
    Collection.objects.filter(pk=collection.pk).update(per_reader=True)
    collection.refresh_from_db()
    assert SearchEvent.objects.filter(question=QUESTION).exists()
    GoldenQuestion.objects.create(tenant=cast.tenant, collection=collection, question=GOLDEN, markers=["minus two"])
    return collection


def every_value(path: Path) -> list[tuple[str, str, object]]:
    with sqlite3.connect(path) as store:
        tables = [r[0] for r in store.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        found: list[tuple[str, str, object]] = []
        for table in tables:
            cursor = store.execute(f"SELECT * FROM {table}")
            columns = [d[0] for d in cursor.description]
            for row in cursor:
                found.extend((table, column, value) for column, value in zip(columns, row, strict=True))
    return found


def test_every_column_holds_the_paragraphs_and_never_a_path_a_storage_name_a_key_an_id_or_a_question(
    cast, office, tmp_path: Path
) -> None:
    path = tmp_path / "office.db"
    path.write_bytes(export_bytes(cast.editor, office))
    values = every_value(path)

    texts = [v for _, _, v in values if isinstance(v, str)]
    blobs = [v for _, _, v in values if isinstance(v, bytes)]
    needles = [
        str(django_settings.MEDIA_ROOT), str(django_settings.BASE_DIR), "/tmp", "intranet.example",
        QUESTION, str(cast.tenant.pk), str(office.pk), str(cast.agent.pk),
        *(d.file.name for d in Document.objects.filter(collection=office) if d.file.name),
        *(str(pk) for pk in Document.objects.filter(collection=office).values_list("pk", flat=True)),
        *(str(pk) for pk in Chunk.objects.filter(collection=office).values_list("pk", flat=True)),
        *(k.prefix for k in ApiKey.objects.all()), *(k.hashed_key for k in ApiKey.objects.all()),
    ]  # fmt: skip
    for needle in needles:
        assert not any(needle in text for text in texts), needle
        assert not any(needle.encode() in blob for blob in blobs), needle
    assert [(t, c) for t, c, v in values if isinstance(v, str) and GOLDEN in v] == [("kb_golden_questions", "question")]

    # What it does hold: every paragraph with its text, vector, language, page, section, ordinal, document name,
    # metadata and reader labels, for the agent scoped to the collection.
    with sqlite3.connect(path) as store:
        rows = store.execute(
            "SELECT agent_id, collection, document, ordinal, text, vector, dims, language, section, labels "
            "FROM agents_chunks ORDER BY id"
        ).fetchall()
    live = Chunk.objects.filter(collection=office, kind="paragraph").order_by("position__ordinal")
    assert [(r[2], r[3], r[4]) for r in rows] == [("office.html", c.ordinal, c.text) for c in live]
    for row, chunk in zip(rows, live, strict=True):
        assert row[0] == "support-bot" and row[1] == office.name and row[6] == 384 and row[7] == chunk.language
        assert np.array_equal(np.frombuffer(row[5], dtype="<f4"), np.asarray(chunk.embedding, dtype="<f4"))
        assert json.loads(row[8]) == chunk.section and json.loads(row[9]) == ["staff"]


def test_an_imported_per_reader_collection_keeps_its_labels(cast, office, django_capture_on_commit_callbacks) -> None:
    content = export_bytes(cast.editor, office)
    assert import_file(cast.outsider, content, "office", django_capture_on_commit_callbacks).status_code == 202
    copy = Collection.objects.get(tenant=cast.outsider_tenant, name="office")
    assert copy.per_reader is True
    assert [list(labels) for labels in Chunk.objects.filter(collection=copy).values_list("labels", flat=True)] == [
        ["staff"]
    ] * Chunk.objects.filter(collection=office).count()
    assert list(Document.objects.get(collection=copy).labels) == ["staff"]


def test_another_tenants_collection_is_a_404_and_a_viewer_is_refused(cast, collection) -> None:
    assert cast.outsider.get(f"/api/manage/collections/{collection.pk}/export").status_code == 404
    assert cast.viewer.get(f"/api/manage/collections/{collection.pk}/export").status_code == 403
    assert cast.editor.get(f"/api/manage/collections/{collection.pk}/export").status_code == 200


def test_an_import_is_followed_by_its_collection_and_another_tenant_cannot_see_it(
    cast, office, django_capture_on_commit_callbacks
) -> None:
    content = export_bytes(cast.editor, office)
    response = import_file(cast.editor, content, "office-copy", django_capture_on_commit_callbacks)
    assert response.status_code == 202
    copy = Collection.objects.get(tenant=cast.tenant, name="office-copy")

    followed = cast.editor.get(f"/api/manage/collections/{copy.pk}/import")
    assert followed.status_code == 200
    body = followed.json()
    assert (body["status"], body["done"], body["total"], body["re_embedded"]) == ("done", 6, 6, False)
    assert cast.outsider.get(f"/api/manage/collections/{copy.pk}/import").status_code == 404
    assert cast.editor.get(f"/api/manage/collections/{office.pk}/import").status_code == 404  # never imported
