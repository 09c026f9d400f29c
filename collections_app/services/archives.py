"""Zip imports: each member of an uploaded .zip becomes a document of its own.

The archive's central directory is checked before anything is extracted: too many
entries, too many bytes once unpacked, a member (or the whole zip) compressed past any
honest ratio, entries that overlap, or more than the disk has free → the whole zip is
refused (ArchiveRefused / InsufficientStorage). Members are then streamed one by one
into `document_create`, each read capped at the size the directory declared, so a
lying directory cannot make us write more than we checked.

Members we do not import are named in the answer's warnings: over the upload
limit, encrypted, of a type kbsite does not read, nested archives, links, and those
matching the collection's exclude patterns. Folders, dotfiles and macOS `__MACOSX`
forks are skipped without a word: nobody meant them as documents. A README.md that is a
navigation hub (mostly links and headings, ingestion/navigation_hubs.py) is skipped unless
the import's option `keep_navigation_readmes` is set; the answer and the Build name it and why.

An import writes one Build that sums it up (see docs/DECISIONS.md): `built_from`
"upload by <who>", the paragraphs of the members it created, and `refused` = the
names of members that could not be imported or read. Member ingestion runs in the
queue as for any upload, so that Build is recorded by a task once every member has
settled; each member also gets its own per-document Build, as any upload does.
"""

from __future__ import annotations

import shutil
import stat
import zipfile
import zlib
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from collections_app.models import Build, Chunk, Collection, Document, DocumentStatus
from collections_app.services.builds import build_record
from collections_app.services.documents import FileTooLarge, document_create, stored_files_remove
from embedding import get_model
from infra.errors import DomainError, Invalid
from ingestion import UnsupportedFile, check_upload
from ingestion.formats import extension_of, family_of
from ingestion.navigation_hubs import (
    JUDGED_BYTES,
    OPTION,
    is_readme,
    navigation_hub_reason,
    skipped_line,
)
from ingestion.paths import is_excluded, is_junk

# Free disk kept beyond what an import needs, so one import never fills the disk.
_DISK_MARGIN = 256 * 1024 * 1024
# How long the summary Build waits for members still being read (attempts × delay).
_SUMMARY_DELAY = timedelta(seconds=30)
_SUMMARY_ATTEMPTS = 240
# Document.source_uri and Document.filename widths.
_MAX_SOURCE_URI, _MAX_FILENAME = 1000, 255


class ArchiveRefused(Invalid):
    """The zip is refused before anything is extracted; the message says why."""

    field = "file"


class InsufficientStorage(DomainError, RuntimeError):
    """The server's disk has not room enough for what the zip unpacks to."""

    meaning = "no_storage"


@dataclass(frozen=True)
class ArchiveMember:
    path: str  # inside the zip
    document: Document
    created: bool


@dataclass
class ArchiveImport:
    members: list[ArchiveMember] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    hubs: list[str] = field(default_factory=list)  # README navigation hubs skipped, with why (also in warnings)

    @property
    def created(self) -> bool:
        return any(m.created for m in self.members)


