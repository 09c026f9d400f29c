"""The shared cast (a tenant with an admin, an editor, a viewer and an agent; an outsider tenant) and helpers."""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from rest_framework.test import APIClient

from accounts.issuing import api_key_create
from accounts.models import Agent, Role, Tenant
from collections_app.models import Collection
from collections_app.services.collections import collection_create


def client_for(secret: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


@dataclass
class Cast:
    tenant: Tenant
    outsider_tenant: Tenant
    admin: APIClient
    editor: APIClient
    viewer: APIClient
    outsider: APIClient
    agent: Agent
    agent_client: APIClient

    def new_client(self, role: str) -> APIClient:
        """A client with a key of its own in the cast's tenant (throttles and audits count per key)."""
        return client_for(api_key_create(tenant=self.tenant, role=role, readers="any").secret)

    # For a test that shares one key between threads, each with a client of its own.
    client_for = staticmethod(client_for)


@pytest.fixture
def cast(db) -> Cast:
    tenant = Tenant.objects.create(name="acme")
    outsider_tenant = Tenant.objects.create(name="globex")
    agent = Agent.objects.create(tenant=tenant, name="support-bot")
    # The cast's keys act for any reader, as keys made before reader delegation do after the upgrade
    # (migration 0029); tests/retrieval/api/test_reader_delegation.py makes narrower ones.
    return Cast(
        tenant=tenant,
        outsider_tenant=outsider_tenant,
        admin=client_for(api_key_create(tenant=tenant, role=Role.ADMIN, readers="any").secret),
        editor=client_for(api_key_create(tenant=tenant, role=Role.EDITOR, readers="any").secret),
        viewer=client_for(api_key_create(tenant=tenant, role=Role.VIEWER, readers="any").secret),
        outsider=client_for(api_key_create(tenant=outsider_tenant, role=Role.ADMIN, readers="any").secret),
        agent=agent,
        agent_client=client_for(api_key_create(tenant=tenant, role=Role.VIEWER, agent=agent, readers="any").secret),
    )


@pytest.fixture
def collection(cast: Cast) -> Collection:
    return collection_create(tenant=cast.tenant, name="handbook")


@pytest.fixture
def upload(django_capture_on_commit_callbacks) -> Callable:
    """Upload through the API and run the queued ingestion, as the cluster would after commit."""

    def _upload(
        client: APIClient,
        collection: Collection,
        filename: str,
        content: bytes,
        **extra,
    ):
        file = io.BytesIO(content)
        file.name = filename
        with django_capture_on_commit_callbacks(execute=True):
            return client.post(
                f"/api/manage/collections/{collection.pk}/documents",
                {"file": file, **extra},
                format="multipart",
            )

    return _upload


@pytest.fixture
def staff(cast, client):
    """A logged-in staff member with every kbsite permission, editor of the cast's tenant only."""
    from django.contrib.auth.models import Permission, User

    from accounts.models import Membership

    user = User.objects.create_user("ada", password="pw", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(content_type__app_label__in=["collections_app", "retrieval"]))
    Membership.objects.create(user=user, tenant=cast.tenant, role=Role.EDITOR)
    client.force_login(user)
    return client


@pytest.fixture(autouse=True)
def _storage(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "storage"
