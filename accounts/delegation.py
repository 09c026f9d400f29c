"""Reader delegation: the registered reader a key names, if the key may act for it.

Which labels a reader holds is the server's (Reader.labels); which readers a key may act for is an admin's,
set on the key (ApiKey.any_reader, ApiKey.readers). Every door that reads as a reader (search, the corpus map,
citations, MCP) resolves the name it was sent through `delegated_reader`, so none of them can forget the rule.
"""

from __future__ import annotations

from accounts.models import ApiKey, Reader
from infra.errors import Forbidden

HOW_TO_DELEGATE = (
    "a tenant admin sets the readers a key may act for (manage.py create_api_key --readers, or the key's page "
    "in the admin)"
)


class ReaderNotDelegated(Forbidden):
    """The key may not act for the reader it names."""


class UnknownReader(Forbidden):
    """The name is no registered reader of the key's tenant: it may read nothing as that reader."""


def delegated_reader(*, key: ApiKey, name: str) -> Reader:
    """The reader `name` in the key's tenant, when the key may act for it; else 403.

    A key restricted to some readers is told "may not act for" whether the name is registered or not: it may
    not learn which readers exist by asking. A key that acts for any reader is told when a name is unknown.
    """
    readers = Reader.objects.for_tenant(key.tenant_id)
    if not key.any_reader:
        readers = readers.filter(delegated_keys=key)
    found = readers.filter(name=name).first()
    if found is not None:
        return found
    if not key.any_reader:
        raise ReaderNotDelegated(f"this key may not act for reader {name!r}: {HOW_TO_DELEGATE}")
    # The same answer whether the name exists in another tenant or nowhere.
    raise UnknownReader(f"no reader named {name!r} is registered in this tenant")


def delegation_label(key: ApiKey) -> str:
    """The readers a key acts for, as the admin list shows them: "any", "none" or their names."""
    if key.any_reader:
        return "any"
    names = sorted(reader.name for reader in key.readers.all())  # prefetched by the admin's list
    return ", ".join(names) if names else "none"