def archive_import(
    *,
    collection: Collection,
    filename: str,
    content: BinaryIO,
    uploaded_by: str = "",
    source_uri: str = "",
    options: dict[str, Any] | None = None,
) -> ArchiveImport:
    """Import each member of a .zip as a document; refuse the zip whole if it looks like a bomb.

    `options`: the import's cleaned options (ingest_options_validate(..., scope="import")).
    """
    keep_hubs = bool((options or {}).get(OPTION))
    zipname = PurePosixPath(filename.replace("\\", "/")).name
    content.seek(0)
    check_upload(zipname, content.read(8))  # a file named .zip that is not one: UnsupportedFile, what it is
    size = content.seek(0, 2)
    if size > settings.KB_MAX_UPLOAD_BYTES:
        raise FileTooLarge(f"{zipname} is larger than the upload limit of {settings.KB_MAX_UPLOAD_BYTES} bytes")
    content.seek(0)
    try:
        archive = zipfile.ZipFile(content)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError) as exc:
        raise ArchiveRefused(f"{zipname} is not a readable zip archive (it may be truncated)") from exc
    with archive:
        infos = archive.infolist()
        _refuse_bombs(zipname, infos, size)
        result = ArchiveImport()
        planned = _plan(infos, collection.exclude_patterns, result)
        _check_disk(sum(info.file_size for info in planned))
        if not planned:
            raise _nothing_imported(zipname, result)
        base = source_uri.rstrip("/") if source_uri else f"upload://{zipname}"
        built_from = f"upload by {uploaded_by}" if uploaded_by else "upload"
        stored: list[str] = []
        try:
            with transaction.atomic():
                for info in planned:
                    if not keep_hubs and _skip_navigation_hub(archive, info, result):
                        continue
                    _import_member(archive, info, collection, base, uploaded_by, result, stored)
                if not result.members:
                    raise _nothing_imported(zipname, result)
                _record_build(collection, result, built_from)
        except BaseException:
            _remove_stored(stored)  # the rows rolled back; their files must go too
            raise
    return result


def _nothing_imported(zipname: str, result: ArchiveImport) -> ArchiveRefused:
    reasons = "; ".join(result.warnings) or "it holds no files"
    return ArchiveRefused(f"nothing in {zipname} could be imported: {reasons}")


def _refuse_bombs(zipname: str, infos: list[zipfile.ZipInfo], archive_size: int) -> None:
    """Judge the zip by its central directory alone, before a byte is extracted."""
    if len(infos) > settings.KB_MAX_ZIP_MEMBERS:
        raise ArchiveRefused(
            f"{zipname} holds {len(infos)} entries; at most {settings.KB_MAX_ZIP_MEMBERS} are imported from one zip"
        )
    total = sum(info.file_size for info in infos)
    if total > settings.KB_MAX_ZIP_BYTES:
        raise ArchiveRefused(
            f"{zipname} would unpack to {total} bytes, over the limit of {settings.KB_MAX_ZIP_BYTES} bytes "
            "for one zip: refused as a possible zip bomb; split it into smaller zips"
        )
    # Every member is judged by its ratio, small ones too: forty members of just under 1 MiB each once made
    # 65 KB of zip into 40 MiB of documents. An honest text needs kilobytes of one repeated line to pass 100:1.
    ratio = settings.KB_MAX_ZIP_RATIO
    for info in infos:
        if info.file_size > ratio * max(info.compress_size, 0):
            raise ArchiveRefused(
                f"{zipname} is refused as a zip bomb: its member {info.filename} is compressed more than "
                f"{ratio} times ({info.compress_size} bytes unpacking to {info.file_size})"
            )
    # ... and the whole zip (unpacked total / its size). The per-member rule implies it today; it is kept so that
    # loosening that rule (exempting tiny members, say) can never loosen the bound on the whole.
    if total > ratio * archive_size:
        raise ArchiveRefused(
            f"{zipname} is refused as a zip bomb: its {archive_size} bytes would unpack to {total} bytes, "
            f"more than {ratio} times its size"
        )
    # Entries that share compressed data (the overlapping-file bomb) claim more compressed
    # bytes than the whole file holds.
    if sum(info.compress_size for info in infos) > archive_size:
        raise ArchiveRefused(f"{zipname} is refused as a zip bomb: its entries overlap")


