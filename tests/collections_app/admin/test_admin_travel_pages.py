"""The pages issue 41 adds beside a collection and a document: another tenant's row is a 404, a viewer may look at
a version diff but not start an export, and an editor's page answers (never a server error)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from accounts.models import Membership, Role
from collections_app.models import CollectionFile, Document
from collections_app.services.collections import collection_create

ADMIN = "/admin/collections_app"
V1 = b"# Travel\n\nHotel nights are refunded up to 140 euros in capitals.\n"
V2 = b"# Travel\n\nHotel nights are refunded up to 160 euros in capitals.\n"


@pytest.fixture
def document(cast, collection, upload) -> Document:
    assert upload(cast.editor, collection, "travel.md", V1).status_code == 202
    assert upload(cast.editor, collection, "travel.md", V2).status_code == 202
    return Document.objects.get(collection=collection)


@pytest.fixture
def viewer(cast, client):
    user = User.objects.create_user("vic", password="pw", is_staff=True)
    Membership.objects.create(user=user, tenant=cast.tenant, role=Role.VIEWER)
    client.force_login(user)
    return client


def test_it_shows_an_editor_what_changed_and_starts_an_export_from_the_collection_page(
    staff, collection, document, django_capture_on_commit_callbacks
) -> None:
    diff = staff.get(f"{ADMIN}/document/{document.pk}/versions/diff/")
    assert diff.status_code == 200
    assert b"From version 1 to version 2" in diff.content and b"<del>140</del>" in diff.content
    page = staff.get(f"{ADMIN}/document/{document.pk}/change/").content.decode()
    assert f"/document/{document.pk}/versions/diff/?old=1&amp;new=2" in page

    asked = staff.get(f"{ADMIN}/collection/{collection.pk}/export/")
    assert asked.status_code == 200 and b"Collection files" in asked.content
    assert not CollectionFile.objects.exists()  # asking starts nothing
    with django_capture_on_commit_callbacks(execute=True):
        started = staff.post(f"{ADMIN}/collection/{collection.pk}/export/")
    assert started.status_code == 302 and started["Location"].endswith(f"/collection/{collection.pk}/change/")
    assert CollectionFile.objects.get(kind="export").status == "done"
    tools = staff.get(started["Location"]).content.decode()
    for label in ("Evaluate", "Measure", "Export"):
        assert f">{label}</a>" in tools


def test_it_answers_an_unknown_version_with_a_message_not_a_server_error(staff, document) -> None:
    answer = staff.get(f"{ADMIN}/document/{document.pk}/versions/diff/?old=1&new=9")
    assert answer.status_code == 400 and b"has no version 9" in answer.content


def test_it_is_a_404_for_another_tenants_document_and_collection(cast, client, collection, document) -> None:
    stranger = User.objects.create_user("olga", password="pw", is_staff=True)
    Membership.objects.create(user=stranger, tenant=cast.outsider_tenant, role=Role.EDITOR)
    client.force_login(stranger)
    assert client.get(f"{ADMIN}/document/{document.pk}/versions/diff/").status_code == 404
    assert client.get(f"{ADMIN}/collection/{collection.pk}/export/").status_code == 404
    assert client.post(f"{ADMIN}/collection/{collection.pk}/export/").status_code == 404
    assert not CollectionFile.objects.exists()


def test_it_lets_a_viewer_read_the_diff_but_not_export(viewer, cast, document) -> None:
    other = collection_create(tenant=cast.tenant, name="other")
    assert viewer.get(f"{ADMIN}/document/{document.pk}/versions/diff/").status_code == 200
    assert viewer.post(f"{ADMIN}/collection/{other.pk}/export/").status_code == 403
    page = viewer.get(f"{ADMIN}/collection/{other.pk}/change/")
    assert page.status_code == 200 and b">Try a search</a>" in page.content and b">Export</a>" not in page.content
    assert not CollectionFile.objects.exists()
