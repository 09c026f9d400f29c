"""Memberships: who works in a tenant's admin, and with which role."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractUser
from django.db import transaction

from accounts.models import Membership, Role, Tenant


@dataclass(frozen=True)
class StaffMember:
    user: AbstractUser
    membership: Membership
    user_created: bool
    role_changed: bool
    password: str | None  # generated for a new account, shown once, never stored in clear


@transaction.atomic
def staff_member_add(*, username: str, tenant: Tenant, role: str, password: str | None = None) -> StaffMember:
    """Make `username` a staff member of `tenant` with `role`; safe to run again.

    A missing account is created (with `password`, else a generated one returned once); an existing
    one keeps its password unless `password` is given. Its role in other tenants is left as it is.
    """
    role = Role(role)
    user_model = get_user_model()
    user = user_model.objects.select_for_update().filter(username=username).first()
    generated = None
    created = user is None
    if user is None:
        generated = None if password is not None else secrets.token_urlsafe(12)
        user = user_model.objects.create_user(username=username, password=password or generated, is_staff=True)
    else:
        fields = []
        if not user.is_staff:
            user.is_staff = True
            fields.append("is_staff")
        if password is not None:
            user.set_password(password)
            fields.append("password")
        if fields:
            user.save(update_fields=fields)
    membership, made = Membership.objects.get_or_create(user=user, tenant=tenant, defaults={"role": role})
    changed = made or membership.role != role
    if membership.role != role:
        membership.role = role
        membership.save(update_fields=["role"])
    return StaffMember(user=user, membership=membership, user_created=created, role_changed=changed, password=generated)
