"""Backup while 10 clients search and a document ingests; restore into a fresh database and storage.

Committed for real (a transactional test): pg_dump reads what other connections see, never a test's transaction.
"""

from __future__ import annotations

import errno
import io
import tarfile
import threading
import time
from pathlib import Path

import psycopg
import pytest
from django.conf import settings as django_settings
from django.core.management import CommandError, call_command
from django.db import connection, connections

from collections_app.models import Collection, Document
from collections_app.services.backup import BackupFailed, backup_manifest, database_conninfo, installation_backup
from collections_app.services.collections import collection_create
from collections_app.services.restore import installation_restore
from retrieval.models import GoldenQuestion
from retrieval.selectors.search import collection_scope, search
from tests.collections_app.services.collection_file.corpus import QUESTIONS, corpus_upload
from tests.files.documents import html_bytes
from tests.files.sections import body

pytestmark = pytest.mark.django_db(transaction=True)


def answers(collection: Collection) -> list[list[tuple[str, str, float | None]]]:
    scope = collection_scope(collection=collection)
    return [[(r["chunk_id"], r["text"], r["score"]) for r in search(scope=scope, query=q).results] for q in QUESTIONS]


@pytest.fixture
def scratch_database():
    """An empty database on the same server, dropped afterwards: the fresh installation a restore goes into."""
    default = connections["default"].settings_dict
    name = f"{default['NAME']}_restore"
    admin = {**default, "NAME": "postgres"}
    with psycopg.connect(database_conninfo(admin), autocommit=True) as server:
        server.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        server.execute(f'CREATE DATABASE "{name}"')
    yield {**default, "NAME": name}
    with psycopg.connect(database_conninfo(admin), autocommit=True) as server:
        for leftover in (name, f"{name}_restoring", f"{name}_before_restore"):  # what a restore leaves beside it
            server.execute(f'DROP DATABASE IF EXISTS "{leftover}" WITH (FORCE)')


def _searching(collection: Collection, stop: threading.Event, done: list[int], failures: list[str]) -> None:
    try:
        while not stop.is_set():
            search(scope=collection_scope(collection=collection), query=QUESTIONS[len(done) % len(QUESTIONS)])
            done.append(1)
    except Exception as exc:  # pragma: no cover - reported by the test
        failures.append(repr(exc))
    finally:
        connection.close()


def test_a_backup_taken_while_clients_search_and_a_document_ingests_restores_every_row_and_answers_identically(
    cast, collection, upload, scratch_database, tmp_path: Path, settings
) -> None:
    collection.min_score = 0
    collection.save()
    corpus_upload(cast.editor, collection, upload)
    GoldenQuestion.objects.create(
        tenant=cast.tenant, collection=collection, question="where do staff cars go?", markers=["garage"]
    )
    before = answers(collection)
    inbox = collection_create(tenant=cast.tenant, name="inbox")
    big = html_bytes([(2, f"Section {i}", body(i, 60)) for i in range(60)])

    stop = threading.Event()
    done: list[int] = []
    failures: list[str] = []
    clients = [threading.Thread(target=_searching, args=(collection, stop, done, failures)) for _ in range(10)]

    def uploading_big() -> None:
        upload(cast.editor, inbox, "big.html", big)
        connection.close()

    uploading = threading.Thread(target=uploading_big)
    for thread in clients:
        thread.start()
    uploading.start()
    deadline = time.monotonic() + 60
    while not Document.objects.filter(collection=inbox, status="parsing").exists():
        assert time.monotonic() < deadline, "the upload never started ingesting"
        time.sleep(0.05)

    archive = tmp_path / "kbsite.tar"
    summary = installation_backup(path=archive)
    ingesting_at_backup = Document.objects.get(collection=inbox).status
    stop.set()
    for thread in clients:
        thread.join()
    uploading.join()

    assert failures == [] and len(done) >= 10
    assert ingesting_at_backup == "parsing"  # the backup did not wait for the ingestion
    manifest = backup_manifest(path=archive)
    assert manifest["counts"]["collections_app_document"] == 4 and summary.files == 4
    assert manifest["counts"]["retrieval_goldenquestion"] == 1
    # The ingestion finished after the snapshot: its paragraphs are not in the backup, not even some of them.
    in_backup = manifest["counts"]["collections_app_chunk"]
    assert in_backup == collection.chunks.count()

    settings.MEDIA_ROOT = tmp_path / "fresh-storage"  # a fresh installation's storage, nothing in it
    restored = installation_restore(path=archive, database=scratch_database)

    assert restored.counts == manifest["counts"] and restored.files == 4
    with psycopg.connect(database_conninfo(scratch_database)) as fresh:
        rows = fresh.execute(
            "SELECT d.filename, d.status, d.chunk_count, (SELECT count(*) FROM collections_app_chunk c "
            "WHERE c.document_id = d.id) FROM collections_app_document d ORDER BY d.filename"
        ).fetchall()
        assert fresh.execute("SELECT question FROM retrieval_goldenquestion").fetchall() == [
            ("where do staff cars go?",)
        ]
        assert fresh.execute("SELECT count(*) FROM collections_app_build").fetchone() == (
            manifest["counts"]["collections_app_build"],
        )
    assert [(name, status) for name, status, _, _ in rows] == [
        ("big.html", "parsing"), ("it.pdf", "done"), ("office.html", "done"), ("travel.docx", "done")
    ]  # fmt: skip
    assert all(kept == counted for _, _, kept, counted in rows)  # never a half-published document
    assert rows[0][3] == 0

    # The same questions answer identically from the restored database.
    original = connections["default"].settings_dict["NAME"]
    connections["default"].close()
    connections["default"].settings_dict["NAME"] = scratch_database["NAME"]
    try:
        assert answers(Collection.objects.get(pk=collection.pk)) == before
    finally:
        connections["default"].close()
        connections["default"].settings_dict["NAME"] = original


