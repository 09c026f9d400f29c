"""Folder sources: a collection mirrors a folder on the server, chosen by its tenant's admins.

A folder source belongs to one collection of one tenant, never to a name. The operator sets
KB_FOLDER_SOURCES_ROOT and puts (or mounts) each tenant's folders under `<root>/<tenant name>/`; a
tenant's admin then gives a collection one of them, relative to that folder (`folder_source_set`). A path
that is absolute, climbs out (`..`), leads out through a symbolic link, or lands in another tenant's folder
is refused, when it is set and again at every sync. The API cannot set or see it, and no answer, build
record, warning or log line carries it (ARCHITECTURE.md, "Paths never travel"): files are known by their
path relative to the folder, documents by `folder://<collection name>/<relative path>`.

Legacy: KB_COLLECTION_<NAME>_FOLDER named a folder by the collection's name alone, so a second tenant that
made a collection of that name read the first one's folder. `folder_sources_adopt_legacy` binds each such
variable once to the one collection of that name (saying which tenant), and refuses while two tenants have
one; after that the variable is never read for any other collection.

A sync (`folder_sync`) imports new files, replaces changed ones (same path, new content: the
document's next version, services/documents/_versions.py — the document keeps its id and its
old paragraphs answer until the new ones replace them in one transaction; a version that
cannot be read leaves the last good one in place), removes documents whose file is gone or
now excluded, and records one Build.

Ingestion runs in the sync itself, file after file, rather than through the queue: the
sync's Build can then say exactly how many paragraphs it built and which files could not
be read.
A scheduled sync is one django-q2 task, so it still runs off the web process.

`Collection.folder_source_options` holds the options of the import, as a .zip upload takes them:
`{"keep_navigation_readmes": true}` indexes README.md files that are navigation hubs (mostly links and
headings), which a sync otherwise skips, naming each one and why in its Build (ingestion/navigation_hubs.py).
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

from accounts.models import Role, Tenant, role_at_least
from collections_app.exceptions import Forbidden, Invalid, InvalidIngestOptions
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
from collections_app.services.documents import (
    FileTooLarge,
    VersionConflict,
    document_create,
    document_delete,
    document_ingest,
)
from collections_app.services.ingest_options import ingest_options_validate
from collections_app.sql import advisory_try_lock, advisory_unlock
from collections_app.validation import text_problem
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
    """The NAME of a legacy KB_COLLECTION_<NAME>_FOLDER: the key of settings.KB_COLLECTION_FOLDERS."""
    return re.sub(r"[^A-Z0-9]", "_", collection_name.upper())


def folder_env_name(name: str) -> str:
    return f"KB_COLLECTION_{name}_FOLDER"


class FolderSourceRefused(Invalid):
    field = "folder_source"


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


class FolderSourceForbidden(Forbidden):
    pass


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

    done: list[str] = folder_sources_adopt_legacy()
    minutes = settings.KB_SYNC_EVERY_MINUTES
    wanted = {str(c.pk): c for c in Collection.objects.select_related("tenant").exclude(folder_source="")}
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
