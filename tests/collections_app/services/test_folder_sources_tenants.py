"""A folder source belongs to one collection of one tenant, never to a name (issue 17, item 1).

The probe's hole: folder sources were keyed by the collection's name alone, so tenant B made a collection of
tenant A's collection's name, synced it, and searched A's documents. Now a tenant's admin chooses a folder
under its own folder of KB_FOLDER_SOURCES_ROOT; a legacy variable is bound once to its one collection.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from accounts.issuing import api_key_create
from accounts.models import Role, Tenant
from collections_app.models import Document
from collections_app.services.collections import collection_create
from collections_app.services.folder_sources import (
    FolderSourceForbidden,
    FolderSourceRefused,
    folder_source_set,
    folder_sync,
)
from tests.conftest import client_for

SECRET = "The tenant A merger code word is bluefin.\n"


def sync(*args: str) -> str:
    out = io.StringIO()
    call_command("sync_collection", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


@pytest.fixture
def root(tmp_path: Path, settings) -> Path:
    settings.KB_FOLDER_SOURCES_ROOT = str(tmp_path / "sources")
    for tenant, text in (("acme", SECRET), ("globex", "Globex lunch is at noon.\n")):
        (tmp_path / "sources" / tenant / "share").mkdir(parents=True)
        (tmp_path / "sources" / tenant / "share" / "notes.md").write_text(f"# Notes\n\n{text}")
    return tmp_path / "sources"


def search_texts(tenant: Tenant, question: str) -> str:
    """Every visible paragraph's text: the collections searched here are made with their floor off (a search
    cannot turn it off: it is the collection's min_score), so a paragraph missing is one the tenant may not
    read, never one whose cosine fell below the floor on this CPU."""
    client = client_for(api_key_create(tenant=tenant, role=Role.VIEWER).secret)
    answer = client.post("/api/search", {"query": question}, format="json")
    assert answer.status_code == 200, answer.content
    assert answer.json()["floor"] == 0
    return " ".join(r["text"] for r in answer.json()["results"])


def test_another_tenants_collection_of_the_same_name_never_reads_a_legacy_folder(cast, staff, tmp_path, settings):
    folder = tmp_path / "a-share"
    folder.mkdir()
    (folder / "merger.md").write_text(f"# Merger\n\n{SECRET}")
    settings.KB_COLLECTION_FOLDERS = {"HANDBOOK": str(folder)}
    ours = collection_create(tenant=cast.tenant, name="handbook", min_score=0)
    out = sync("handbook")  # binds the variable to acme's handbook, the one collection of that name, and says so
    assert "bound to collection handbook of tenant acme" in out and str(folder) not in out
    assert Document.objects.filter(collection=ours, status="done").count() == 1

    theirs = collection_create(tenant=cast.outsider_tenant, name="handbook", min_score=0)
    from collections_app.tasks import sync_folder_source

    sync_folder_source(str(theirs.pk))  # what the admin action and a schedule run
    with pytest.raises(CommandError, match="has no folder source"):
        sync("handbook", "--tenant", "globex")

    assert not Document.objects.filter(collection=theirs).exists()
    assert "bluefin" not in search_texts(cast.outsider_tenant, "merger code word")
    assert "bluefin" in search_texts(cast.tenant, "merger code word")
    settings.KB_SYNC_EVERY_MINUTES = 5
    scheduled = sync("--schedule")
    assert "acme/handbook" in scheduled and "globex/handbook" not in scheduled


def test_a_legacy_variable_naming_a_collection_two_tenants_have_is_refused(cast, tmp_path, settings):
    (tmp_path / "a-share").mkdir()
    settings.KB_COLLECTION_FOLDERS = {"HANDBOOK": str(tmp_path / "a-share")}
    collection_create(tenant=cast.tenant, name="handbook")
    collection_create(tenant=cast.outsider_tenant, name="handbook")

    with pytest.raises(CommandError, match="tenants acme, globex each have: refusing to guess"):
        sync("handbook", "--tenant", "acme")
    with pytest.raises(CommandError, match="refusing to guess"):
        sync("--schedule")


def test_an_admin_gives_a_collection_a_folder_under_its_tenants_folder(cast, root):
    handbook = collection_create(tenant=cast.tenant, name="handbook", min_score=0)

    folder_source_set(collection=handbook, folder="share", role=Role.ADMIN)
    result = folder_sync(collection=handbook)

    assert result.imported == ["notes.md"]
    assert "bluefin" in search_texts(cast.tenant, "merger code word")


@pytest.mark.parametrize(
    ("folder", "says"),
    [
        ("/etc", "relative to this tenant's folder"),
        ("../globex/share", "without .."),
        ("share/../../globex/share", "without .."),
        ("nowhere", "is not a folder on this server"),
        ("to-globex", "leads outside this tenant's folder"),  # a symbolic link into another tenant's folder
        ("to-etc", "leads outside this tenant's folder"),
    ],
)
def test_a_folder_outside_the_tenants_own_is_refused_without_its_path(cast, root, folder, says):
    os.symlink(root / "globex" / "share", root / "acme" / "to-globex")
    os.symlink("/etc", root / "acme" / "to-etc")
    handbook = collection_create(tenant=cast.tenant, name="handbook")

    with pytest.raises(FolderSourceRefused, match=says) as refused:
        folder_source_set(collection=handbook, folder=folder, role=Role.ADMIN)

    assert str(root) not in str(refused.value)
    handbook.refresh_from_db()
    assert handbook.folder_source == ""


def test_only_a_tenant_admin_sets_a_folder_source(cast, root):
    handbook = collection_create(tenant=cast.tenant, name="handbook")
    with pytest.raises(FolderSourceForbidden):
        folder_source_set(collection=handbook, folder="share", role=Role.EDITOR)


def test_a_link_swapped_in_after_the_folder_was_chosen_is_refused_at_the_sync(cast, root):
    handbook = collection_create(tenant=cast.tenant, name="handbook")
    (root / "acme" / "later").mkdir()
    folder_source_set(collection=handbook, folder="later", role=Role.ADMIN)
    (root / "acme" / "later").rmdir()
    os.symlink(root / "globex" / "share", root / "acme" / "later")

    with pytest.raises(CommandError, match="leads outside this tenant's folder"):
        sync("handbook")
    assert not Document.objects.filter(collection=handbook).exists()


def test_an_admin_sees_and_sets_the_folder_in_the_admin_and_an_editor_does_neither(cast, root, client):
    from django.contrib.auth.models import Permission, User

    from accounts.models import Membership

    handbook = collection_create(tenant=cast.tenant, name="handbook")
    pages = {}
    for role in (Role.EDITOR, Role.ADMIN):
        user = User.objects.create_user(f"{role}-person", password="pw", is_staff=True)
        user.user_permissions.set(Permission.objects.filter(content_type__app_label="collections_app"))
        Membership.objects.create(user=user, tenant=cast.tenant, role=role)
        client.force_login(user)
        pages[role] = client.get(f"/admin/collections_app/collection/{handbook.pk}/change/").content.decode()

    assert 'name="folder_source"' not in pages[Role.EDITOR]
    assert 'name="folder_source"' in pages[Role.ADMIN] and "KB_FOLDER_SOURCES_ROOT/acme/" in pages[Role.ADMIN]
