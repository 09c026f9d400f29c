"""Reading a backup archive (services/backup.py writes it) and checking all of it before a restore touches anything.

    archive_check(path=...)    # -> CheckedArchive: the manifest, and every member checked; raises BackupFailed

What is checked, in one pass over the archive and without writing a byte anywhere: it is a readable tar file (not
empty, not truncated); its manifest is a dict of the expected keys and types (pydantic, strict); every original it
names is a plain relative path inside the storage root (no absolute name, no `..`, `.` or empty segment, none under
the restore's own dot-folders); every member is a regular file the manifest lists, once; every size and SHA-256
is the manifest's. Each refusal is one line an operator can act on, naming no machine path.
"""

from __future__ import annotations

import hashlib
import json
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Annotated, Literal

from pydantic import BaseModel, ConfigDict, NonNegativeInt, StringConstraints, ValidationError

from collections_app.services.backup import DUMP, FORMAT, FORMAT_VERSION, MANIFEST, STORAGE, BackupFailed

READ_BLOCK = 1024 * 1024
# Large enough for any manifest of a real installation (a million originals), small enough to refuse a bomb.
MANIFEST_LIMIT = 512 * 1024 * 1024

Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
# Table names are pasted into `SELECT count(*) FROM "..."`: lower-case identifiers only, as Django names them.
TableName = Annotated[str, StringConstraints(pattern=r"^[a-z_][a-z0-9_]{0,62}$")]


