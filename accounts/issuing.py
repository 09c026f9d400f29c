"""Issuing API keys with their reader delegation (the readers each may act for). Secrets and resolving a
presented key: accounts/keys.py."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from django.db import transaction

from accounts.keys import api_key_assign_secret
from accounts.models import Agent, ApiKey, Reader, Role, Tenant
from infra.errors import Invalid

ANY_READER: Literal["any"] = "any"
# Reader delegation as an admin gives it: "any", or the readers (none: the key acts for no reader).
Delegation = Literal["any"] | Iterable[Reader]


class UnknownDelegatedReader(Invalid):
    field = "readers"


@dataclass(frozen=True)
class IssuedKey:
    key: ApiKey
    secret: str  # shown once, never stored


@transaction.atomic
def api_key_create(
    *, tenant: Tenant, role: str, agent: Agent | None = None, name: str = "", readers: Delegation = ()
) -> IssuedKey:
    """A new key; `readers` are those it may act for (reader delegation): "any", or some (default: none)."""
    role = Role(role)
    if agent is not None and agent.tenant_id != tenant.id:
        raise ValueError("the agent belongs to another tenant")
    key = ApiKey(tenant=tenant, role=role, agent=agent, name=name)
    secret = api_key_assign_secret(key=key)
    key.save()
    api_key_delegate(key=key, readers=readers)
    return IssuedKey(key=key, secret=secret)


def api_key_delegate(*, key: ApiKey, readers: Delegation) -> None:
    """Set the readers `key` may act for: "any" (every reader of its tenant, present and future) or exactly
    these (none: it may name no reader). Only an admin's door calls this, never the key's own requests."""
    if isinstance(readers, str) and readers != ANY_READER:
        raise ValueError(f'readers is "{ANY_READER}" or readers, not a name')
    chosen: list[Reader] = []
    key.any_reader = isinstance(readers, str)
    if not isinstance(readers, str):
        chosen = list(readers)
        foreign = sorted(r.name for r in chosen if r.tenant_id != key.tenant_id)
        if foreign:
            raise UnknownDelegatedReader(f"not readers of this key's tenant: {', '.join(foreign)}")
    key.save(update_fields=["any_reader"])
    key.readers.set(chosen)


def readers_named(*, tenant: Tenant, names: Sequence[str]) -> Delegation:
    """The delegation `names` ask for: "any" alone, or registered readers of `tenant` (an unknown name: 400)."""
    wanted = [n.strip() for n in names if n.strip()]
    if wanted == [ANY_READER]:
        return ANY_READER
    if any(n.casefold() == ANY_READER for n in wanted):
        raise UnknownDelegatedReader(
            f"'{ANY_READER}' cannot be combined with reader names: give --readers {ANY_READER} alone, or only names"
        )
    found = {r.name: r for r in Reader.objects.for_tenant(tenant).filter(name__in=wanted)}
    missing = [n for n in dict.fromkeys(wanted) if n not in found]
    if missing:
        raise UnknownDelegatedReader(
            f"no reader named {missing[0]!r} is registered in tenant {tenant.name}; register it first "
            "(POST /api/manage/readers, or Readers in the admin), or give --readers any"
        )
    return [found[n] for n in dict.fromkeys(wanted)]
