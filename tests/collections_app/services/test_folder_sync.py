"""Folder sources: set by the deployment's environment, synced by a command that records a Build."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django_q.models import Schedule

from collections_app.models import Build, Document
from collections_app.services.collections import collection_create
from tests.files.documents import pdf_bytes

RETURNS = "# Returns\n\nGoods can be sent back within thirty days of purchase if they are unused.\n"
RETURNS_V2 = "# Returns\n\nGoods can be sent back within sixty days of purchase, even when opened.\n"
DELIVERY = "Parcels leave the warehouse every weekday morning and arrive within two days.\n"


@pytest.fixture
def source(tmp_path: Path, settings) -> Path:
    folder = tmp_path / "handbook-source"
    (folder / "guide").mkdir(parents=True)
    (folder / "guide" / "returns.md").write_text(RETURNS)
    (folder / "guide" / "delivery.txt").write_text(DELIVERY)
    (folder / "README.md").write_text("# Index\n\nLinks to every page of the handbook.\n")
    (folder / "guide" / "README.md").write_text("# Guide\n\nLinks to the guide's pages.\n")
    (folder / ".hidden.md").write_text("# Hidden\n\nAn editor's scratch file.\n")
    (folder / "setup.exe").write_bytes(b"MZ\x90\x00")
    settings.KB_COLLECTION_FOLDERS = {"HANDBOOK": str(folder)}
    return folder


@pytest.fixture
def handbook(collection):
    collection.exclude_patterns = ["**/README.md"]
    collection.save()
    return collection


def sync(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("sync_collection", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def folder_documents(collection) -> dict[str, Document]:
    return {d.source_uri: d for d in Document.objects.filter(collection=collection, parent=None)}


def test_a_sync_imports_replaces_removes_and_records_what_it_could_not_read(cast, handbook, source, tmp_path, capsys):
    first_out, _ = sync("handbook")

    documents = folder_documents(handbook)
    assert sorted(documents) == ["folder://handbook/guide/delivery.txt", "folder://handbook/guide/returns.md"]
    assert {d.status for d in documents.values()} == {"done"}
    first = Build.objects.get(collection=handbook, document=None)
    assert first.built_from == "folder source handbook"
    assert first.refused == []
    assert first.passages == sum(d.chunks.count() for d in documents.values()) > 0
    assert any("setup.exe" in w for w in first.warnings)  # a type kbsite does not read: named, not refused
    assert "2 imported" in first_out
    old_returns = documents["folder://handbook/guide/returns.md"]

    (source / "guide" / "delivery.txt").unlink()
    (source / "guide" / "returns.md").write_text(RETURNS_V2)
    (source / "guide" / "broken.pdf").write_bytes(b"%PDF-1.7\n this is no PDF at all")
    second_out, _ = sync("handbook")

    documents = folder_documents(handbook)
    returns = documents["folder://handbook/guide/returns.md"]
    assert returns.pk == old_returns.pk and returns.version == 2  # the document's next version ...
    assert [(v.number, v.status) for v in returns.versions.all()] == [(2, "current"), (1, "retired")]
    assert not returns.chunks.filter(text__contains="thirty days").exists()  # ... whose paragraphs replaced v1's
    assert returns.chunks.filter(text__contains="sixty days").exists()
    assert "folder://handbook/guide/delivery.txt" not in documents  # its file is gone: its document to the trash
    gone = Document.all_objects.get(collection=handbook, source_uri="folder://handbook/guide/delivery.txt")
    assert gone.trashed_at is not None and gone.trashed_by_name == "folder sync" and gone.trashed_by is None
    assert documents["folder://handbook/guide/broken.pdf"].status == "error"
    second = Build.objects.filter(collection=handbook, document=None).latest("built_at")
    assert second.built_from == "folder source handbook"
    assert second.refused == ["broken.pdf"]
    assert second.passages == returns.chunks.count()
    assert "1 replaced, 1 removed" in second_out

    third_out, _ = sync("handbook")  # nothing changed: nothing built, nothing refused
    third = Build.objects.filter(collection=handbook, document=None).latest("built_at")
    assert (third.refused, third.passages) == ([], 0)
    assert "2 unchanged" in third_out

    # No server path anywhere a person or an agent could see it.
    base = f"/api/manage/collections/{handbook.pk}"
    seen = [
        first_out, second_out, third_out, capsys.readouterr().err,
        cast.viewer.get(f"{base}/documents").content.decode(),
        cast.viewer.get(f"{base}/builds").content.decode(),
        cast.viewer.post("/api/search", {"query": "how long to send goods back"}, format="json").content.decode(),
        json.dumps(list(Build.objects.values("built_from", "refused", "warnings", "method")), default=str),
        json.dumps(list(Document.objects.values("error", "warnings", "source_uri", "metadata")), default=str),
    ]  # fmt: skip
    for text in seen:
        assert str(tmp_path) not in text
        assert "/tmp/" not in text


def test_exclude_patterns_are_honoured_and_a_newly_excluded_file_is_removed(handbook, source):
    sync("handbook")
    assert not Document.objects.filter(filename="README.md").exists()
    assert not Document.objects.filter(filename__in=[".hidden.md", "setup.exe"]).exists()

    handbook.exclude_patterns = ["**/README.md", "guide/delivery.*"]
    handbook.save()
    sync("handbook")

    assert sorted(folder_documents(handbook)) == ["folder://handbook/guide/returns.md"]


def test_an_empty_folder_never_wipes_the_collection(handbook, source):
    sync("handbook")
    for path in sorted(source.rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()

    with pytest.raises(CommandError, match="refusing to remove its 2 document"):
        sync("handbook")

    assert len(folder_documents(handbook)) == 2


def test_a_collection_without_a_folder_source_says_who_sets_one_and_where(handbook, settings):
    settings.KB_COLLECTION_FOLDERS = {}

    with pytest.raises(CommandError, match=r"an admin of tenant acme .* KB_FOLDER_SOURCES_ROOT/acme/"):
        sync("handbook")


def test_a_missing_folder_is_an_error_without_its_path(handbook, settings, tmp_path):
    settings.KB_COLLECTION_FOLDERS = {"HANDBOOK": str(tmp_path / "not-there")}

    with pytest.raises(CommandError) as raised:
        sync("handbook")

    assert "legacy folder source of handbook" in str(raised.value) and "KB_COLLECTION_" in str(raised.value)
    assert str(tmp_path) not in str(raised.value)


def test_a_name_two_tenants_share_needs_the_tenant_and_a_legacy_folder_is_then_refused(cast, handbook, source):
    theirs = collection_create(tenant=cast.outsider_tenant, name="handbook")

    with pytest.raises(CommandError, match=r"pass --tenant|refusing to guess"):
        sync("handbook")
    with pytest.raises(CommandError, match="tenants acme, globex each have: refusing to guess"):
        sync("handbook", "--tenant", "acme")  # the legacy variable could be either tenant's: neither reads it

    assert folder_documents(handbook) == {} and folder_documents(theirs) == {}


def test_the_schedule_flag_makes_one_schedule_per_folder_source_and_removes_them(handbook, source, settings):
    settings.KB_SYNC_EVERY_MINUTES = 15
    sync("--schedule")
    sync("--schedule")  # idempotent

    schedule = Schedule.objects.get()
    assert schedule.func == "collections_app.tasks.sync_folder_source"
    assert (schedule.schedule_type, schedule.minutes) == (Schedule.MINUTES, 15)
    assert str(handbook.pk) in schedule.args

    settings.KB_SYNC_EVERY_MINUTES = 0
    sync("--schedule")
    assert not Schedule.objects.exists()


def test_the_scheduled_task_syncs_the_collection(handbook, source):
    from collections_app.tasks import sync_folder_source

    sync_folder_source(str(handbook.pk))

    assert len(folder_documents(handbook)) == 2
    assert Build.objects.get(collection=handbook, document=None).built_from == "folder source handbook"


def test_an_upload_cannot_claim_to_come_from_a_folder_source(cast, collection, upload):
    response = upload(cast.editor, collection, "a.txt", b"hello there", source_uri="folder://handbook/a.txt")

    assert response.status_code == 400
    assert "folder sources" in response.json()["source_uri"][0]


def test_a_changed_file_that_cannot_be_read_leaves_its_last_good_version(handbook, source):
    (source / "policy.pdf").write_bytes(pdf_bytes([[("Policy", "Refunds are paid within five working days.")]]))
    sync("handbook")
    good = folder_documents(handbook)["folder://handbook/policy.pdf"]

    (source / "policy.pdf").write_bytes(b"%PDF-1.7\n truncated while saving")
    sync("handbook")

    assert Document.objects.get(pk=good.pk).chunks.filter(text__contains="five working days").exists()
    latest = Build.objects.filter(collection=handbook, document=None).latest("built_at")
    assert latest.refused == ["policy.pdf"]
    assert "policy.pdf could not be read (its previous version stays searchable)" in latest.warnings

    (source / "policy.pdf").write_bytes(pdf_bytes([[("Policy", "Refunds are paid within three working days.")]]))
    sync("handbook")

    versions = Document.objects.filter(source_uri="folder://handbook/policy.pdf")
    assert versions.count() == 1 and versions.get().chunks.filter(text__contains="three working days").exists()


def test_documents_of_a_renamed_collection_are_adopted_not_imported_again(handbook, source, settings):
    sync("handbook")
    before = {d.content_hash: d.pk for d in folder_documents(handbook).values()}
    handbook.name = "staff handbook"
    handbook.save()
    settings.KB_COLLECTION_FOLDERS = {**settings.KB_COLLECTION_FOLDERS, "STAFF_HANDBOOK": str(source)}

    out, _ = sync("staff handbook")

    after = folder_documents(handbook)
    assert sorted(after) == ["folder://staff handbook/guide/delivery.txt", "folder://staff handbook/guide/returns.md"]
    assert {d.content_hash: d.pk for d in after.values()} == before
    assert "0 imported" in out and "2 unchanged" in out


def test_a_pipe_a_link_loop_and_a_link_out_are_skipped_and_named_and_the_rest_is_synced(handbook, source):
    os.mkfifo(source / "guide" / "pipe.md")  # opening it would wait for a writer for ever
    os.symlink("loop-b.md", source / "loop-a.md")
    os.symlink("loop-a.md", source / "loop-b.md")
    os.symlink("/etc/passwd", source / "passwd.txt")

    sync("handbook")

    assert sorted(folder_documents(handbook)) == [
        "folder://handbook/guide/delivery.txt",
        "folder://handbook/guide/returns.md",
    ]
    build = Build.objects.get(collection=handbook, document=None)
    assert sorted(build.refused or []) == ["loop-a.md", "loop-b.md", "passwd.txt", "pipe.md"]
    assert "guide/pipe.md was skipped: it is not a regular file (a pipe, a socket or a device)" in build.warnings
    assert "loop-a.md was skipped: it is a link in a loop" in build.warnings
    assert "passwd.txt was skipped: it is a link leading outside the folder" in build.warnings


def test_a_collection_deleted_while_it_syncs_stops_the_sync_saying_so(handbook, source):
    from collections_app.services.deletion import collection_delete
    from collections_app.services.folder_sources import FolderSourceError, folder_sources_adopt_legacy, folder_sync

    folder_sources_adopt_legacy()  # the fixture's folder is a legacy variable, as the command binds it first
    handbook.refresh_from_db()

    def delete_after_the_first(files):
        for index, relative in enumerate(files):
            if index == 1:
                collection_delete(collection=handbook)
            yield relative

    with pytest.raises(FolderSourceError, match="was deleted while it synced: the sync stopped"):
        folder_sync(collection=handbook, progress=delete_after_the_first)

    imported = Document.all_objects.filter(collection=handbook, source_uri__startswith="folder://")
    assert imported.count() == 1  # the file synced before the delete, and none after
    assert not Build.objects.filter(collection=handbook, document=None).exists()  # no "imported" for nobody