def _plan(infos: list[zipfile.ZipInfo], exclude_patterns: list[str], result: ArchiveImport) -> list[zipfile.ZipInfo]:
    """The members to extract; the others are named in the warnings (and in `refused` where they are files)."""
    planned: list[zipfile.ZipInfo] = []
    excluded: list[str] = []
    for info in infos:
        name = info.filename
        parts = PurePosixPath(name.replace("\\", "/")).parts
        if name.startswith(("/", "\\")) or ".." in parts or not parts:
            _skip(result, name, "its path leads outside the archive")  # named, before any rule that skips quietly
        elif info.is_dir() or is_junk(name):
            continue
        elif stat.S_ISLNK(info.external_attr >> 16):
            _skip(result, name, "it is a symbolic link")
        elif is_excluded(name, exclude_patterns):
            excluded.append(name)
        elif info.flag_bits & 0x1:
            _skip(result, name, "it is encrypted (password-protected members cannot be read)")
        elif not family_of(name):
            _skip(result, name, f"files of type {extension_of(name) or '(no extension)'} are not accepted")
        elif family_of(name) == "archive":
            _skip(result, name, "zips inside a zip are not unpacked; upload it on its own")
        elif info.file_size > settings.KB_MAX_UPLOAD_BYTES:
            _skip(result, name, f"it is larger than the upload limit of {settings.KB_MAX_UPLOAD_BYTES} bytes")
        else:
            planned.append(info)
    if excluded:
        result.warnings.append(
            f"{len(excluded)} member(s) match the collection's exclude patterns and were not imported: "
            + _names(excluded)
        )
    return planned


def _import_member(
    archive: zipfile.ZipFile,
    info: zipfile.ZipInfo,
    collection: Collection,
    base: str,
    uploaded_by: str,
    result: ArchiveImport,
    stored: list[str],
) -> None:
    source_uri = f"{base}/{info.filename}"
    if len(source_uri) > _MAX_SOURCE_URI or len(PurePosixPath(info.filename).name) > _MAX_FILENAME:
        _skip(result, info.filename, "its name or path is too long")
        return
    try:
        raw = _open_member(archive, info)
        with raw:
            outcome = document_create(
                collection=collection,
                filename=info.filename,
                content=_CappedReader(raw, info.file_size),  # type: ignore[arg-type]
                source_uri=source_uri,
                uploaded_by=uploaded_by,
            )
    except (UnsupportedFile, FileTooLarge) as exc:
        _skip(result, info.filename, str(exc))
        return
    except _MemberUnreadable as exc:
        _skip(result, info.filename, f"it could not be read from the archive ({exc})")
        return
    if outcome.created and outcome.document.file.name:
        stored.append(outcome.document.file.name)
    result.members.append(ArchiveMember(path=info.filename, document=outcome.document, created=outcome.created))


def _skip_navigation_hub(archive: zipfile.ZipFile, info: zipfile.ZipInfo, result: ArchiveImport) -> bool:
    """Skip a README.md that is mostly links and headings; say so in the answer and the Build."""
    if not is_readme(info.filename):
        return False
    try:
        with _open_member(archive, info) as raw:
            head = _CappedReader(raw, info.file_size).read(min(info.file_size, JUDGED_BYTES))
    except _MemberUnreadable:
        return False  # importing it reads it again and says what is wrong
    reason = navigation_hub_reason(info.filename, head)
    if reason is None:
        return False
    line = skipped_line(info.filename, reason)
    result.hubs.append(line)
    result.warnings.append(line)
    return True


class _MemberUnreadable(Exception):
    """One member cannot be extracted (corrupt data, bad CRC, a compression method zipfile lacks)."""


# What zipfile raises for one bad member: CRC and zlib errors, truncation, a password, an unknown method.
_MEMBER_ERRORS = (zipfile.BadZipFile, EOFError, RuntimeError, NotImplementedError, ValueError, zlib.error)


def _open_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> BinaryIO:
    try:
        return archive.open(info)  # type: ignore[return-value]
    except _MEMBER_ERRORS as exc:
        raise _MemberUnreadable(type(exc).__name__) from exc


