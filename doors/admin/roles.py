"""Who may do what in the admin: the membership role in each tenant decides.

For staff who are not superusers, a kbsite page answers to the role the person holds in the row's
tenant (viewer < editor < admin), whatever Django model permissions the account was given: model
permissions are a second source of truth that drifts (an editor once given "add API key" minted admin
keys). Superusers keep Django's own rules; tenants, users and the task queue are theirs alone.

- viewer: reads every page of its tenants;
- editor: also adds, changes and deletes collections and documents, and runs their actions;
- admin: also manages API keys, agents, reader labels and memberships of its tenants, granting at
  most its own role.

The person's roles are read once per request (one query) and kept on the request.
"""

from __future__ import annotations

import uuid

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.http import HttpRequest

from accounts.models import ROLE_RANK, Membership, Role, Tenant

_CACHE = "_kb_roles"


def membership_role_for(user: AbstractBaseUser | AnonymousUser, tenant: Tenant | uuid.UUID) -> Role | None:
    """The role `user` holds in `tenant`, or None when not a member."""
    if not user.is_authenticated:
        return None
    tenant_id = tenant.pk if isinstance(tenant, Tenant) else tenant
    memberships = Membership.objects.filter(user_id=user.pk, tenant_id=tenant_id, tenant__deleting_at__isnull=True)
    role = memberships.values_list("role", flat=True).first()
    return Role(role) if role is not None else None


def roles_of(request: HttpRequest) -> dict[uuid.UUID, Role]:
    """{tenant id: role} of the requesting person (tenants being deleted left out), read once per request."""
    roles = getattr(request, _CACHE, None)
    if roles is None:
        user = request.user
        # A tenant being deleted is nobody's any more (collections_app/services/deletion.py).
        mine = Membership.objects.filter(tenant__deleting_at__isnull=True)
        rows = mine.filter(user=user).values_list("tenant_id", "role") if user.is_authenticated else []
        roles = {tenant_id: Role(role) for tenant_id, role in rows}
        setattr(request, _CACHE, roles)
    return roles


def at_least(role: Role | None, needed: Role) -> bool:
    return role is not None and ROLE_RANK[role] >= ROLE_RANK[needed]


def tenants_where(request: HttpRequest, needed: Role) -> list[uuid.UUID] | None:
    """The tenants where the person holds `needed` or above; None for a superuser (every tenant)."""
    if request.user.is_superuser:
        return None
    return [tenant_id for tenant_id, role in roles_of(request).items() if at_least(role, needed)]


def may(request: HttpRequest, tenant_id: uuid.UUID | None, needed: Role) -> bool:
    """May the person act with `needed` in this tenant (None: in at least one of its tenants)?"""
    if request.user.is_superuser:
        return True
    if tenant_id is None:
        return any(at_least(role, needed) for role in roles_of(request).values())
    return at_least(roles_of(request).get(tenant_id), needed)


def role_in(request: HttpRequest, tenant_id: uuid.UUID) -> Role | None:
    """The person's role in this tenant (a superuser acts as its admin); None: not a member."""
    if request.user.is_superuser:
        return Role.ADMIN
    return roles_of(request).get(tenant_id)


def grantable_roles(request: HttpRequest, tenant_id: uuid.UUID | None = None) -> list[Role]:
    """The roles the person may give (to a key or a membership): up to its own, in that tenant or any."""
    if request.user.is_superuser:
        return list(Role)
    held = [roles_of(request).get(tenant_id)] if tenant_id is not None else list(roles_of(request).values())
    ceiling = max((ROLE_RANK[r] for r in held if r is not None), default=-1)
    return [role for role in Role if ROLE_RANK[role] <= ceiling]
