"""Tenants, the people in them (memberships and their roles), agents and their API keys.

Every row that holds content carries its tenant (TenantOwned); queries start from `for_tenant()` so tenancy is
structural, never a filter each view must remember. The tables keep the names they had in collections_app (the
models moved in state only: accounts/migrations/0001), so no row moved.
"""

from __future__ import annotations

import uuid
from typing import ClassVar, Self

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models


class Role(models.TextChoices):
    VIEWER = "viewer", "viewer"
    EDITOR = "editor", "editor"
    ADMIN = "admin", "admin"


ROLE_RANK = {Role.VIEWER: 0, Role.EDITOR: 1, Role.ADMIN: 2}


def role_at_least(role: str, needed: str) -> bool:
    return ROLE_RANK[Role(role)] >= ROLE_RANK[Role(needed)]


class TenantsQuerySet(models.QuerySet):
    """Tenants themselves (TenantQuerySet is for the rows a tenant owns)."""

    def live(self) -> Self:
        """Tenants not being deleted: whom keys, memberships and forms reach."""
        return self.filter(deleting_at__isnull=True)

    def deleting(self) -> Self:
        return self.filter(deleting_at__isnull=False)


class LiveTenantManager(models.Manager.from_queryset(TenantsQuerySet)):  # type: ignore[misc]
    """`Tenant.objects`: tenants not being deleted (a deleted one is reached by name: `Tenant.all_objects`)."""

    def get_queryset(self) -> TenantsQuerySet:
        return super().get_queryset().live()


class Tenant(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=100)
    # Deleted (collections_app/services/deletion.py): from this commit on its keys answer 401, its members see
    # nothing of it, its collections are flagged too; its rows go in the background, then the row itself.
    deleting_at = models.DateTimeField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    objects: ClassVar[LiveTenantManager] = LiveTenantManager()
    # Every row, those being deleted included: the removal, its recovery and the admin's "being deleted" note.
    all_objects: ClassVar[models.Manager[Tenant]] = TenantsQuerySet.as_manager()

    class Meta:
        db_table = "collections_app_tenant"
        ordering = ["name"]
        # Cascades and related access (`key.tenant`) reach a tenant being deleted too.
        base_manager_name = "all_objects"
        constraints = [
            # One being deleted steps aside: its name is free at once.
            models.UniqueConstraint(
                fields=["name"], condition=models.Q(deleting_at__isnull=True), name="tenant_name_unique"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class TenantQuerySet(models.QuerySet):
    def for_tenant(self, tenant: Tenant | uuid.UUID) -> Self:
        return self.filter(tenant=tenant)


class TenantOwned(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE)

    objects = TenantQuerySet.as_manager()

    class Meta:
        abstract = True


class Membership(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.VIEWER)

    class Meta:
        db_table = "collections_app_membership"
        constraints = [
            # One role per person per tenant: two rows would make "what may she do" ambiguous.
            models.UniqueConstraint(fields=["user", "tenant"], name="membership_one_per_user_tenant"),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.tenant} ({self.role})"


class Agent(TenantOwned):
    name = models.CharField(max_length=200)
    # By name: accounts imports no content app. The join table keeps its name from before the move.
    collections = models.ManyToManyField(
        "collections_app.Collection", blank=True, related_name="agents", db_table="collections_app_agent_collections"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "collections_app_agent"
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["tenant", "name"], name="agent_name_unique_per_tenant")]

    def __str__(self) -> str:
        return self.name


class Reader(TenantOwned):
    """Someone a search is made for. The server decides which labels a reader holds: a search names the
    reader, never its labels, so no caller can grant itself a label by asking for it."""

    name = models.CharField(max_length=200, help_text="How searches name this reader, e.g. ada@example.com.")
    labels = ArrayField(
        models.CharField(max_length=100),
        default=list,
        blank=True,
        help_text="Paragraphs of per-reader collections carrying one of these labels are readable to this reader.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "retrieval_reader"  # made by retrieval, which named it; moved here in state only
        ordering = ["name"]
        constraints = [
            # A search names its reader: two with one name would make its rights ambiguous.
            models.UniqueConstraint(fields=["tenant", "name"], name="reader_name_unique_per_tenant"),
        ]

    def __str__(self) -> str:
        return self.name


class ApiKey(TenantOwned):
    name = models.CharField(max_length=200, blank=True, default="")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.VIEWER)
    agent = models.ForeignKey(Agent, null=True, blank=True, on_delete=models.CASCADE, related_name="keys")
    # The first characters of the secret, kept to tell keys apart in lists.
    prefix = models.CharField(max_length=16, db_index=True)
    # sha256 of the whole secret; the secret itself is never stored.
    hashed_key = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked = models.BooleanField(default=False)
    # Reader delegation: the registered readers this key may name in a search, map or citation check. Set by an
    # admin, never by the key; a new key acts for none until given some (keys older than delegation: any).
    any_reader = models.BooleanField(
        default=False,
        help_text="May act for every reader of its tenant, present and future (the readers below then do not matter).",
    )
    readers = models.ManyToManyField(
        Reader,
        blank=True,
        related_name="delegated_keys",
        db_table="collections_app_apikey_readers",
        help_text="The registered readers this key may name in a search, a corpus map or a citation check.",
    )

    class Meta:
        db_table = "collections_app_apikey"
        ordering = ["-created_at"]
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.role})"
