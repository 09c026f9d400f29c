"""Uploads at the same moment, uploads that fail half way, names too long in bytes, and orphan files."""

from __future__ import annotations

import io
import os
import threading
import time
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import DatabaseError, connection

from collections_app.models import Document
from collections_app.services.documents import document_create
from ingestion import UnsupportedFile
from tests.files.archives import zip_bytes

RETURNS = b"Goods can be sent back within thirty days of purchase if they are unused.\n"


def stored_files(settings) -> list[Path]:
    root = Path(settings.MEDIA_ROOT)
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def post_at_once(cast, collection, filename: str, content: bytes, times: int) -> list[tuple[int, dict]]:
    """The same upload `times` times at the same moment, each on a thread with its own database connection."""
    from accounts.issuing import api_key_create
    from accounts.models import Role

    secret = api_key_create(tenant=cast.tenant, role=Role.EDITOR).secret
    barrier = threading.Barrier(times)
    answers: list[tuple[int, dict]] = []

    def upload_once() -> None:
        try:
            client = cast.client_for(secret)
            file = io.BytesIO(content)
            file.name = filename
            barrier.wait()  # all requests leave together
            response = client.post(
                f"/api/manage/collections/{collection.pk}/documents", {"file": file}, format="multipart"
            )
            answers.append((response.status_code, response.json()))
        finally:
            connection.close()  # each thread has its own connection

    threads = [threading.Thread(target=upload_once) for _ in range(times)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


def test_ten_identical_uploads_at_once_give_one_202_and_nine_200(transactional_db, cast, collection, settings):
    answers = post_at_once(cast, collection, "returns.txt", RETURNS, 10)

    assert sorted(status for status, _ in answers) == [200] * 9 + [202]
    document = Document.objects.get(collection=collection)
    assert {answer["document_id"] for _, answer in answers} == {str(document.pk)}
    assert [p.relative_to(settings.MEDIA_ROOT).as_posix() for p in stored_files(settings)] == [document.file.name]


def test_identical_zips_at_once_give_one_202_and_200s(transactional_db, cast, collection, settings):
    content = zip_bytes({"returns.txt": RETURNS, "delivery.txt": b"Parcels leave the warehouse every morning.\n"})

    answers = post_at_once(cast, collection, "policies.zip", content, 4)

    assert sorted(status for status, _ in answers) == [200] * 3 + [202]
    assert Document.objects.filter(collection=collection).count() == 2
    assert len(stored_files(settings)) == 2


def test_an_upload_failing_after_its_file_is_stored_leaves_no_file(cast, collection, settings, monkeypatch):
    def refuse(self, *args, **kwargs):
        assert Path(self.file.path).is_file()  # the file is written by now
        raise DatabaseError("the database went away")

    monkeypatch.setattr(Document, "save", refuse)

    with pytest.raises(DatabaseError):
        document_create(collection=collection, filename="returns.txt", content=io.BytesIO(RETURNS))

    assert stored_files(settings) == []


def test_a_zip_import_failing_half_way_leaves_no_document_and_no_file(cast, collection, settings, monkeypatch):
    original_save = Document.save
    saved: list[str] = []

    def fail_second(self, *args, **kwargs):
        if len(saved) == 1:
            raise DatabaseError("the database went away")
        saved.append(self.filename)
        return original_save(self, *args, **kwargs)

    monkeypatch.setattr(Document, "save", fail_second)
    content = zip_bytes({"returns.txt": RETURNS, "delivery.txt": b"Parcels leave the warehouse every morning.\n"})

    from collections_app.services.archives import archive_import

    with pytest.raises(DatabaseError):
        archive_import(collection=collection, filename="policies.zip", content=io.BytesIO(content))

    assert saved == ["returns.txt"]  # the first member was stored before the second failed
    assert not Document.objects.exists()
    assert stored_files(settings) == []


def test_a_file_name_too_long_in_bytes_is_shortened_keeping_its_extension(cast, collection, upload, settings):
    name = "é" * 200 + ".txt"  # 200 characters, 400 bytes in UTF-8: over the file system's 255 bytes

    response = upload(cast.editor, collection, name, RETURNS)

    assert response.status_code == 202, response.content
    document = Document.objects.get(pk=response.json()["document_id"])
    assert document.filename == name  # shown as uploaded
    assert document.status == "done", document.error
    stored = Path(document.file.path).name
    assert stored.endswith(".txt") and stored.startswith("é")
    assert len(stored.encode()) <= 200


def test_a_file_name_over_255_characters_is_shortened_keeping_its_extension(cast, collection, upload):
    response = upload(cast.editor, collection, "a" * 300 + ".md", RETURNS)

    assert response.status_code == 202, response.content
    filename = Document.objects.get(pk=response.json()["document_id"]).filename
    assert len(filename) == 255 and filename.endswith("a.md")


@pytest.mark.parametrize("name", ["ret\x00urns.txt", "ret\ud800urns.txt"], ids=["nul", "lone-surrogate"])
def test_a_file_name_with_a_nul_byte_or_a_lone_surrogate_is_refused_saying_why(cast, collection, settings, name):
    with pytest.raises(UnsupportedFile, match="rename the file"):
        document_create(collection=collection, filename=name, content=io.BytesIO(RETURNS))

    assert not Document.objects.exists()
    assert stored_files(settings) == []


def test_a_nul_byte_in_a_multipart_file_name_is_dropped_before_the_service(cast, collection, upload):
    # Django's multipart parser removes non-printable characters; the service's own check (above) guards
    # the other ways a name arrives: zip members, email attachments, folder sources, the admin.
    response = upload(cast.editor, collection, "ret\x00urns.txt", RETURNS)

    assert response.status_code == 202
    assert Document.objects.get().filename == "returns.txt"


def test_storage_cleanup_removes_old_orphans_and_keeps_documents_and_young_files(cast, collection, settings):
    held = document_create(collection=collection, filename="returns.txt", content=io.BytesIO(RETURNS), queue=False)
    root = Path(settings.MEDIA_ROOT)
    orphan = root / str(cast.tenant.pk) / str(collection.pk) / ("0" * 64) / "lost.txt"
    orphan.parent.mkdir(parents=True)
    orphan.write_bytes(b"left behind by a crash")
    two_hours_ago = time.time() - 7200
    os.utime(orphan, (two_hours_ago, two_hours_ago))
    young = root / "in-flight.txt"
    young.write_bytes(b"an upload not committed yet")

    dry = io.StringIO()
    call_command("storage_cleanup", "--dry-run", stdout=dry)

    assert "1 orphan(s) would be removed (22 bytes)" in dry.getvalue()
    assert orphan.exists()

    out = io.StringIO()
    call_command("storage_cleanup", stdout=out)

    assert (
        "3 stored file(s) checked: 1 referenced by a document or a collection file, 1 orphan(s) removed (22 bytes)"
        in out.getvalue()
    )
    assert "1 unreferenced file(s) younger than 3600 s kept" in out.getvalue()
    assert not orphan.exists() and not orphan.parent.exists()  # its empty folder goes too
    assert Path(held.document.file.path).is_file()
    assert young.exists()
