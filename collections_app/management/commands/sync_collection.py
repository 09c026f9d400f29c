"""Sync a collection with its folder source, or (re)make the sync schedules. Legacy KB_COLLECTION_<NAME>_FOLDER
variables are bound to their one collection first (or refused while two tenants have a collection of that name)."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from collections_app.models import Collection
from collections_app.services.folder_sources import (
    FolderSourceError,
    folder_sources_adopt_legacy,
    folder_sync,
    folder_sync_schedules_update,
)


class Command(BaseCommand):
    help = (
        "Import new and changed files of a collection's folder source, remove documents whose file is gone, "
        "and record a Build. The folder is set by an admin of the collection's tenant, under "
        "KB_FOLDER_SOURCES_ROOT/<tenant name>/. "
        "With --schedule: make one django-q2 schedule per folder source (every KB_SYNC_EVERY_MINUTES)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", nargs="?", help="the collection's name")
        parser.add_argument("--tenant", help="the tenant's name, when several tenants have a collection of that name")
        parser.add_argument(
            "--schedule",
            action="store_true",
            help="create, update or remove the django-q2 sync schedules per KB_SYNC_EVERY_MINUTES, then exit",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            for line in folder_sources_adopt_legacy():
                self.stdout.write(self.style.WARNING(line))
        except FolderSourceError as exc:
            raise CommandError(str(exc)) from exc
        if options["schedule"]:
            for line in folder_sync_schedules_update():
                self.stdout.write(line)
            return
        if not options["name"]:
            raise CommandError("name the collection to sync (or pass --schedule)")
        collection = self._collection(options["name"], options["tenant"])
        bar = {"disable": None, "file": sys.stderr, "unit": "file", "desc": f"sync {collection.name}"}
        try:
            result = folder_sync(collection=collection, progress=lambda files: tqdm(files, **bar))
        except FolderSourceError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"{collection.name}: {len(result.imported)} imported, {len(result.replaced)} replaced, "
            f"{len(result.removed)} removed, {result.unchanged} unchanged; {result.passages} paragraph(s) built"
        )
        for warning in result.warnings:
            self.stdout.write(f"  {warning}")
        if result.refused:
            self.stdout.write(self.style.WARNING(f"could not be read: {', '.join(result.refused)}"))

    def _collection(self, name: str, tenant: str | None) -> Collection:
        collections = Collection.objects.select_related("tenant").filter(name=name)
        if tenant:
            collections = collections.filter(tenant__name=tenant)
        found = list(collections)
        if not found:
            raise CommandError(f"no collection named {name}" + (f" in tenant {tenant}" if tenant else ""))
        if len(found) > 1:
            tenants = ", ".join(sorted(c.tenant.name for c in found))
            raise CommandError(f"several tenants have a collection named {name} ({tenants}): pass --tenant")
        return found[0]