class Stored(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    size: NonNegativeInt
    sha256: Sha256


class Manifest(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")

    format: Literal["kbsite-backup"]
    format_version: Literal[1]
    postgresql: str
    pg_dump: str
    migrations: dict[str, str]
    counts: dict[TableName, NonNegativeInt]
    database: Stored
    files: dict[str, Stored]


@dataclass(frozen=True)
class CheckedArchive:
    path: Path
    manifest: Manifest
    members: dict[str, tarfile.TarInfo]

    @property
    def bytes(self) -> int:
        return self.manifest.database.size + sum(f.size for f in self.manifest.files.values())


def storage_name_is_plain(name: str) -> bool:
    """A name that, joined to the storage root, stays under it and means the same path on every system: relative,
    normalized (no empty, `.` or `..` segment), no NUL, and not under a dot-folder (the restore's own staging)."""
    parts = name.split("/")
    return (
        0 < len(name) <= 1000
        and "\x00" not in name
        and not name.startswith("/")
        and all(part not in ("", ".", "..") for part in parts)
        and not parts[0].startswith(".")
    )


@contextmanager
def archive_open(path: Path) -> Iterator[tarfile.TarFile]:
    """The archive as a tar file, or a one-line refusal (missing, unreadable, empty, not tar, damaged)."""
    if not path.is_file():
        raise BackupFailed("there is no archive at the path given (or it is not a file): check the path")
    try:
        with tarfile.open(path, "r:") as archive:
            yield archive
    except BackupFailed:
        raise
    except (tarfile.TarError, EOFError, OSError, UnicodeDecodeError) as exc:
        raise BackupFailed(_unreadable(exc)) from exc


def _unreadable(exc: BaseException) -> str:
    if isinstance(exc, PermissionError):
        return "the archive cannot be read (permission denied): run as a user who may read it"
    return (
        "the archive is not a readable kbsite backup (not a tar file, empty, truncated or damaged): use the file "
        "`manage.py backup` wrote, copied whole (uncompressed, if it was compressed since)"
    )


def _member_stream(archive: tarfile.TarFile, member: tarfile.TarInfo) -> IO[bytes]:
    stream = archive.extractfile(member)
    if stream is None:  # pragma: no cover - regular files always have a stream
        raise BackupFailed("the archive holds a member that cannot be read: it is damaged")
    return stream


def _manifest(archive: tarfile.TarFile, members: dict[str, tarfile.TarInfo]) -> Manifest:
    member = members.get(MANIFEST)
    if member is None:
        raise BackupFailed("the archive holds no manifest.json: it is not a kbsite backup")
    if not member.isreg() or member.size > MANIFEST_LIMIT:
        raise BackupFailed("the archive's manifest.json is not a plain file of a sensible size: refused")
    try:
        raw = json.loads(_member_stream(archive, member).read())
    except (ValueError, RecursionError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise BackupFailed("the archive's manifest.json is not JSON: the archive is damaged") from exc
    if not isinstance(raw, dict):
        raise BackupFailed(f"the archive's manifest.json is a JSON {type(raw).__name__}, not an object: refused")
    if raw.get("format") != FORMAT or raw.get("format_version") != FORMAT_VERSION:
        raise BackupFailed("the archive is not a kbsite backup of a format this version restores")
    try:
        manifest = Manifest.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])[:80] or "the top level"
        raise BackupFailed(
            f"the archive's manifest is malformed ({exc.error_count()} problem(s); first at {where}: {first['msg']}): "
            "the archive is damaged or was not written by `manage.py backup`"
        ) from exc
    if not all(storage_name_is_plain(name) for name in manifest.files):
        raise BackupFailed(
            "the manifest names an original outside the storage folder (an absolute name, or one with '..', '.' or "
            "an empty segment): refused, nothing was restored"
        )
    return manifest


def _members(archive: tarfile.TarFile) -> dict[str, tarfile.TarInfo]:
    members: dict[str, tarfile.TarInfo] = {}
    for member in archive.getmembers():
        if member.name in members:
            raise BackupFailed("the archive holds two members of one name: refused (which one would be meant?)")
        members[member.name] = member
    return members


def _checked_size_and_checksum(archive: tarfile.TarFile, member: tarfile.TarInfo, expected: Stored, what: str) -> None:
    if member.size != expected.size:
        raise BackupFailed(f"{what} is not the size the manifest gives: the archive is damaged")
    digest = hashlib.sha256()
    stream = _member_stream(archive, member)
    while block := stream.read(READ_BLOCK):
        digest.update(block)
    if digest.hexdigest() != expected.sha256:
        raise BackupFailed(f"{what} does not match its checksum: the archive is damaged or was altered")


def archive_check(*, path: Path) -> CheckedArchive:
    """Read the whole archive and check it against its manifest; nothing is written. Raises BackupFailed."""
    with archive_open(path) as archive:
        members = _members(archive)
        manifest = _manifest(archive, members)
        expected = {DUMP: manifest.database} | {STORAGE + name: stored for name, stored in manifest.files.items()}
        for name, member in members.items():
            if name == MANIFEST:
                continue
            if name not in expected:
                raise BackupFailed("the archive holds a member its manifest does not list: refused")
            if not member.isreg() or member.issparse():
                raise BackupFailed(
                    "the archive holds a member that is not a regular file (a link, a device or a folder): refused"
                )
        missing = [name for name in expected if name not in members]
        if missing:
            raise BackupFailed(f"the archive lacks {len(missing)} of the members its manifest lists: it is incomplete")
        _checked_size_and_checksum(archive, members[DUMP], manifest.database, "the database dump")
        for name, stored in manifest.files.items():
            _checked_size_and_checksum(archive, members[STORAGE + name], stored, "an original")
    return CheckedArchive(path=path, manifest=manifest, members=members)


def member_copy(archive: tarfile.TarFile, member: tarfile.TarInfo, expected: Stored, destination: Path) -> None:
    """Write one member to `destination` (a new file), checking its checksum again as it is written: the archive
    was checked in an earlier read, and a file can change between two reads."""
    digest = hashlib.sha256()
    stream = _member_stream(archive, member)
    try:
        out = _new_file(destination)
    except OSError as exc:
        raise _not_written(exc) from exc
    with out:
        while block := stream.read(READ_BLOCK):
            digest.update(block)
            try:
                out.write(block)
            except OSError as exc:
                raise _not_written(exc) from exc
    if digest.hexdigest() != expected.sha256:
        raise BackupFailed("the archive changed while it was being restored: nothing was switched in")


def _new_file(destination: Path) -> IO[bytes]:
    return destination.open("xb")


def _not_written(exc: OSError) -> BackupFailed:
    # A full disk where the restore writes is not a damaged archive (what an OSError inside archive_open says).
    return BackupFailed(
        f"a file could not be written where the restore puts it ({exc.strerror or type(exc).__name__}): nothing "
        "was changed; free space in KB_STAGING_DIR (else the system's temporary folder) and the storage folder, "
        "then restore again"
    )
