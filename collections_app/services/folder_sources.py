"""Folder sources: a collection mirrors a folder on the server, set by the deployment only.

`KB_COLLECTION_<NAME>_FOLDER` in the environment (NAME: the collection's name upper-cased,
anything but A-Z and 0-9 turned into `_`; settings.py collects them into `KB_COLLECTION_FOLDERS` at
start-up) names the folder; the API cannot set or see it, and no answer, build record, warning or log
line carries it (ARCHITECTURE.md, "Paths never travel"): files are known by their path relative to the
folder, documents by `folder://<collection name>/<relative path>`.

A sync (`folder_sync`) imports new files, replaces changed ones (same path, new content:
the new document is read first and the old one deleted only once the new one is `done`,
so readers never see the file vanish; a version that cannot be read leaves the last good
one in place), removes documents whose file is gone or now excluded, and records one Build.

Ingestion runs in the sync itself, file after file, rather than through the queue: the
sync's Build can then say exactly how many paragraphs it built and which files could not
be read, and a changed file's old version is deleted only after its successor is done.
A scheduled sync is one django-q2 task, so it still runs off the web process.

`KB_COLLECTION_<NAME>_FOLDER_OPTIONS` (a JSON object, set by the deployment too) holds the options of
the import, as a .zip upload takes them: `{"keep_navigation_readmes": true}` indexes README.md files
that are navigation hubs (mostly links and headings), which a sync otherwise skips, naming each one
and why in its Build (ingestion/navigation_hubs.py).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from django.conf import settings
from django.db import connection

from collections_app.exceptions import InvalidIngestOptions
from collections_app.ingestion import UnsupportedFile
from collections_app.ingestion.formats import family_of
from collections_app.ingestion.navigation_hubs import (
    JUDGED_BYTES,
    OPTION,
    is_readme,
    navigation_hub_reason,
    skipped_line,
)
from collections_app.ingestion.paths import is_excluded, is_junk
from collections_app.models import Build, Chunk, Collection, Document, DocumentStatus
from collections_app.services.builds import build_record
from collections_app.services.documents import FileTooLarge, document_create, document_delete, document_ingest
from collections_app.services.ingest_options import ingest_options_validate
from collections_app.sql import advisory_try_lock, advisory_unlock
from embedding import get_model

logger = logging.getLogger(__name__)

SCHEDULE_PREFIX = "folder sync "


class FolderSourceError(RuntimeError):
    """A folder source cannot be synced; the message says why, never where."""


class FolderSourceNotConfigured(FolderSourceError):
    pass


class FolderSourceBusy(FolderSourceError):
    pass


Progress = Callable[[Sequence[str]], Iterable[str]]


@dataclass
class FolderSync:
    """What one sync did, by relative path (never a server path)."""

    imported: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0
    refused: list[str] = field(default_factory=list)  # file names, as in the Build
    warnings: list[str] = field(default_factory=list)
    hubs: list[str] = field(default_factory=list)  # README navigation hubs skipped (their reasons are in warnings)
    passages: int = 0
    build: Build | None = None


def folder_source_name(collection_name: str) -> str:
    """The NAME of KB_COLLECTION_<NAME>_FOLDER: the key of settings.KB_COLLECTION_FOLDERS (and _FOLDER_OPTIONS)."""
    return re.sub(r"[^A-Z0-9]", "_", collection_name.upper())


def folder_env_name(collection_name: str) -> str:
    return f"KB_COLLECTION_{folder_source_name(collection_name)}_FOLDER"


def folder_source_configured(collection: Collection) -> bool:
    return bool(settings.KB_COLLECTION_FOLDERS.get(folder_source_name(collection.name), ""))


def folder_source_root(collection: Collection) -> Path:
    env = folder_env_name(collection.name)
    value = settings.KB_COLLECTION_FOLDERS.get(folder_source_name(collection.name), "")
    if not value:
        raise FolderSourceNotConfigured(
            f"collection {collection.name} has no folder source: the deployment sets one with {env} in the environment"
        )
    root = Path(value)
    if not root.is_dir() or not os.access(root, os.R_OK | os.X_OK):
        raise FolderSourceError(f"the folder named by {env} is not a readable folder on this server")
    return root


def folder_source_options(collection: Collection) -> dict[str, Any]:
    """The import options the deployment set for the folder source (KB_COLLECTION_<NAME>_FOLDER_OPTIONS)."""
    env = folder_env_name(collection.name) + "_OPTIONS"
    value = settings.KB_COLLECTION_FOLDER_OPTIONS.get(folder_source_name(collection.name), "")
    if not value:
        return {}
    try:
        return ingest_options_validate(json.loads(value), scope="import")
    except json.JSONDecodeError as exc:
        raise FolderSourceError(f'{env} is not JSON; set it to an object, e.g. {{"{OPTION}": true}}') from exc
    except InvalidIngestOptions as exc:
        raise FolderSourceError(f"{env}: {exc}") from exc


def folder_sync(*, collection: Collection, progress: Progress | None = None) -> FolderSync:
    """Bring the collection in line with its folder source and record one Build for the run."""
    root = folder_source_root(collection)
    options = folder_source_options(collection)
    with _sync_lock(collection):
        return _sync(collection, root, progress or (lambda items: items), options)


def _sync(collection: Collection, root: Path, progress: Progress, options: dict[str, Any]) -> FolderSync:
    run = _Run(collection, root, keep_hubs=bool(options.get(OPTION)))
    files, unaccepted, unnamed = _scan(root, collection.exclude_patterns)
    if not files and (run.held or run.strays):
        # An empty folder is far more often a missing mount than a deliberate wipe, and a build
        # that would replace a collection with nothing is refused (ARCHITECTURE.md, contract 1).
        count = sum(len(d) for d in run.held.values()) + len(run.strays)
        raise FolderSourceError(
            f"the folder source of {collection.name} holds no file to import; refusing to remove its "
            f"{count} document(s) (is the folder mounted?)"
        )
    result = run.result
    if unaccepted:
        result.warnings.append(
            f"{len(unaccepted)} file(s) of types kbsite does not read were skipped: {_names(unaccepted)}"
        )
    for relative in unnamed:
        run.refuse(PurePosixPath(relative).name, f"{relative}: its name is not valid UTF-8 or is too long")
    for relative in progress(files):
        run.sync_file(relative)
    run.remove_gone(set(files) - set(result.hubs))  # a README held from before that is now a hub goes

    model = get_model(collection.embedding_alias)
    result.build = build_record(
        collection=collection,
        document=None,
        model=model.alias,
        dims=model.dims,
        passages=result.passages,
        refused=result.refused,
        built_from=f"folder source {collection.name}",
        unlabelled=result.passages,  # folder files carry no reader labels
        warnings=result.warnings,
    )
    return result


class _Run:
    """One sync: what the collection holds from its folder, and what this run did."""

    def __init__(self, collection: Collection, root: Path, *, keep_hubs: bool = False) -> None:
        self.collection, self.root, self.keep_hubs = collection, root, keep_hubs
        self.prefix = f"folder://{collection.name}/"
        self.result = FolderSync()
        # Versions held per relative path (more than one while a changed file's new version cannot be read).
        self.held: dict[str, list[Document]] = {}
        # Folder documents under another name: the collection was renamed since they were imported.
        self.strays: dict[str, Document] = {}
        folder_documents = Document.objects.filter(
            collection=collection, parent=None, source_uri__startswith="folder://"
        ).order_by("created_at")
        for document in folder_documents:
            if document.source_uri.startswith(self.prefix):
                self.held.setdefault(document.source_uri.removeprefix(self.prefix), []).append(document)
            else:
                self.strays[str(document.pk)] = document

    def sync_file(self, relative: str) -> None:
        result, versions = self.result, self.held.get(relative, [])
        name = PurePosixPath(relative).name
        path = self.root / relative
        if not self.keep_hubs and self._navigation_hub(relative, path):
            return
        try:
            content_hash = _hash(path)
        except FileTooLarge:
            self.refuse(name, f"{relative} is larger than the upload limit of {settings.KB_MAX_UPLOAD_BYTES} bytes")
            return
        except OSError as exc:  # permissions, vanished meanwhile: the last good version stays
            self.refuse(name, f"{relative} could not be opened ({type(exc).__name__})")
            return
        if any(v.content_hash == content_hash for v in versions):
            result.unchanged += 1
            return
        try:
            with path.open("rb") as content:
                outcome = document_create(
                    collection=self.collection,
                    filename=name,
                    content=content,
                    source_uri=self.prefix + relative,
                    queue=False,
                )
        except (UnsupportedFile, FileTooLarge) as exc:
            self.refuse(name, str(exc))
            return
        except OSError as exc:
            self.refuse(name, f"{relative} could not be opened ({type(exc).__name__})")
            return
        document = outcome.document
        if not outcome.created:
            self._already_held(relative, document, versions)
            return
        document_ingest(document_id=str(document.pk))
        document.refresh_from_db(fields=["status"])
        if document.status != DocumentStatus.DONE:
            kept = " (its previous version stays searchable)" if versions else ""
            self.refuse(name, f"{relative} could not be read{kept}")
            return
        result.passages += Chunk.objects.filter(document=document).count()
        (result.replaced if versions else result.imported).append(relative)
        self._drop(versions)

    def _navigation_hub(self, relative: str, path: Path) -> bool:
        """Skip a README.md that is mostly links and headings; the Build names it and why."""
        if not is_readme(relative):
            return False
        try:
            with path.open("rb") as f:
                head = f.read(JUDGED_BYTES)
        except OSError:
            return False  # importing it opens it again and says what went wrong
        reason = navigation_hub_reason(relative, head)
        if reason is None:
            return False
        self.result.hubs.append(relative)
        self.result.warnings.append(skipped_line(relative, reason))
        return True

    def _already_held(self, relative: str, document: Document, versions: list[Document]) -> None:
        if self.strays.pop(str(document.pk), None) is not None:
            # Imported before the collection was renamed: it keeps its paragraphs and takes the new name.
            Document.objects.filter(pk=document.pk).update(source_uri=self.prefix + relative)
            self.result.unchanged += 1
        else:
            # The same content is held already, under another path or uploaded by hand: it stays one document.
            self.result.warnings.append(f"{relative} has the same content as {document.filename}, already held")
        if document.status == DocumentStatus.DONE:
            self._drop(versions)

    def remove_gone(self, present: set[str]) -> None:
        gone = sorted(set(self.held) - present)
        for relative in gone:
            self._drop(self.held[relative])
        for document in self.strays.values():
            document_delete(document=document)
        self.result.removed = gone + [d.filename for d in self.strays.values()]
        if self.result.removed:
            self.result.warnings.append(
                f"{len(self.result.removed)} document(s) removed, their file is gone or now excluded: "
                + _names(self.result.removed)
            )

    def _drop(self, versions: list[Document]) -> None:
        for old in versions:
            document_delete(document=old)

    def refuse(self, name: str, warning: str) -> None:
        self.result.refused.append(name)
        self.result.warnings.append(warning)


def _scan(root: Path, exclude_patterns: list[str]) -> tuple[list[str], list[str], list[str]]:
    """Relative paths of the files to import, in order; those of types kbsite does not read; unusable names."""
    files: list[str] = []
    unaccepted: list[str] = []
    unreadable: list[str] = []
    resolved_root = root.resolve()
    for directory, folders, names in os.walk(root, followlinks=False):
        base = PurePosixPath(Path(directory).relative_to(root).as_posix())
        folders[:] = sorted(f for f in folders if not is_junk(f))
        for filename in sorted(names):
            relative = str(base / filename) if str(base) != "." else filename
            if is_junk(relative) or is_excluded(relative, exclude_patterns):
                continue
            if not _storable(relative):
                unreadable.append(relative.encode("utf-8", "replace").decode("utf-8"))
                continue
            path = Path(directory) / filename
            if path.is_symlink() and not path.resolve().is_relative_to(resolved_root):
                continue  # a link out of the folder is not part of it
            if not family_of(filename) or family_of(filename) == "archive":
                unaccepted.append(relative)
                continue
            files.append(relative)
    return files, unaccepted, unreadable


def _storable(relative: str) -> bool:
    """A name the database can hold: valid UTF-8 (not bytes smuggled in by the file system), not too long."""
    try:
        relative.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return len(relative) <= 900 and len(PurePosixPath(relative).name) <= 255


def _hash(path: Path) -> str:
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as f:
        while chunk := f.read(1024 * 1024):
            size += len(chunk)
            if size > settings.KB_MAX_UPLOAD_BYTES:
                raise FileTooLarge(path.name)
            digest.update(chunk)
    return digest.hexdigest()


def _names(names: list[str], shown: int = 20) -> str:
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


@contextmanager
def _sync_lock(collection: Collection) -> Iterator[None]:
    """One sync of a collection at a time (a scheduled one and a manual one could meet)."""
    key = collection.pk.int >> 65  # a positive bigint from the UUID
    with connection.cursor() as cursor:
        if not advisory_try_lock(cursor, key):
            raise FolderSourceBusy(f"a sync of {collection.name} is already running")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            advisory_unlock(cursor, key)


# --- schedules ----------------------------------------------------------------------------------------------------


def folder_sync_schedules_update() -> list[str]:
    """Make (or remove) one django-q2 schedule per collection with a folder source, per KB_SYNC_EVERY_MINUTES.

    Returns what it did, one line per collection, for the operator.
    """
    from django_q.models import Schedule

    minutes = settings.KB_SYNC_EVERY_MINUTES
    wanted = {str(c.pk): c for c in Collection.objects.select_related("tenant") if folder_source_configured(c)}
    done: list[str] = []
    for schedule in Schedule.objects.filter(name__startswith=SCHEDULE_PREFIX):
        if minutes <= 0 or schedule.name.removeprefix(SCHEDULE_PREFIX) not in wanted:
            schedule.delete()
            done.append(f"removed schedule {schedule.name}")
    if minutes <= 0:
        return [*done, "KB_SYNC_EVERY_MINUTES is not set: folder sources are synced only by hand"]
    for collection_id, collection in wanted.items():
        Schedule.objects.update_or_create(
            name=SCHEDULE_PREFIX + collection_id,
            defaults={
                "func": "collections_app.tasks.sync_folder_source",
                "args": repr((collection_id,)),
                "schedule_type": Schedule.MINUTES,
                "minutes": minutes,
                "repeats": -1,
            },
        )
        done.append(f"{collection.tenant.name}/{collection.name}: synced every {minutes} minute(s)")
    return done
