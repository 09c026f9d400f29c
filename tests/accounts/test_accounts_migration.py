"""Moving tenants, memberships, agents, API keys (accounts 0001, collections_app 0032, retrieval 0008) and readers
(accounts 0002, retrieval 0009) into the accounts app moves no row: a database made at the old head upgrades, and
every key still authenticates with its agent's collections and its readers, every membership still opens its tenant
in the admin, and permissions and admin history given on the old models stay attached."""

from __future__ import annotations

import hashlib

import pytest
from django.contrib.admin.models import ADDITION, LogEntry
from django.contrib.auth.models import Group, Permission, User
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client

from accounts.models import Agent, ApiKey, Membership
from tests.conftest import client_for

OLD_HEAD = [("collections_app", "0031_collectionfile_phase"), ("retrieval", "0007_citation_checks")]
SECRET = "kb_before_the_move_" + "x" * 24
AGENT_SECRET = "kb_agent_before_the_move_" + "y" * 20
PASSWORD = "a long and unguessable one"


def _populate_at_old_head(apps) -> None:
    """Rows as the old models (collections_app.Tenant, ...) made them."""
    tenant = apps.get_model("collections_app", "Tenant").objects.create(name="acme")
    apps.get_model("collections_app", "Tenant").objects.create(name="globex")
    collection = apps.get_model("collections_app", "Collection")
    handbook = collection.objects.create(tenant=tenant, name="handbook")
    collection.objects.create(tenant=tenant, name="payroll")
    reader = apps.get_model("retrieval", "Reader")
    ada = reader.objects.create(tenant=tenant, name="ada")
    reader.objects.create(tenant=tenant, name="bob")
    agent = apps.get_model("collections_app", "Agent").objects.create(tenant=tenant, name="helpdesk-bot")
    agent.collections.add(handbook)
    api_key = apps.get_model("collections_app", "ApiKey")
    key = api_key.objects.create(
        tenant=tenant, role="viewer", name="for ada", prefix=SECRET[:10], hashed_key=_sha(SECRET), any_reader=False
    )
    key.readers.add(ada)
    api_key.objects.create(
        tenant=tenant, role="viewer", agent=agent, prefix=AGENT_SECRET[:10], hashed_key=_sha(AGENT_SECRET)
    )
    user = apps.get_model("auth", "User").objects.create(
        username="tenant-admin", is_staff=True, password=_password_hash()
    )
    apps.get_model("collections_app", "Membership").objects.create(user=user, tenant=tenant, role="admin")


def _sha(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _password_hash() -> str:
    from django.contrib.auth.hashers import make_password

    return make_password(PASSWORD)


def _grant_and_log_on_old_content_types() -> None:
    """A group given "change API key" and an admin log entry, both on collections_app's content types."""
    old, _ = ContentType.objects.get_or_create(app_label="collections_app", model="apikey")
    change, _ = Permission.objects.get_or_create(
        content_type=old, codename="change_apikey", defaults={"name": "Can change API key"}
    )
    group = Group.objects.create(name="key keepers")
    group.permissions.add(change)
    user = User.objects.get(username="tenant-admin")
    user.groups.add(group)
    key_id = connection.cursor()
    key_id.execute("SELECT id FROM collections_app_apikey WHERE prefix = %s", [SECRET[:10]])
    LogEntry.objects.create(
        user=user, content_type=old, object_id=str(key_id.fetchone()[0]), object_repr="for ada", action_flag=ADDITION
    )


@pytest.mark.django_db(transaction=True)
def test_a_database_made_before_the_move_keeps_every_key_membership_and_agent_working() -> None:
    executor = MigrationExecutor(connection)
    executor.migrate([("accounts", None), *OLD_HEAD])
    try:
        _populate_at_old_head(executor.loader.project_state(OLD_HEAD).apps)
        ContentType.objects.clear_cache()
        _grant_and_log_on_old_content_types()
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())
        ContentType.objects.clear_cache()

    # Every row is found through the new models, on the same tables.
    assert ApiKey.objects.count() == 2 and Agent.objects.get().name == "helpdesk-bot"
    assert Membership.objects.get().tenant.name == "acme"

    # The key authenticates and still acts for ada only (its readers survived in their join table).
    key = client_for(SECRET)
    assert key.get("/api/manage/collections").status_code == 200
    assert sorted(c["name"] for c in key.get("/api/manage/collections").json()) == ["handbook", "payroll"]
    body = {"query": "when do refunds arrive", "collections": ["handbook"]}
    assert key.post("/api/search", {**body, "reader": "ada"}, format="json").status_code == 200
    refused = key.post("/api/search", {**body, "reader": "bob"}, format="json")
    assert refused.status_code == 403 and "may not act for reader 'bob'" in refused.json()["detail"]

    # The agent's key reaches its agent's collections and no other (the agent's join table survived).
    agent = client_for(AGENT_SECRET).get("/api/manage/collections")
    assert agent.status_code == 200 and [c["name"] for c in agent.json()] == ["handbook"]

    # The membership: its admin logs in and sees its tenant's keys and collections, not another tenant.
    browser = Client()
    assert browser.login(username="tenant-admin", password=PASSWORD)
    keys_page = browser.get("/admin/accounts/apikey/")
    assert keys_page.status_code == 200 and "for ada" in keys_page.content.decode()
    collections_page = browser.get("/admin/collections_app/collection/").content.decode()
    assert "handbook" in collections_page and "payroll" in collections_page

    # Permissions and admin history given on the old content types follow the models.
    user = User.objects.get(username="tenant-admin")
    assert user.has_perm("accounts.change_apikey")
    assert not ContentType.objects.filter(app_label="collections_app", model__in=["tenant", "apikey"]).exists()
    assert LogEntry.objects.get().get_edited_object() == ApiKey.objects.get(name="for ada")


