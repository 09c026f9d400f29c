"""Migration 0029 (reader delegation): keys made before it keep acting for any reader after the upgrade, so
agents that name readers today do not start failing on the day it lands; keys made after it act for none."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from accounts.issuing import api_key_create
from accounts.models import ApiKey, Role, Tenant

BEFORE = ("collections_app", "0028_keyword_delete_skips_dropped_collections")
AFTER = ("collections_app", "0029_api_key_reader_delegation")


@pytest.mark.django_db(transaction=True)
def test_keys_made_before_delegation_act_for_any_reader_and_new_ones_for_none() -> None:
    executor = MigrationExecutor(connection)
    executor.migrate([BEFORE])
    try:
        old_apps = executor.loader.project_state([BEFORE]).apps
        tenant = old_apps.get_model("collections_app", "Tenant").objects.create(name="acme")
        old_apps.get_model("collections_app", "ApiKey").objects.create(
            tenant=tenant, role="viewer", prefix="kb_old", hashed_key="0" * 64
        )
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())

    old = ApiKey.objects.get(prefix="kb_old")
    new = api_key_create(tenant=Tenant.objects.get(name="acme"), role=Role.VIEWER).key
    assert old.any_reader is True and list(old.readers.all()) == []
    assert new.any_reader is False and list(new.readers.all()) == []
