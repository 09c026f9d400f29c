"""Find stored files that no document names, and remove them (an operator's command); prune retired paragraphs
older than KB_RETIRED_DAYS (services/retired_paragraphs.py).

Uploads write their file inside the transaction that creates the document and remove it if that
transaction fails (services/documents/_upload.py), so new orphans come only from a process killed between the
write and the commit, or from versions before that. A file younger than `--min-age` is left alone: it may
belong to an upload whose transaction has not committed yet.

Prints counts; `-v 2` also lists the files by their path relative to the storage root (this is an
operator's command: the output is never shown to a tenant).
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from collections_app.models import Document, DocumentVersion
from collections_app.services.collection_file import collection_files_stored
from collections_app.services.documents import trash_purge_expired
from collections_app.services.retired_paragraphs import retired_paragraphs_prune


class Command(BaseCommand):
    help = "Remove stored files no document references (orphans of failed or interrupted uploads)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dry-run", action="store_true", help="Count and list, remove nothing.")
        parser.add_argument(
            "--min-age",
            type=int,
            default=3600,
            help="Seconds since a file was last written before it may be removed (default 3600): an upload in "
            "flight has written its file before its document row commits.",
        )

    def handle(self, *args: Any, dry_run: bool, min_age: int, **options: Any) -> None:
        if not dry_run:
            # The cluster prunes them hourly; an installation that runs no cluster prunes them here.
            pruned = retired_paragraphs_prune()
            days = settings.KB_RETIRED_DAYS
            self.stdout.write(f"{pruned} retired paragraph(s) older than {days} days pruned (KB_RETIRED_DAYS).")
            purged = trash_purge_expired()
            self.stdout.write(
                f"{purged} document(s) in the trash longer than {settings.KB_TRASH_DAYS} days purged (KB_TRASH_DAYS)."
            )
        root = Path(settings.MEDIA_ROOT)
        if not root.is_dir():
            self.stdout.write("Nothing stored yet: the storage folder does not exist.")
            return
        # Read before listing: a file written after this query is younger than the age threshold, so an
        # upload committing meanwhile is never taken for an orphan.
        # Documents in the trash included: their originals stay until they are purged.
        referenced = set(Document.all_objects.exclude(file="").values_list("file", flat=True).iterator())
        # Older versions' originals, kept for download until their document is deleted.
        referenced |= set(DocumentVersion.objects.exclude(file="").values_list("file", flat=True).iterator())
        # Finished exports (the admin downloads them) and imports not yet run.
        referenced |= collection_files_stored()
        cutoff = time.time() - min_age
        checked = kept_young = 0
        orphans: list[tuple[str, int]] = []
        for folder, _dirs, files in os.walk(root):
            for name in files:
                path = Path(folder) / name
                relative = path.relative_to(root).as_posix()
                checked += 1
                if relative in referenced:
                    continue
                stat = path.lstat()
                if stat.st_mtime > cutoff:
                    kept_young += 1
                    continue
                orphans.append((relative, stat.st_size))
        removed_bytes = sum(size for _, size in orphans)
        for relative, _size in orphans:
            if options["verbosity"] >= 2:
                self.stdout.write(f"  {relative}")
            if not dry_run:
                (root / relative).unlink(missing_ok=True)
        if not dry_run:
            self._remove_empty_folders(root)
        verb = "would be removed" if dry_run else "removed"
        self.stdout.write(
            f"{checked} stored file(s) checked: {checked - len(orphans) - kept_young} referenced by a document "
            "or a collection file, "
            f"{len(orphans)} orphan(s) {verb} ({removed_bytes} bytes), "
            f"{kept_young} unreferenced file(s) younger than {min_age} s kept."
        )

    @staticmethod
    def _remove_empty_folders(root: Path) -> None:
        # Deepest first, so a folder emptied by removing its empty sub-folders goes too.
        for folder, _dirs, files in os.walk(root, topdown=False):
            path = Path(folder)
            if path != root and not files:
                # Not empty (a sub-folder holds files), or written into meanwhile: kept.
                with contextlib.suppress(OSError):
                    path.rmdir()
