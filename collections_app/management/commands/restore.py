"""manage.py restore PATH: an archive of `manage.py backup`, restored whole or not at all (services/restore.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from collections_app.services.backup import BackupFailed
from collections_app.services.restore import installation_restore


class Command(BaseCommand):
    help = (
        "Restore a backup archive: the whole archive is checked first, loaded into a new database beside this "
        "one and verified, then switched in at once (the replaced database is kept as <name>_before_restore)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="The archive `manage.py backup` wrote.")
        parser.add_argument(
            "--force", action="store_true", help="Replace what this installation holds (refused without it)."
        )

    def handle(self, *args: Any, path: str, force: bool, **options: Any) -> None:
        try:
            summary = installation_restore(path=Path(path), force=force, progress=self.stdout.write)
        except BackupFailed as exc:
            raise CommandError(str(exc)) from exc
        counts = summary.counts
        self.stdout.write(
            f"restored and verified: {counts.get('collections_app_document', 0)} documents, "
            f"{counts.get('collections_app_chunk', 0)} paragraph rows, {counts.get('collections_app_build', 0)} "
            f"builds, {counts.get('retrieval_goldenquestion', 0)} golden questions, {summary.files} originals"
        )
        if summary.replaced:
            self.stdout.write(
                f"the database it replaced is kept as {summary.replaced}: drop it once satisfied (DROP DATABASE), "
                "then `manage.py storage_cleanup` removes the originals only it named"
            )
        if summary.migrate:
            self.stdout.write("the archive was made by an older kbsite: run `manage.py migrate` before serving")
