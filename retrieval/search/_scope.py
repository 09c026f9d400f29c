from __future__ import annotations

from dataclasses import dataclass, field

from collections_app.exceptions import Invalid
from collections_app.models import ApiKey, Collection


class UnknownCollections(Invalid):
    pass


@dataclass(frozen=True)
class SearchScope:
    """What one search may read: a tenant, its collections, the reader's labels."""

    tenant_id: object
    collections: list[Collection]
    reader_labels: list[str] = field(default_factory=list)
    why_empty: str = ""


def resolve_scope(*, key: ApiKey, names: list[str] | None, reader_labels: list[str] | None = None) -> SearchScope:
    """The collections this key may search, narrowed (never widened) by the names asked for."""
    allowed = Collection.objects.for_tenant(key.tenant_id)
    why_empty = ""
    if key.agent_id is not None:
        allowed = allowed.filter(agents=key.agent_id)
        why_empty = "this agent has no collections configured"
    if names:
        wanted = set(names)
        found = list(allowed.filter(name__in=wanted))
        missing = wanted - {c.name for c in found}
        if missing:
            raise UnknownCollections("no collection named " + ", ".join(sorted(missing)) + " is available to this key")
        collections = found
    else:
        collections = list(allowed)
        if not collections and not why_empty:
            why_empty = "this tenant has no collections"
    return SearchScope(
        tenant_id=key.tenant_id,
        collections=sorted(collections, key=lambda c: c.name),
        reader_labels=reader_labels or [],
        why_empty=why_empty if not collections else "",
    )
