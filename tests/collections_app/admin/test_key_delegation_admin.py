"""The admin's API key page: a tenant admin sets which readers a key may act for when it makes it (and may
narrow or widen it later); the key list shows it for every key."""

from __future__ import annotations

from django.contrib.auth.models import User

from accounts.issuing import api_key_create
from accounts.models import ApiKey, Membership, Role
from accounts.readers import reader_create
from tests.conftest import client_for

ADD = "/admin/accounts/apikey/add/"
LIST = "/admin/accounts/apikey/"


def test_a_tenant_admin_makes_a_key_for_some_readers_and_the_list_shows_each_keys_readers(cast, client) -> None:
    admin_user = User.objects.create_user("grace", password="pw", is_staff=True)
    Membership.objects.create(user=admin_user, tenant=cast.tenant, role=Role.ADMIN)
    client.force_login(admin_user)
    ada = reader_create(tenant=cast.tenant, name="ada@example.com", labels=["hr"])
    reader_create(tenant=cast.tenant, name="bob@example.com", labels=["sales"])
    theirs = reader_create(tenant=cast.outsider_tenant, name="eve@globex.example", labels=["hr"])

    form = client.get(ADD).content.decode()
    crossed = client.post(ADD, {"tenant": cast.tenant.pk, "role": "viewer", "name": "x", "readers": [theirs.pk]})
    made = client.post(ADD, {"tenant": cast.tenant.pk, "role": "viewer", "name": "hr-bot", "readers": [ada.pk]})
    api_key_create(tenant=cast.tenant, role=Role.VIEWER, name="no-reader-bot")
    listed = client.get(LIST).content.decode()

    assert "ada@example.com" in form and "eve@globex.example" not in form
    assert crossed.status_code == 200 and not ApiKey.objects.filter(name="x").exists()
    assert made.status_code == 302, made.content[:500]
    key = ApiKey.objects.get(name="hr-bot")
    assert [r.name for r in key.readers.all()] == ["ada@example.com"] and key.any_reader is False
    # Each key's readers in its row: the new one's, "none" for a key given none, "any" for the cast's.
    rows = {row.split("</th>")[0]: row for row in listed.split('<th class="field-prefix">')[1:]}
    row_of = {name: next(r for r in rows.values() if f">{name}<" in r) for name in ("hr-bot", "no-reader-bot")}
    assert "ada@example.com" in row_of["hr-bot"] and "bob@example.com" not in row_of["hr-bot"]
    assert 'field-acts_for_readers">none<' in row_of["no-reader-bot"]
    assert 'field-acts_for_readers">any<' in listed


def test_narrowing_a_key_on_its_page_takes_effect_at_its_next_search(cast, client, collection) -> None:
    root = User.objects.create_superuser("root", password="pw")
    client.force_login(root)
    ada = reader_create(tenant=cast.tenant, name="ada@example.com", labels=["hr"])
    reader_create(tenant=cast.tenant, name="bob@example.com", labels=["sales"])
    issued = api_key_create(tenant=cast.tenant, role=Role.VIEWER, name="bot", readers="any")
    agent = client_for(issued.secret)
    body = {"query": "lockers", "reader": "bob@example.com"}
    assert agent.post("/api/search", body, format="json").status_code == 200

    changed = client.post(
        f"/admin/accounts/apikey/{issued.key.pk}/change/",
        {"tenant": cast.tenant.pk, "name": "bot", "role": "viewer", "readers": [ada.pk]},
    )

    assert changed.status_code == 302, changed.content[:500]
    assert agent.post("/api/search", body, format="json").status_code == 403
    assert agent.post("/api/search", {**body, "reader": "ada@example.com"}, format="json").status_code == 200
