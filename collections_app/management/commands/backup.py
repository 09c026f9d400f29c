"""manage.py backup PATH: one archive of the whole installation (services/backup.py), safe while it serves."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from collections_app.services.backup import BackupFailed, installation_backup


class Command(BaseCommand):
    help = "Write one archive: a consistent PostgreSQL dump, the stored originals and a manifest (counts, checksums)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="Where to write the archive (a .tar file; replaced if it exists).")

    def handle(self, *args: Any, path: str, **options: Any) -> None:
        try:
            summary = installation_backup(path=Path(path))
        except BackupFailed as exc:
            raise CommandError(str(exc)) from exc
        counts = summary.counts
        self.stdout.write(
            f"backup written: {counts.get('collections_app_document', 0)} documents, "
            f"{counts.get('collections_app_chunk', 0)} paragraph rows, {counts.get('collections_app_build', 0)} "
            f"builds, {counts.get('retrieval_goldenquestion', 0)} golden questions, {summary.files} originals, "
            f"{summary.bytes} bytes"
        )
