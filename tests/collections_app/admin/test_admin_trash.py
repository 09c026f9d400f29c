"""The admin's trash (issue 41): "Delete selected" asks first, naming the golden questions that refer to each
document, then moves them to the trash; the Trash page restores or purges; "Empty trash" asks first, then purges
every document in it with its stored files. The trash is the editors': a viewer is refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import User

from accounts.models import Membership, Role
from collections_app.models import Document
from retrieval.models import GoldenQuestion

LEAVE = b"Carry-over\n\nUnused vacation days may be carried over until March 31 of the following year.\n"
BIKES = b"Bicycles\n\nCyclists can lock their bikes in the covered rack next to the main entrance.\n"
CHANGELIST = "/admin/collections_app/document/"
TRASH = "/admin/collections_app/document/trash/"


@pytest.fixture
def documents(cast, collection, upload) -> dict[str, Document]:
    for name, data in (("leave.txt", LEAVE), ("bikes.txt", BIKES)):
        assert upload(cast.editor, collection, name, data).status_code == 202
    return {d.filename: d for d in Document.objects.filter(collection=collection)}


def test_delete_selected_names_the_golden_questions_then_moves_the_documents_to_the_trash(
    cast, collection, documents, staff
):
    leave = documents["leave.txt"]
    golden = GoldenQuestion.objects.create(
        tenant=cast.tenant, collection=collection, question="When do vacation days lapse?", markers=["March 31"]
    )
    selected = {"action": "delete_selected", "_selected_action": [str(d.pk) for d in documents.values()]}

    asked = staff.post(CHANGELIST, selected)

    assert asked.status_code == 200
    html = asked.content.decode()
    assert "Move 2 document(s) to the trash?" in html and "When do vacation days lapse?" in html
    assert f"/admin/retrieval/goldenquestion/{golden.pk}/change/" in html  # a marker in its text refers to it
    assert html.count("no golden question refers to it") == 1  # bikes.txt
    assert Document.objects.filter(collection=collection).count() == 2  # asking changed nothing

    done = staff.post(CHANGELIST, {**selected, "post": "yes"}, follow=True)

    assert "2 document(s) moved to the trash" in done.content.decode()
    assert not Document.objects.filter(collection=collection).exists()
    trashed = Document.all_objects.get(pk=leave.pk)
    assert trashed.trashed_by_name == "ada" and trashed.trashed_by == User.objects.get(username="ada")
    page = staff.get(f"{TRASH}?collection={collection.pk}").content.decode()
    assert "leave.txt" in page and "bikes.txt" in page and "ada" in page


def test_restore_and_purge_from_the_trash_page(cast, collection, documents, staff, django_capture_on_commit_callbacks):
    leave, bikes = documents["leave.txt"], documents["bikes.txt"]
    for document in (leave, bikes):
        staff.post(f"{CHANGELIST}{document.pk}/delete/", {"post": "yes"})
    assert not Document.objects.filter(collection=collection).exists()
    files = [Path(settings.MEDIA_ROOT) / bikes.file.name]
    assert all(f.exists() for f in files)

    restored = staff.post(f"{TRASH}?collection={collection.pk}", {"restore": str(leave.pk)}, follow=True)
    assert "Restored" in restored.content.decode() and Document.objects.filter(pk=leave.pk).exists()

    with django_capture_on_commit_callbacks(execute=True):  # the stored files go once the deletion commits
        purged = staff.post(f"{TRASH}?collection={collection.pk}", {"purge": str(bikes.pk)}, follow=True)
    assert "Purged bikes.txt for good." in purged.content.decode()
    assert not Document.all_objects.filter(pk=bikes.pk).exists() and not any(f.exists() for f in files)


def test_empty_trash_asks_first_then_purges_every_document_in_it(
    cast, collection, documents, staff, django_capture_on_commit_callbacks
):
    for document in documents.values():
        staff.post(f"{CHANGELIST}{document.pk}/delete/", {"post": "yes"})
    files = [Path(settings.MEDIA_ROOT) / d.file.name for d in documents.values()]
    url = f"{TRASH}empty/?collection={collection.pk}"

    asked = staff.get(url).content.decode()
    assert "2 documents in the trash of handbook will be purged for good" in asked
    assert Document.all_objects.filter(collection=collection).count() == 2

    with django_capture_on_commit_callbacks(execute=True):
        staff.post(url)

    assert not Document.all_objects.filter(collection=collection).exists()
    assert not any(f.exists() for f in files)
    assert "The trash is empty." in staff.get(f"{TRASH}?collection={collection.pk}").content.decode()


def test_a_viewer_is_refused_the_trash_and_sees_no_link_to_it(cast, collection, documents, client):
    viewer = User.objects.create_user("vic", password="pw", is_staff=True)
    Membership.objects.create(user=viewer, tenant=cast.tenant, role=Role.VIEWER)
    client.force_login(viewer)

    assert client.get(f"{TRASH}?collection={collection.pk}").status_code == 403
    assert client.post(f"{TRASH}empty/?collection={collection.pk}").status_code == 403
    assert "kb-trash-link" not in client.get(f"{CHANGELIST}?collection__id__exact={collection.pk}").content.decode()
    assert Document.objects.filter(collection=collection).count() == 2
