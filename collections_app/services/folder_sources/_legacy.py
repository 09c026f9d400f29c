"""Legacy KB_COLLECTION_<NAME>_FOLDER variables, each bound once to the one collection of that name."""

from __future__ import annotations

import json
import logging
import re

from django.conf import settings

from collections_app.models import Collection
from collections_app.services.folder_sources._paths import FolderSourceError
from collections_app.services.ingest_options import ingest_options_validate
from infra.errors import InvalidIngestOptions
from ingestion.navigation_hubs import OPTION

logger = logging.getLogger("collections_app.services.folder_sources")  # the name it logged under before the split


def folder_source_name(collection_name: str) -> str:
    """The NAME of a legacy KB_COLLECTION_<NAME>_FOLDER: the key of settings.KB_COLLECTION_FOLDERS."""
    return re.sub(r"[^A-Z0-9]", "_", collection_name.upper())


def folder_env_name(name: str) -> str:
    return f"KB_COLLECTION_{name}_FOLDER"


def _adopt_legacy_options(collection: Collection, name: str) -> None:
    """A legacy folder's KB_COLLECTION_<NAME>_FOLDER_OPTIONS, copied onto the collection it is bound to: while the
    folder is the operator's variable, so are its options (none set: none)."""
    value = settings.KB_COLLECTION_FOLDER_OPTIONS.get(name, "")
    env = folder_env_name(name) + "_OPTIONS"
    try:
        options = ingest_options_validate(json.loads(value), scope="import") if value else {}
    except json.JSONDecodeError as exc:
        raise FolderSourceError(f'{env} is not JSON; set it to an object, e.g. {{"{OPTION}": true}}') from exc
    except InvalidIngestOptions as exc:
        raise FolderSourceError(f"{env}: {exc}") from exc
    if collection.folder_source_options != options:
        collection.folder_source_options = options
        collection.save(update_fields=["folder_source_options", "updated_at"])


def folder_sources_adopt_legacy() -> list[str]:
    """Bind every legacy KB_COLLECTION_<NAME>_FOLDER to the one collection of that name, once; what was done,
    one line each, for the operator. Refused (FolderSourceError) while a NAME matches collections of several
    tenants and none holds the folder yet: naming the tenant is the operator's decision."""
    lines: list[str] = []
    wanted = {name: value for name, value in settings.KB_COLLECTION_FOLDERS.items() if value}
    if not wanted:
        return lines  # the usual case: one settings read, no query
    # One read of the collections for every variable (a NAME is not a column: it is derived from the name).
    by_name: dict[str, list[Collection]] = {}
    for collection in Collection.objects.select_related("tenant").order_by("tenant__name"):
        by_name.setdefault(folder_source_name(collection.name), []).append(collection)
    for name, value in sorted(wanted.items()):
        env = folder_env_name(name)
        matching = by_name.get(name, [])
        bound = [c for c in matching if c.folder_source == value]
        if bound:  # adopted before; the variable names nothing else now (its options stay the operator's)
            _adopt_legacy_options(bound[0], name)
            continue
        if not matching:
            lines.append(f"{env} names no collection: ignored")
            continue
        if len(matching) > 1:
            tenants = ", ".join(c.tenant.name for c in matching)
            raise FolderSourceError(
                f"{env} names a collection that tenants {tenants} each have: refusing to guess which one it is. "
                "Move the folder under KB_FOLDER_SOURCES_ROOT/<tenant name>/, have that tenant's admin choose "
                "it on the collection's page, and remove the variable."
            )
        collection = matching[0]
        collection.folder_source = value
        collection.save(update_fields=["folder_source", "updated_at"])
        _adopt_legacy_options(collection, name)
        lines.append(
            f"{env} is now bound to collection {collection.name} of tenant {collection.tenant.name}, and to no "
            "other: another tenant's collection of that name never reads it. Move the folder under "
            f"KB_FOLDER_SOURCES_ROOT/{collection.tenant.name}/ and remove the variable when convenient."
        )
        logger.warning("%s", lines[-1])
    return lines
