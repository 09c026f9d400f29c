"""Issue 41, finding 5, in Chromium: "Add" from a collection's golden questions starts with that collection chosen,
and a superuser's dropdowns say the tenant beside same-named choices ("beta-secret (tenant acme)"), while an editor
of one tenant sees the name alone. Screenshots: var/test-artifacts/golden-choices-*.png."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from accounts.models import Membership, Role, Tenant
from accounts.readers import reader_create
from collections_app.services.collections import collection_create

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "a long golden-choices password"


@pytest.fixture
def twins():
    acme, globex = Tenant.objects.create(name="acme"), Tenant.objects.create(name="globex")
    User.objects.create_superuser("root", password=PASSWORD)
    editor = User.objects.create_user("edna", password=PASSWORD, is_staff=True)
    Membership.objects.create(user=editor, tenant=acme, role=Role.EDITOR)
    ours = collection_create(tenant=acme, name="beta-secret")
    collection_create(tenant=globex, name="beta-secret")
    collection_create(tenant=acme, name="handbook")
    for tenant in (acme, globex):
        reader_create(tenant=tenant, name="beta-secret")
    return ours


def log_in(page, base: str, username: str) -> None:
    page.context.clear_cookies()
    page.goto(f"{base}/admin/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")


def labels(page, select: str) -> list[str]:
    return [text.strip() for text in page.locator(f"{select} option").all_text_contents()]


def test_add_preselects_the_collection_and_the_tenant_shows_beside_same_named_choices(
    offline_page, live_server, twins, screenshot
):
    page, base, ours = offline_page, live_server.url, twins

    # A superuser: the collection's golden questions, then Add: that collection chosen, its tenant said.
    log_in(page, base, "root")
    page.goto(f"{base}/admin/retrieval/goldenquestion/?collection__id__exact={ours.pk}")
    page.click(".object-tools a.addlink")
    page.wait_for_selector("#id_collection")
    assert page.locator("#id_collection").input_value() == str(ours.pk)
    chosen = page.locator("#id_collection option:checked").inner_text().strip()
    assert chosen == "beta-secret (tenant acme)"
    shown = labels(page, "#id_collection")
    assert "beta-secret (tenant globex)" in shown and "handbook" in shown
    screenshot(page, "golden-choices-1-superuser-add")

    # The evaluate page's reader dropdown too.
    page.goto(f"{base}/admin/retrieval/goldenquestion/evaluate/")
    page.wait_for_selector("#id_reader")
    assert {"beta-secret (tenant acme)", "beta-secret (tenant globex)"} <= set(labels(page, "#id_reader"))
    screenshot(page, "golden-choices-2-superuser-readers")

    # An editor of one tenant: the same page, names alone, the collection chosen all the same.
    log_in(page, base, "edna")
    page.goto(f"{base}/admin/retrieval/goldenquestion/?collection__id__exact={ours.pk}")
    page.click(".object-tools a.addlink")
    page.wait_for_selector("#id_collection")
    assert page.locator("#id_collection").input_value() == str(ours.pk)
    shown = labels(page, "#id_collection")
    assert "beta-secret" in shown and not any("tenant" in label for label in shown)
    screenshot(page, "golden-choices-3-editor-add")
    assert page.outside_requests == []
