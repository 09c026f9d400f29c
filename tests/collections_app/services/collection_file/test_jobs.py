"""Exports and imports as the cluster runs them: outside any request's transaction, with their progress written as
they go and seen from outside while they run (the admin and the API read it from another connection)."""

from __future__ import annotations

import io
import sqlite3
from pathlib import Path

import pytest
from django.db import connections

from accounts.models import Tenant
from collections_app.models import Chunk, Collection, CollectionFile
from collections_app.services.collection_file import (
    _export,
    _import,
    _jobs,
    collection_export,
    collection_export_start,
    collection_import,
)
from collections_app.services.collections import collection_create
from collections_app.services.documents import document_create
from tests.files.documents import html_bytes
from tests.retrieval.services.golden.corpus import OFFICE

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def office() -> Collection:
    collection = collection_create(tenant=Tenant.objects.create(name="acme"), name="handbook")
    # Committed at once (transactional test): the ingestion task runs inline (Q_CLUSTER sync).
    document_create(collection=collection, filename="office.html", content=io.BytesIO(html_bytes(OFFICE)))
    return collection


def _seen_from_outside(kind: str) -> tuple[str, int, int]:
    """The record as another connection reads it (the admin's page, the API) while the job's transaction is open."""
    wrapper = connections["default"]
    raw = wrapper.get_new_connection(wrapper.get_connection_params())
    try:
        raw.autocommit = True
        row = raw.execute(
            f"SELECT status, done, total FROM {CollectionFile._meta.db_table} WHERE kind = %s", [kind]
        ).fetchone()
    finally:
        raw.close()
    return row


def test_an_export_run_by_the_cluster_is_written_with_its_progress(office, monkeypatch, tmp_path: Path) -> None:
    paragraphs = office.chunks.filter(kind="paragraph").count()
    seen = []
    write = _export._write_paragraphs

    def write_and_look(store, collection, agent, seqs, progress):
        written = write(store, collection, agent, seqs, progress)
        seen.append(_seen_from_outside("export"))  # inside the export's READ ONLY transaction
        return written

    monkeypatch.setattr(_export, "_write_paragraphs", write_and_look)
    monkeypatch.setattr(_export, "BATCH", 2)  # a beat every two paragraphs
    record_id = collection_export_start(collection=office).pk  # queued at its commit: the task runs at once
    record = CollectionFile.objects.get(pk=record_id)
    assert (record.status, record.error, record.done, record.total) == ("done", "", paragraphs, paragraphs)
    assert seen == [("running", paragraphs, paragraphs)]
    path = tmp_path / "export.db"
    with record_file(record) as content:
        path.write_bytes(content)
    with sqlite3.connect(path) as store:
        assert store.execute("SELECT count(*) FROM agents_chunks").fetchone()[0] == paragraphs


def record_file(record: CollectionFile):
    from django.core.files.storage import default_storage

    return _Opened(default_storage.open(record.stored, "rb"))


class _Opened:
    def __init__(self, file) -> None:
        self.file = file

    def __enter__(self) -> bytes:
        return self.file.read()

    def __exit__(self, *exc: object) -> None:
        self.file.close()


def test_an_import_shows_its_progress_while_its_one_transaction_writes(office, monkeypatch, tmp_path: Path) -> None:
    path = tmp_path / "handbook.db"
    collection_export(collection=office, path=path)
    paragraphs = office.chunks.filter(kind="paragraph").count()
    seen: list[object] = []
    index = _import._index

    def index_and_look(collection, *args):
        seen.append(_seen_from_outside("import"))  # every paragraph written: the progress says so
        seen.append(_paragraphs_seen_from_outside(collection))  # and nothing of them is searchable yet
        index(collection, *args)

    monkeypatch.setattr(_import, "_index", index_and_look)
    monkeypatch.setattr(_jobs, "PROGRESS_EVERY", 0, raising=False)  # a beat at every paragraph
    with path.open("rb") as file:
        record_id = collection_import(tenant=office.tenant, name="copy", content=file_of(file)).pk
    record = CollectionFile.objects.get(pk=record_id)
    assert (record.status, record.error, record.done) == ("done", "", paragraphs)
    assert seen == [("running", paragraphs, paragraphs), 0]


def _paragraphs_seen_from_outside(collection: Collection) -> int:
    wrapper = connections["default"]
    raw = wrapper.get_new_connection(wrapper.get_connection_params())
    try:
        raw.autocommit = True
        return raw.execute(
            f"SELECT count(*) FROM {Chunk._meta.db_table} WHERE collection_id = %s", [collection.pk]
        ).fetchone()[0]
    finally:
        raw.close()


def file_of(file):
    from django.core.files import File

    return File(file, name="handbook.db")


def test_a_job_whose_worker_died_is_marked_failed_and_a_live_one_is_left(office) -> None:
    from django.core.files.base import ContentFile
    from django.core.files.storage import default_storage

    from collections_app.services.collection_file import collection_files_sweep
    from collections_app.services.collection_file._jobs import collection_file_lease

    upload = default_storage.save("collection-files/dead-import.db", ContentFile(b"not read"))
    tenant = office.tenant
    dead = CollectionFile.objects.create(
        tenant=tenant, collection=office, kind="import", status="running", phase="index", stored=upload
    )
    live = CollectionFile.objects.create(tenant=tenant, collection=office, kind="export", status="running")
    with collection_file_lease(live.pk) as held:
        assert held
        assert collection_files_sweep() == 1
    dead.refresh_from_db()
    assert (dead.status, dead.phase, dead.stored) == ("error", "", "")
    assert "stopped" in dead.error and "import the file again" in dead.error
    assert not default_storage.exists(upload)  # the upload of a dead import is not kept for ever
    live.refresh_from_db()
    assert live.status == "running"
    assert collection_files_sweep() == 1  # its worker gone too
    live.refresh_from_db()
    assert live.status == "error" and "export again" in live.error
