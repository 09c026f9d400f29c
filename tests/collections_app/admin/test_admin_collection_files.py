"""The admin's collection files: "Download as collection file", its progress and download, and the import page."""

from __future__ import annotations

import io
import sqlite3
from pathlib import Path

import pytest

from accounts.models import Membership, Role
from collections_app.models import Collection, CollectionFile
from collections_app.services.collections import collection_create
from tests.collections_app.services.collection_file.test_round_trip import export_bytes
from tests.files.documents import html_bytes
from tests.retrieval.services.golden.corpus import OFFICE

ADMIN = "/admin/collections_app"


@pytest.fixture
def office(cast, collection, upload) -> Collection:
    assert upload(cast.editor, collection, "office.html", html_bytes(OFFICE)).status_code == 202
    return collection


def test_the_action_exports_in_the_background_and_the_list_downloads_the_same_file_as_the_api(
    cast, office, staff, django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        response = staff.post(
            f"{ADMIN}/collection/", {"action": "export_collection_file", "_selected_action": [office.pk]}, follow=True
        )
    record = CollectionFile.objects.get(kind="export")
    # The answer names the export and where its page follows it (the task ran after the request, at the commit).
    status = f"{ADMIN}/collectionfile/{record.pk}/status/"
    answer = response.content.decode()
    assert "The collection file of handbook is being written (waiting for a worker" in answer
    assert "it will be listed under" in answer and f"/collectionfile/{record.pk}/change/" in answer
    assert f'data-kb-status-url="{status}"' in answer
    followed = staff.get(status).json()
    assert followed["pending"] is False
    assert f'href="{ADMIN}/collectionfile/{record.pk}/download/">Download handbook.db</a>' in followed["html"]
    assert (record.status, record.done, record.total) == ("done", 5, 5)

    listed = staff.get(f"{ADMIN}/collectionfile/").content.decode()
    download = f"{ADMIN}/collectionfile/{record.pk}/download/"
    assert download in listed and "5 / 5 paragraphs" in listed
    got = staff.get(download)
    assert got.status_code == 200 and got["Content-Disposition"].startswith('attachment; filename="handbook.db"')
    assert b"".join(got.streaming_content) == export_bytes(cast.editor, office)  # one build, one file


def test_another_tenants_export_is_not_there_and_a_viewer_may_not_download(
    cast, office, staff, django_capture_on_commit_callbacks
) -> None:
    other = collection_create(tenant=cast.outsider_tenant, name="theirs")
    from collections_app.services.collection_file import collection_export_start

    with django_capture_on_commit_callbacks(execute=True):
        theirs = collection_export_start(collection=other)
        ours = collection_export_start(collection=office)
    assert staff.get(f"{ADMIN}/collectionfile/{theirs.pk}/download/").status_code == 404
    assert str(theirs.pk) not in staff.get(f"{ADMIN}/collectionfile/").content.decode()

    Membership.objects.filter(tenant=cast.tenant).update(role=Role.VIEWER)
    assert staff.get(f"{ADMIN}/collectionfile/{ours.pk}/download/").status_code == 403


def test_the_import_page_creates_the_collection_and_refuses_a_broken_file_naming_the_problem(
    cast, office, staff, django_capture_on_commit_callbacks, tmp_path: Path
) -> None:
    assert staff.get(f"{ADMIN}/collectionfile/add/").status_code == 200
    content = export_bytes(cast.editor, office)

    broken = io.BytesIO(b"this is not a database")
    broken.name = "x.db"
    refused = staff.post(f"{ADMIN}/collectionfile/add/", {"tenant": cast.tenant.pk, "name": "copy", "file": broken})
    assert refused.status_code == 200 and "not an SQLite database" in refused.content.decode()
    assert not Collection.objects.filter(name="copy").exists()

    file = io.BytesIO(content)
    file.name = "handbook.db"
    with django_capture_on_commit_callbacks(execute=True):
        done = staff.post(
            f"{ADMIN}/collectionfile/add/", {"tenant": cast.tenant.pk, "name": "copy", "file": file}, follow=True
        )
    assert "Import of copy started" in done.content.decode()
    copy = Collection.objects.get(tenant=cast.tenant, name="copy")
    assert copy.chunks.count() == office.chunks.filter(kind="paragraph").count()
    record = CollectionFile.objects.get(kind="import")
    assert (record.status, record.re_embedded) == ("done", False)
    # The copy exports to the same rows as the original, under its own name.
    path = tmp_path / "copy.db"
    path.write_bytes(export_bytes(cast.editor, copy))
    with sqlite3.connect(path) as store:
        rows = store.execute("SELECT document, ordinal, text, vector FROM agents_chunks ORDER BY id").fetchall()
    original = tmp_path / "office.db"
    original.write_bytes(content)
    with sqlite3.connect(original) as store:
        assert rows == store.execute("SELECT document, ordinal, text, vector FROM agents_chunks ORDER BY id").fetchall()


def test_the_import_page_offers_only_the_tenants_one_edits(cast, staff) -> None:
    page = staff.get(f"{ADMIN}/collectionfile/add/").content.decode()
    assert cast.tenant.name in page and cast.outsider_tenant.name not in page


def _finished_export(staff, office, django_capture_on_commit_callbacks) -> CollectionFile:
    with django_capture_on_commit_callbacks(execute=True):
        staff.post(f"{ADMIN}/collection/", {"action": "export_collection_file", "_selected_action": [office.pk]})
    record = CollectionFile.objects.get(kind="export")
    assert record.status == "done" and record.stored
    return record


def test_storage_cleanup_keeps_a_finished_export_and_its_download_still_works(
    cast, office, staff, settings, django_capture_on_commit_callbacks
) -> None:
    import os
    import time

    from django.core.management import call_command

    record = _finished_export(staff, office, django_capture_on_commit_callbacks)
    stored = Path(settings.MEDIA_ROOT) / record.stored
    two_hours_ago = time.time() - 7200
    os.utime(stored, (two_hours_ago, two_hours_ago))

    out = io.StringIO()
    call_command("storage_cleanup", stdout=out)

    assert stored.is_file(), out.getvalue()
    assert "0 orphan(s) removed" in out.getvalue()
    got = staff.get(f"{ADMIN}/collectionfile/{record.pk}/download/")
    assert got.status_code == 200 and b"".join(got.streaming_content)[:16] == b"SQLite format 3\x00"


def test_an_export_whose_file_is_gone_says_it_expired_instead_of_a_500(
    cast, office, staff, settings, django_capture_on_commit_callbacks
) -> None:
    record = _finished_export(staff, office, django_capture_on_commit_callbacks)
    (Path(settings.MEDIA_ROOT) / record.stored).unlink()

    got = staff.get(f"{ADMIN}/collectionfile/{record.pk}/download/")

    assert got.status_code == 404
    page = got.content.decode()
    assert "expired" in page and "export again" in page
    assert str(settings.MEDIA_ROOT) not in page and record.stored not in page


def test_the_list_says_why_an_import_failed(cast, staff) -> None:
    collection = collection_create(tenant=cast.tenant, name="copy")
    CollectionFile.objects.create(
        tenant=cast.tenant,
        collection=collection,
        kind="import",
        status="error",
        error="paragraph 7: its vector has 12 numbers, the model gives 384",
    )
    listed = staff.get(f"{ADMIN}/collectionfile/").content.decode()
    assert "failed: paragraph 7: its vector has 12 numbers, the model gives 384" in listed