READERS_HEAD = [
    ("accounts", "0001_moved_from_collections_app"),
    ("collections_app", "0032_accounts_moved_out"),
    ("retrieval", "0008_accounts_moved_out"),
]


@pytest.mark.django_db(transaction=True)
def test_readers_made_before_they_moved_to_accounts_keep_their_labels_keys_and_permissions() -> None:
    """accounts 0002 / retrieval 0009 move Reader in state only: the rows, a key's delegation to them, a permission
    given on retrieval's content type all follow."""
    executor = MigrationExecutor(connection)
    executor.migrate(READERS_HEAD)
    try:
        apps = executor.loader.project_state(READERS_HEAD).apps
        tenant = apps.get_model("accounts", "Tenant").objects.create(name="acme")
        apps.get_model("collections_app", "Collection").objects.create(tenant=tenant, name="handbook")
        reader = apps.get_model("retrieval", "Reader")
        ada = reader.objects.create(tenant=tenant, name="ada", labels=["hr"])
        reader.objects.create(tenant=tenant, name="bob")
        key = apps.get_model("accounts", "ApiKey").objects.create(
            tenant=tenant, role="viewer", name="for ada", prefix=SECRET[:10], hashed_key=_sha(SECRET)
        )
        key.readers.add(ada)
        user = apps.get_model("auth", "User").objects.create(
            username="reader-keeper", is_staff=True, password=_password_hash()
        )
        apps.get_model("accounts", "Membership").objects.create(user=user, tenant=tenant, role="admin")
        ContentType.objects.clear_cache()
        old, _ = ContentType.objects.get_or_create(app_label="retrieval", model="reader")
        change, _ = Permission.objects.get_or_create(
            content_type=old, codename="change_reader", defaults={"name": "Can change reader"}
        )
        User.objects.get(username="reader-keeper").user_permissions.add(change)
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())
        ContentType.objects.clear_cache()

    from accounts.models import Reader

    assert sorted(Reader.objects.values_list("name", flat=True)) == ["ada", "bob"]
    assert Reader.objects.get(name="ada").labels == ["hr"]
    body = {"query": "when do refunds arrive", "collections": ["handbook"]}
    assert client_for(SECRET).post("/api/search", {**body, "reader": "ada"}, format="json").status_code == 200
    refused = client_for(SECRET).post("/api/search", {**body, "reader": "bob"}, format="json")
    assert refused.status_code == 403 and "may not act for reader 'bob'" in refused.json()["detail"]
    assert User.objects.get(username="reader-keeper").has_perm("accounts.change_reader")
    assert not ContentType.objects.filter(app_label="retrieval", model="reader").exists()
