"""Issue 41, finding 5: "Add" from a collection's golden questions starts with that collection chosen, and a person
who sees several tenants finds the tenant beside same-named choices (collections, readers) in the dropdowns; an
editor of one tenant sees the names alone."""

from __future__ import annotations

import html
import re

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from accounts.models import Membership, Role
from accounts.readers import reader_create
from collections_app.services.collections import collection_create

ADD = "admin:retrieval_goldenquestion_add"
LIST = "admin:retrieval_goldenquestion_changelist"


def options(page: str, field: str) -> list[tuple[str, str, bool]]:
    """(value, label, selected) of a select's options."""
    select = re.search(rf'<select name="{field}"[^>]*>(.*?)</select>', page, re.S)
    assert select, f"no {field} dropdown"
    found = re.findall(r'<option value="([^"]*)"([^>]*)>([^<]*)</option>', select.group(1))
    return [(value, html.unescape(label), "selected" in attrs) for value, attrs, label in found]


@pytest.fixture
def twins(cast):
    """Two tenants, each with a collection and a reader called beta-secret, and one name of their own."""
    ours = collection_create(tenant=cast.tenant, name="beta-secret")
    theirs = collection_create(tenant=cast.outsider_tenant, name="beta-secret")
    collection_create(tenant=cast.tenant, name="handbook")
    reader_create(tenant=cast.tenant, name="beta-secret")
    reader_create(tenant=cast.outsider_tenant, name="beta-secret")
    return ours, theirs


@pytest.fixture
def superuser(db, client):
    user = User.objects.create_superuser("root", password="pw")
    client.force_login(user)
    return client


def test_add_from_a_collections_list_starts_with_that_collection(staff, cast, twins) -> None:
    ours, _ = twins
    listing = staff.get(reverse(LIST), {"collection__id__exact": ours.pk}).content.decode()
    # The list's own "Add" (the sidebar's goes to a blank form): it carries the list's filter along.
    tools = listing.split('class="object-tools"')[1].split("</ul>")[0]
    found = re.search(r'<a href="([^"]*/goldenquestion/add/[^"]*)" class="addlink"', tools)
    assert found is not None, "no Add on the list"
    add = html.unescape(found.group(1))
    assert "_changelist_filters" in add

    page = staff.get(add).content.decode()

    assert [value for value, _, selected in options(page, "collection") if selected] == [str(ours.pk)]
    # Without a filter, nothing is chosen for the editor.
    plain = staff.get(reverse(ADD)).content.decode()
    assert not [value for value, _, selected in options(plain, "collection") if selected and value]


def test_another_tenants_collection_in_the_filter_is_not_preselected(staff, cast, twins) -> None:
    _, theirs = twins
    page = staff.get(reverse(ADD), {"_changelist_filters": f"collection__id__exact={theirs.pk}"}).content.decode()
    assert str(theirs.pk) not in [value for value, _, _ in options(page, "collection")]
    assert not [value for value, _, selected in options(page, "collection") if selected and value]


def test_a_superuser_sees_the_tenant_beside_same_named_choices(superuser, cast, twins) -> None:
    page = superuser.get(reverse(ADD)).content.decode()
    labels = [label for _, label, _ in options(page, "collection")]
    assert "beta-secret (tenant acme)" in labels and "beta-secret (tenant globex)" in labels
    assert "handbook" in labels  # a name of its own needs no tenant

    evaluate = superuser.get(reverse("admin:retrieval_goldenquestion_evaluate")).content.decode()
    readers = [label for _, label, _ in options(evaluate, "reader")]
    assert "beta-secret (tenant acme)" in readers and "beta-secret (tenant globex)" in readers
    measure = superuser.get(reverse("admin:retrieval_goldenquestion_measure")).content.decode()
    assert "beta-secret (tenant globex)" in [label for _, label, _ in options(measure, "collection")]


def test_staff_of_two_tenants_see_the_tenant_and_an_editor_of_one_does_not(client, staff, cast, twins) -> None:
    one = [label for _, label, _ in options(staff.get(reverse(ADD)).content.decode(), "collection")]
    assert "beta-secret" in one and not any("tenant" in label for label in one)

    both = User.objects.create_user("bea", password="pw", is_staff=True)
    both.user_permissions.set(User.objects.get(username="ada").user_permissions.all())
    for tenant in (cast.tenant, cast.outsider_tenant):
        Membership.objects.create(user=both, tenant=tenant, role=Role.EDITOR)
    client.force_login(both)
    labels = [label for _, label, _ in options(client.get(reverse(ADD)).content.decode(), "collection")]
    assert {"beta-secret (tenant acme)", "beta-secret (tenant globex)", "handbook"} <= set(labels)


def test_the_lists_collection_filter_says_the_tenant_of_same_named_collections_to_a_superuser(
    staff, cast, twins
) -> None:
    from django.test import Client

    from retrieval.models import GoldenQuestion

    for collection in twins:
        GoldenQuestion.objects.create(tenant=collection.tenant, collection=collection, question="Who?", control=True)
    root = Client()
    root.force_login(User.objects.create_superuser("root", password="pw"))

    page = html.unescape(root.get(reverse(LIST)).content.decode())
    assert "beta-secret (tenant acme)" in page and "beta-secret (tenant globex)" in page

    one = html.unescape(staff.get(reverse(LIST)).content.decode())
    assert "beta-secret" in one and "(tenant " not in one