def test_a_restore_refuses_an_installation_that_is_not_empty(cast, collection, tmp_path: Path) -> None:
    archive = tmp_path / "kbsite.tar"
    installation_backup(path=archive)

    with pytest.raises(BackupFailed, match="not empty"):
        installation_restore(path=archive)
    assert Collection.objects.filter(pk=collection.pk).exists()


def test_a_damaged_archive_is_refused_before_anything_is_restored(
    cast, collection, tmp_path: Path, scratch_database
) -> None:
    archive = tmp_path / "kbsite.tar"
    installation_backup(path=archive)
    damaged = tmp_path / "damaged.tar"
    with tarfile.open(archive) as source, tarfile.open(damaged, "w") as out:
        for member in source.getmembers():
            content = source.extractfile(member)
            data = content.read() if content is not None else b""
            if member.name == "database.dump":
                data = data[:-10] + b"0123456789"
            member.size = len(data)
            out.addfile(member, io.BytesIO(data))

    with pytest.raises(BackupFailed, match="checksum"):
        installation_restore(path=damaged, database=scratch_database)
    with psycopg.connect(database_conninfo(scratch_database)) as fresh:
        assert fresh.execute("SELECT to_regclass('collections_app_collection')").fetchone() == (None,)
    assert not [p for p in Path(django_settings.MEDIA_ROOT).rglob("*") if p.is_file()]  # no original extracted


@pytest.mark.parametrize(
    ("where", "says"),
    [("missing-folder/kbsite.tar", "does not exist"), (".", "is a folder")],
)
def test_a_backup_to_a_path_it_cannot_write_is_one_line_before_anything_is_dumped(
    cast, collection, tmp_path: Path, where: str, says: str
) -> None:
    with pytest.raises(CommandError) as caught:
        call_command("backup", str(tmp_path / where))

    message = str(caught.value)
    assert says in message and "\n" not in message and str(tmp_path) not in message
    assert not list(tmp_path.parent.glob(f"{tmp_path.name}*.partial")) and not list(tmp_path.rglob("*.partial"))


def test_a_disk_that_fills_up_while_the_archive_is_written_leaves_no_half_archive(
    cast, collection, tmp_path: Path, monkeypatch
) -> None:
    real_add = tarfile.TarFile.add

    def full(self: tarfile.TarFile, name: str, arcname: str | None = None, **kwargs) -> None:
        real_add(self, name, arcname=arcname, **kwargs)
        raise OSError(errno.ENOSPC, "No space left on device")  # as a full disk says it, once bytes went out

    monkeypatch.setattr(tarfile.TarFile, "add", full)
    with pytest.raises(CommandError) as caught:
        call_command("backup", str(tmp_path / "kbsite.tar"))

    message = str(caught.value)
    assert "No space left on device" in message and "\n" not in message
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # neither the archive nor its .partial