class _CappedReader:
    """A member's stream that never yields more than the central directory declared.

    zipfile itself stops at the declared size; this says so where the limit is decided,
    and turns a member's read errors into _MemberUnreadable (a storage error, such as a
    full disk, is not the member's fault and is left to abort the import).
    """

    def __init__(self, raw: BinaryIO, declared: int) -> None:
        self._raw, self._left = raw, declared

    def read(self, size: int = -1) -> bytes:
        want = self._left + 1 if size is None or size < 0 else min(size, self._left + 1)
        try:
            data = self._raw.read(want)
        except _MEMBER_ERRORS as exc:
            raise _MemberUnreadable(type(exc).__name__) from exc
        if len(data) > self._left:
            raise _MemberUnreadable("it is larger than the archive's directory says")
        self._left -= len(data)
        return data


def _skip(result: ArchiveImport, name: str, reason: str) -> None:
    result.warnings.append(f"{name} not imported: {reason}")
    result.refused.append(PurePosixPath(name.replace("\\", "/")).name)


def _names(names: list[str], shown: int = 20) -> str:
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def _check_disk(needed: int) -> None:
    root = Path(settings.MEDIA_ROOT)
    while not root.exists() and root != root.parent:
        root = root.parent
    free = shutil.disk_usage(root).free
    if needed + _DISK_MARGIN > free:
        raise InsufficientStorage(
            f"the server has not enough free disk space to import this zip ({needed} bytes unpacked); "
            "ask an administrator to free space"
        )


def _remove_stored(names: list[str]) -> None:
    stored_files_remove(names)


# --- the import's Build -----------------------------------------------------------------------------------------


def _record_build(collection: Collection, result: ArchiveImport, built_from: str) -> None:
    created = [str(m.document.pk) for m in result.members if m.created]
    held = len(result.members) - len(created)
    warnings = [*result.hubs, *([f"{held} member(s) already held, not imported again"] if held else [])]
    if not created:
        archive_build_record(
            collection_id=str(collection.pk), document_ids=[], refused=result.refused,
            built_from=built_from, warnings=warnings,
        )  # fmt: skip
        return
    from django_q.tasks import async_task

    # Queued after the members' own ingestion tasks (same commit, in order).
    transaction.on_commit(
        lambda: async_task(
            "collections_app.tasks.record_archive_build",
            str(collection.pk),
            created,
            list(result.refused),
            built_from,
            warnings,
            task_name=f"record zip import build for collection {collection.pk}",
            group="ingestion",
        )
    )


def archive_build_record(
    *,
    collection_id: str,
    document_ids: list[str],
    refused: list[str],
    built_from: str,
    warnings: list[str],
    attempt: int = 0,
) -> Build | None:
    """Record the import's Build once its members have settled; until then, look again a little later."""
    collection = Collection.objects.filter(pk=collection_id).first()
    if collection is None:
        return None  # deleted meanwhile: nothing to record
    documents = list(Document.objects.filter(pk__in=document_ids, collection=collection))
    waiting = [d for d in documents if d.status in (DocumentStatus.QUEUED, DocumentStatus.PARSING)]
    if waiting and attempt < _SUMMARY_ATTEMPTS:
        from django_q.models import Schedule
        from django_q.tasks import schedule

        schedule(
            "collections_app.tasks.record_archive_build",
            collection_id, document_ids, refused, built_from, warnings, attempt + 1,
            schedule_type=Schedule.ONCE, next_run=timezone.now() + _SUMMARY_DELAY,
        )  # fmt: skip
        return None
    if waiting:
        warnings = [*warnings, f"{len(waiting)} member(s) were still being read when this record was written"]
    passages = Chunk.objects.filter(document__in=documents).count()
    model = get_model(collection.embedding_alias)
    return build_record(
        collection=collection,
        document=None,
        model=model.alias,
        dims=model.dims,
        passages=passages,
        refused=[*refused, *(d.filename for d in documents if d.status == DocumentStatus.ERROR)],
        built_from=built_from,
        unlabelled=passages,  # a zip import takes no ingest options, so no reader labels
        warnings=warnings,
    )
