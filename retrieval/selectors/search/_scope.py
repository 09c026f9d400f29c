from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import QuerySet

from accounts.delegation import UnknownReader as UnknownReader  # re-exported: callers catch it
from accounts.delegation import delegated_reader
from accounts.models import ApiKey, Reader
from collections_app.models import Collection
from collections_app.selectors import collections_for_key
from infra.errors import Invalid


class UnknownCollections(Invalid):
    pass


class ReaderRequired(Invalid):
    field = "reader"


@dataclass(frozen=True)
class SearchScope:
    """What one search may read: a tenant, its collections, and the labels the server gives its reader."""

    tenant_id: object
    collections: list[Collection]
    reader_labels: list[str] = field(default_factory=list)
    why_empty: str = ""
    reader: Reader | None = None


def resolve_scope(*, key: ApiKey, names: list[str] | None, reader: str | None = None) -> SearchScope:
    """The collections this key may search, narrowed (never widened) by the names asked for.

    A reader is named, never described: its labels are the ones registered for it in the key's tenant.
    A per-reader collection is not searched without one (its unlabelled paragraphs alone would be a
    quiet, partial answer), and an unknown reader, or one the key may not act for, reads nothing (403).
    """
    allowed = searchable_collections(key)
    why_empty = "this agent has no collections configured" if key.agent_id is not None else ""
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
    registered = _reader(key, reader)
    per_reader = sorted(c.name for c in collections if c.per_reader)
    if per_reader and registered is None:
        raise ReaderRequired(
            f"{', '.join(per_reader)} {'is' if len(per_reader) == 1 else 'are'} filtered per reader: "
            "name the registered reader this search is for in `reader`"
        )
    return SearchScope(
        tenant_id=key.tenant_id,
        collections=sorted(collections, key=lambda c: c.name),
        reader_labels=_labels_of(registered),
        why_empty=why_empty if not collections else "",
        reader=registered,
    )


def searchable_collections(key: ApiKey) -> QuerySet[Collection]:
    """What a key may search when it names no collection: the one rule every door shares."""
    return collections_for_key(key)


def collection_scope(*, collection: Collection, reader: Reader | None = None) -> SearchScope:
    """One collection, read as a registered reader (with the labels the server gives it) or as nobody."""
    return SearchScope(
        tenant_id=collection.tenant_id, collections=[collection], reader_labels=_labels_of(reader), reader=reader
    )


def _labels_of(reader: Reader | None) -> list[str]:
    # The only place a search gets labels: from the reader the server registered, never from a request.
    return list(reader.labels) if reader is not None else []


def registered_reader(*, key: ApiKey, name: str | None) -> Reader | None:
    """The reader a request names, registered in the key's tenant and delegated to the key (None: it names
    none); unknown or not the key's to act for: 403."""
    return _reader(key, name)


def _reader(key: ApiKey, name: str | None) -> Reader | None:
    return delegated_reader(key=key, name=name) if name is not None else None
