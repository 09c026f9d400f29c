"""Where a folder source may be: relative to its tenant's folder under KB_FOLDER_SOURCES_ROOT, checked when it is
set and again at every sync (no absolute path, no `..`, no link out, no other tenant's folder). Its errors say why,
never where."""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath
from typing import Any

from django.conf import settings

from accounts.models import Role, Tenant, role_at_least
from collections_app.models import Collection
from collections_app.services.ingest_options import ingest_options_validate
from infra.errors import Forbidden, Invalid, InvalidIngestOptions
from infra.validation import text_problem


class FolderSourceError(RuntimeError):
    """A folder source cannot be synced; the message says why, never where."""


class FolderSourceNotConfigured(FolderSourceError):
    pass


class FolderSourceBusy(FolderSourceError):
    pass


class FolderSourceRefused(Invalid):
    field = "folder_source"


class FolderSourceForbidden(Forbidden):
    pass


def tenant_folder(tenant: Tenant) -> Path:
    """`<KB_FOLDER_SOURCES_ROOT>/<tenant name>`: where this tenant's folder sources may be, and nowhere else."""
    if not settings.KB_FOLDER_SOURCES_ROOT:
        raise FolderSourceNotConfigured(
            "folder sources are off on this server: the operator turns them on with KB_FOLDER_SOURCES_ROOT"
        )
    name = tenant.name
    if not name or name in (".", "..") or "/" in name or "\\" in name or "\x00" in name:
        raise FolderSourceError(f"tenant {name!r} cannot have a folder of its own: its name is not a folder name")
    return Path(settings.KB_FOLDER_SOURCES_ROOT) / name


def folder_source_set(*, collection: Collection, folder: str, role: Role | None) -> Collection:
    """Give the collection a folder source (`folder` relative to its tenant's folder; "" removes it).

    Who reads what a folder holds is the tenant admins' decision (`role` None: the operator)."""
    if role is not None and not role_at_least(role, Role.ADMIN):
        raise FolderSourceForbidden("a collection's folder source is set by an admin of its tenant")
    folder = folder.strip().replace("\\", "/")
    if folder:
        _folder_source_resolve(collection.tenant, folder)
    collection.folder_source = folder
    collection.save(update_fields=["folder_source", "updated_at"])
    return collection


def folder_source_options_set(*, collection: Collection, options: Any, role: Role | None) -> Collection:
    if role is not None and not role_at_least(role, Role.ADMIN):
        raise FolderSourceForbidden("a collection's folder source is set by an admin of its tenant")
    try:
        cleaned = ingest_options_validate(options or {}, scope="import")
    except InvalidIngestOptions as exc:
        raise FolderSourceRefused(f"folder source options: {exc}") from exc
    collection.folder_source_options = cleaned
    collection.save(update_fields=["folder_source_options", "updated_at"])
    return collection


def _folder_source_resolve(tenant: Tenant, folder: str) -> Path:
    """The real folder a relative folder source names, checked: inside the tenant's folder, readable."""
    shown = f"KB_FOLDER_SOURCES_ROOT/{tenant.name}/{folder}"
    problem = text_problem(folder)
    if problem:
        raise FolderSourceRefused(f"the folder {problem}")
    relative = PurePosixPath(folder)
    if relative.is_absolute() or ".." in relative.parts or re.match(r"^[A-Za-z]:", folder):
        raise FolderSourceRefused(
            f"give the folder relative to this tenant's folder (KB_FOLDER_SOURCES_ROOT/{tenant.name}/), "
            "without .. or a leading /"
        )
    base = tenant_folder(tenant)
    try:
        real_base = base.resolve(strict=True)
        real = (base / relative).resolve(strict=True)
    except (FileNotFoundError, RuntimeError) as exc:  # RuntimeError: a symlink loop
        raise FolderSourceRefused(f"{shown} is not a folder on this server") from exc
    if real != real_base and not real.is_relative_to(real_base):
        # A symbolic link out of the tenant's folder: another tenant's folder, or anywhere else on the server.
        raise FolderSourceRefused(f"{shown} leads outside this tenant's folder")
    if not real.is_dir() or not os.access(real, os.R_OK | os.X_OK):
        raise FolderSourceRefused(f"{shown} is not a readable folder on this server")
    return real


def folder_source_configured(collection: Collection) -> bool:
    return bool(collection.folder_source)


def folder_source_root(collection: Collection) -> Path:
    """The folder to sync, checked again now: a link inside it may have changed since it was set."""
    folder = collection.folder_source
    if not folder:
        raise FolderSourceNotConfigured(
            f"collection {collection.name} has no folder source: an admin of tenant {collection.tenant.name} "
            f"gives it one (a folder under KB_FOLDER_SOURCES_ROOT/{collection.tenant.name}/) on its admin page"
        )
    if Path(folder).is_absolute():  # bound from a legacy variable by the operator's own setting
        root = Path(folder)
        if not root.is_dir() or not os.access(root, os.R_OK | os.X_OK):
            raise FolderSourceError(
                f"the legacy folder source of {collection.name} (a KB_COLLECTION_<NAME>_FOLDER variable) is not a "
                "readable folder on this server"
            )
        return root
    try:
        return _folder_source_resolve(collection.tenant, folder)
    except FolderSourceRefused as exc:
        raise FolderSourceError(str(exc)) from exc


def folder_source_options(collection: Collection) -> dict[str, Any]:
    """The import options of the folder source (checked when set; checked again, as the rules may change)."""
    try:
        return ingest_options_validate(collection.folder_source_options or {}, scope="import")
    except InvalidIngestOptions as exc:
        raise FolderSourceError(f"folder source options of {collection.name}: {exc}") from exc
