"""A sync: the collection brought in line with its folder (import, replace, remove), one Build recorded."""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

from django.conf import settings
from django.db import connection

from collections_app.models import Build, Chunk, Collection, Document, DocumentStatus
from collections_app.services.builds import build_record
from collections_app.services.documents import (
    FOLDER_SYNC,
    FileTooLarge,
    VersionConflict,
    document_create,
    document_delete,
    document_ingest,
    document_trash,
)
from collections_app.services.folder_sources._paths import (
    FolderSourceBusy,
    FolderSourceError,
    folder_source_options,
    folder_source_root,
)
from embedding import get_model
from infra.locks import advisory_try_lock, advisory_unlock
from ingestion import UnsupportedFile
from ingestion.formats import family_of
from ingestion.navigation_hubs import (
    JUDGED_BYTES,
    OPTION,
    is_readme,
    navigation_hub_reason,
    skipped_line,
)
from ingestion.paths import is_excluded, is_junk

Progress = Callable[[Sequence[str]], Iterable[str]]


class NotARegularFile(OSError):
    """A path of the folder that is no longer a regular file when it is opened (swapped for a pipe, say)."""


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


def folder_sync(*, collection: Collection, progress: Progress | None = None) -> FolderSync:
    """Bring the collection in line with its folder source and record one Build for the run."""
    root = folder_source_root(collection)
    options = folder_source_options(collection)
    with _sync_lock(collection):
        return _sync(collection, root, progress or (lambda items: items), options)


def _sync(collection: Collection, root: Path, progress: Progress, options: dict[str, Any]) -> FolderSync:
    run = _Run(collection, root, keep_hubs=bool(options.get(OPTION)))
    files, unaccepted, unnamed, unusual = _scan(root, collection.exclude_patterns)
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
    for relative, why in unusual:
        run.refuse(PurePosixPath(relative).name, f"{relative} was skipped: {why}")
    for relative in progress(files):
        _refuse_if_deleted(collection)
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
            with _open_regular(path) as content:
                outcome = document_create(
                    collection=self.collection,
                    filename=name,
                    content=content,
                    source_uri=self.prefix + relative,
                    queue=False,
                    # A changed file is its document's next version, as an editor's upload is (same id; the old
                    # paragraphs answer until the new are published, in one transaction). Several documents
                    # of one path (left by syncs before versions): a new one replaces them all once done.
                    replace=len(versions) <= 1,
                )
        except (UnsupportedFile, FileTooLarge, VersionConflict) as exc:
            self.refuse(name, f"{relative}: {exc}" if isinstance(exc, VersionConflict) else str(exc))
            return
        except OSError as exc:
            self.refuse(name, f"{relative} could not be opened ({type(exc).__name__})")
            return
        document = outcome.document
        if not outcome.created and not outcome.versioned:
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
        if outcome.created:
            self._drop(versions)

    def _navigation_hub(self, relative: str, path: Path) -> bool:
        """Skip a README.md that is mostly links and headings; the Build names it and why."""
        if not is_readme(relative):
            return False
        try:
            with _open_regular(path) as f:
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
        # A file gone from the folder (or now excluded) takes its document to the trash, restorable as an editor's
        # deletion is; the same file back in the folder is a new document.
        for relative in gone:
            for document in self.held[relative]:
                document_trash(document=document, by=FOLDER_SYNC)
        for document in self.strays.values():
            document_trash(document=document, by=FOLDER_SYNC)
        self.result.removed = gone + [d.filename for d in self.strays.values()]
        if self.result.removed:
            self.result.warnings.append(
                f"{len(self.result.removed)} document(s) moved to the trash, their file is gone or now excluded: "
                + _names(self.result.removed)
            )

    def _drop(self, versions: list[Document]) -> None:
        for old in versions:
            document_delete(document=old)

    def refuse(self, name: str, warning: str) -> None:
        self.result.refused.append(name)
        self.result.warnings.append(warning)


def _refuse_if_deleted(collection: Collection) -> None:
    """Stop a sync whose collection was deleted meanwhile: its files would be imported into a collection being
    removed, and the sync would say "imported" of what nobody can search (one query a file, beside its ingest)."""
    if not Collection.objects.filter(pk=collection.pk).exists():
        raise FolderSourceError(
            f"collection {collection.name} was deleted while it synced: the sync stopped, nothing more is imported"
        )


def _scan(root: Path, exclude_patterns: list[str]) -> tuple[list[str], list[str], list[str], list[tuple[str, str]]]:
    """Relative paths of the files to import, in order; those of types kbsite does not read; unusable names; and
    what is in the folder but no file to read (a pipe, a device, a link out of the folder or in a loop), with why."""
    files: list[str] = []
    unaccepted: list[str] = []
    unreadable: list[str] = []
    unusual: list[tuple[str, str]] = []
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
            why = _not_a_file(Path(directory) / filename, resolved_root)
            if why:
                unusual.append((relative, why))
                continue
            if not family_of(filename) or family_of(filename) == "archive":
                unaccepted.append(relative)
                continue
            files.append(relative)
    return files, unaccepted, unreadable, unusual


def _not_a_file(path: Path, resolved_root: Path) -> str | None:
    """Why `path` is not a file of the folder to read (None: it is). A pipe would block the sync for ever on open."""
    try:
        if path.is_symlink() and not path.resolve().is_relative_to(resolved_root):
            return "it is a link leading outside the folder"
        mode = path.stat().st_mode
    except RuntimeError:  # a link loop (Path.resolve)
        return "it is a link in a loop"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "it is a link in a loop"
        return None  # gone, or a link to nothing: opening it says why, and the last good version stays
    if not stat.S_ISREG(mode):
        return "it is not a regular file (a pipe, a socket or a device)"
    return None


@contextmanager
def _open_regular(path: Path) -> Iterator[BinaryIO]:
    """`path` opened for reading if it is still a regular file: it may have been swapped for a pipe since the scan,
    and opening a pipe waits for a writer (O_NONBLOCK does not; it changes nothing for a regular file)."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise NotARegularFile(errno.EINVAL, "not a regular file")
        file = os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise
    with file:
        yield file


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
    with _open_regular(path) as f:
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
