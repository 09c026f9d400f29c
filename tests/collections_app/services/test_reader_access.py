"""Who reads what is the tenant admins' decision: per_reader changes only with an admin's key or role, in the
API and the admin alike (document labels: tests/collections_app/services/test_document_labels.py)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

from accounts.models import Membership, Role
from collections_app.models import Collection
from collections_app.services.collections import collection_create, collection_update
from collections_app.services.reader_access import ReaderAccessNeedsAdmin


@pytest.fixture
def hr(cast) -> Collection:
    return collection_create(tenant=cast.tenant, name="hrdocs", per_reader=True)


def _url(collection: Collection) -> str:
    return f"/api/manage/collections/{collection.pk}"


def test_an_editor_key_cannot_switch_reader_filtering_off(cast, hr):
    answer = cast.editor.patch(_url(hr), {"per_reader": False}, format="json")

    assert answer.status_code == 403 and "admin" in answer.json()["detail"]
    hr.refresh_from_db()
    assert hr.per_reader is True  # nothing changed, the rest of the body included


def test_an_editor_key_changes_other_settings_and_may_resend_per_reader_unchanged(cast, hr):
    answer = cast.editor.patch(_url(hr), {"per_reader": True, "description": "HR only"}, format="json")

    assert answer.status_code == 200 and answer.json()["description"] == "HR only"


@pytest.mark.parametrize("value", [False, True])
def test_an_admin_key_switches_reader_filtering_either_way(cast, value):
    collection = collection_create(tenant=cast.tenant, name="handbook", per_reader=not value)

    answer = cast.admin.patch(_url(collection), {"per_reader": value}, format="json")

    assert answer.status_code == 200 and answer.json()["per_reader"] is value


def _member(cast, role: Role) -> Client:
    user = User.objects.create_user(f"{role}-person", password="pw", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(content_type__app_label__in=["collections_app", "retrieval"]))
    Membership.objects.create(user=user, tenant=cast.tenant, role=role)
    client = Client()
    client.force_login(user)
    return client


def test_in_the_admin_per_reader_is_read_only_for_an_editor_and_editable_for_an_admin(cast, hr):
    page = f"/admin/collections_app/collection/{hr.pk}/change/"

    as_editor = _member(cast, Role.EDITOR).get(page).content.decode()
    as_admin = _member(cast, Role.ADMIN).get(page).content.decode()

    assert 'name="_save"' in as_editor and 'name="per_reader"' not in as_editor
    assert 'name="per_reader"' in as_admin


def test_the_service_refuses_an_editors_per_reader_change_whatever_the_door(cast, hr):
    with pytest.raises(ReaderAccessNeedsAdmin):
        collection_update(collection=hr, role=Role.EDITOR, per_reader=False)
    assert collection_update(collection=hr, role=Role.ADMIN, per_reader=False).per_reader is False
