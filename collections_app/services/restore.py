"""Restore a backup archive (services/backup.py) so that it succeeds whole or changes nothing.

    installation_restore(path=..., force=False)   # manage.py restore PATH [--force]

1. The whole archive is read and checked (services/backup_archive.py) before the database or the storage is
   touched: a hostile, damaged or malformed archive is a one-line refusal and nothing else.
2. The dump is loaded into a new database beside the installation's, `<name>_restoring` (made from template0 with
   the installation's encoding and locale), and every table's count is checked there.
3. The originals are written into a staging folder inside the storage root (`.restoring/`, the same filesystem, so
   putting them in place is a rename), each checked again as it is written, then put in place beside the
   installation's own. Storage names hold their file's SHA-256 (tenant/collection/sha256/name), so a name the
   installation already holds is the same file: it is kept as it is. A file there whose bytes differ (damaged) is
   moved to `.before-restore/` first. Nothing the installation's database names is removed or changed.
4. The switch, in one transaction: end the sessions on the installation's database, rename it
   `<name>_before_restore` (kept, for going back), rename `<name>_restoring` to its name. Until that commits the
   installation serves exactly what it served; a restore killed before it leaves `<name>_restoring` behind, which
   the next restore drops. A session left on the new database (someone looking at it) is waited for, then refused.

The rights it needs, checked before anything is loaded: CREATEDB and ownership of the installation's database (a
superuser has both; on a managed server the user that created the database usually has both), and the right to end
the platform's sessions (they use the same user). Without them the restore refuses, naming what is missing,
rather than load over the data in place. This is an operator's command: its messages never reach a tenant.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from django.apps import apps
from django.conf import settings
from django.db import connections
from django.db.migrations.loader import MigrationLoader
from psycopg import sql

from collections_app.services.backup import (
    APPS,
    DUMP,
    STORAGE,
    BackupFailed,
    _run,
    _sha256,
    _tool,
    database_connect,
    database_conninfo,
    server_major,
    staging_directory,
)
from collections_app.services.backup_archive import CheckedArchive, archive_check, archive_open, member_copy
from collections_app.services.restore_guard import code_of, foreign_code_refuse, unprivileged_loader

LOADING_SUFFIX = "_restoring"
REPLACED_SUFFIX = "_before_restore"
STAGING = ".restoring"
SET_ASIDE = ".before-restore"
# A session on the new database would make the rename fail half way through the switch: wait for it this long.
FREE_WAIT_SECONDS = 30
SWITCH_ATTEMPTS = 5


@dataclass
class RestoreSummary:
    counts: dict[str, int]
    files: int
    replaced: str | None  # the installation's former database, kept under this name (None: there was none)
    migrate: bool = False  # made by an older kbsite: `manage.py migrate` brings it forward


Progress = Callable[[str], None]


def installation_restore(
    *, path: Path, force: bool = False, database: dict[str, Any] | None = None, progress: Progress | None = None
) -> RestoreSummary:
    """Restore the archive into this installation (empty, unless `force`): whole, or not at all."""
    say = progress or (lambda line: None)
    database = database or settings.DATABASES["default"]
    checked = archive_check(path=path)
    _refuse_a_newer_schema(checked)
    say(f"archive checked: {len(checked.manifest.files)} originals, {checked.bytes} bytes, every checksum matches")
    name = str(database.get("NAME") or "")
    if not name:
        raise BackupFailed("DATABASES['default'] names no database (NAME): a restore needs the name it replaces")
    loading, replaced = name + LOADING_SUFFIX, name + REPLACED_SUFFIX
    if len(replaced.encode()) > 63:
        raise BackupFailed("the database's name is too long to restore beside it (PostgreSQL allows 63 bytes)")
    with _maintenance(database) as server:
        exists = _database_exists(server, name)
        _refuse_without_rights(server, name, exists)
        held = _holds_content(database) if exists else {}
        if held and not force:
            what = ", ".join(f"{n} rows in {t}" for t, n in sorted(held.items()))
            raise BackupFailed(f"this installation is not empty ({what}): restore into an empty one, or --force")
        destinations_check(checked)
        _lock_against_another_restore(server, name)
        server.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(loading)))
        server.execute(_create_like(server, loading, name if exists else None))
        try:
            installation = _installation_code(database, name) if exists else None
            if installation is None:
                say("the database holds no installation yet: the archive's code is taken as it is (trust it)")
            say(f"loading the database into {loading}")
            with unprivileged_loader(server, database, loading) as loader:
                counts = _load(checked, loader, loading, installation)
            say(f"database loaded into {loading}: every table's count matches")
            placed = _originals_in_place(checked)
            say(f"originals in place: {placed} written, {len(checked.manifest.files) - placed} already there")
            _wait_until_free(server, loading)
            connections.close_all()  # this process's own sessions on the installation end with the switch
            _switch(server, name=name, loading=loading, replaced=replaced if exists else None)
        except BaseException:
            with suppress(psycopg.Error):
                server.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(loading)))
            raise
    return RestoreSummary(
        counts=counts,
        files=len(checked.manifest.files),
        replaced=replaced if exists else None,
        migrate=_behind(checked),
    )


def _migrations() -> MigrationLoader:
    return MigrationLoader(None, ignore_no_migrations=True)


def _behind(checked: CheckedArchive) -> bool:
    """Whether this code has migrations the archive's database has not had."""
    latest = dict(checked.manifest.migrations)
    return any(latest.get(app) != name for app, name in _migrations().graph.leaf_nodes())


def _refuse_a_newer_schema(checked: CheckedArchive) -> None:
    """An archive made by a newer kbsite holds tables this code does not know how to read: restoring it would
    switch in an installation that cannot serve. An older one is fine (`manage.py migrate` brings it forward)."""
    known = _migrations().disk_migrations
    unknown = sorted(app for app, latest in checked.manifest.migrations.items() if (app, latest) not in known)
    if unknown:
        raise BackupFailed(
            f"the archive was made by a newer kbsite (migrations this version lacks: {', '.join(unknown)[:200]}): "
            "upgrade this installation first, then restore. Nothing was changed"
        )


@contextmanager
def _maintenance(database: dict[str, Any]) -> Iterator[psycopg.Connection]:
    """A session on the server's `postgres` database: creating, dropping and renaming the installation's own
    database cannot be done from inside it. (`template1` where a managed server has no `postgres`.)"""
    try:
        connection = database_connect(database, dbname="postgres")
    except BackupFailed as exc:
        if "does not exist" not in str(exc):
            raise
        connection = database_connect(database, dbname="template1")
    with connection:
        yield connection


def _database_exists(server: psycopg.Connection, name: str) -> bool:
    return server.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone() is not None


def _refuse_without_rights(server: psycopg.Connection, name: str, exists: bool) -> None:
    row = server.execute(
        "SELECT r.rolsuper, r.rolcreatedb, coalesce(pg_has_role(current_user, d.datdba, 'USAGE'), false)"
        " FROM pg_roles r LEFT JOIN pg_database d ON d.datname = %s WHERE r.rolname = current_user",
        [name],
    ).fetchone()
    superuser, createdb, owner = row if row else (False, False, False)
    missing = [] if superuser or createdb else ["CREATEDB"]
    if exists and not (superuser or owner):
        missing.append(f"ownership of the database {name}")
    if missing:
        raise BackupFailed(
            f"the database user lacks {' and '.join(missing)}: a restore loads into a new database beside this one "
            "and switches only once it is whole; grant it, or run the restore as a user who has it. Nothing was changed"
        )


def _holds_content(database: dict[str, Any]) -> dict[str, int]:
    found = {}
    with database_connect(database) as connection:
        for label in ("accounts.Tenant", "collections_app.Collection", "collections_app.Document"):
            table = apps.get_model(label)._meta.db_table
            exists = connection.execute("SELECT to_regclass(%s)", [table]).fetchone()
            if exists and exists[0] is not None:
                count = connection.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone()
                if count and count[0]:
                    found[table] = int(count[0])
    return found


def _lock_against_another_restore(server: psycopg.Connection, name: str) -> None:
    # Held by this session until it ends: two restores of one database would drop each other's new database.
    locked = server.execute("SELECT pg_try_advisory_lock(hashtextextended('kbsite restore ' || %s, 0))", [name])
    if not locked.fetchone()[0]:  # type: ignore[index]
        raise BackupFailed("another restore of this installation is running: wait for it to finish")


def _create_like(server: psycopg.Connection, new: str, like: str | None) -> sql.Composed:
    """CREATE DATABASE new, from template0 (nothing in it a dump would collide with), with `like`'s encoding and
    locale so text sorts and compares as it did."""
    statement = sql.SQL("CREATE DATABASE {} TEMPLATE template0").format(sql.Identifier(new))
    if like is None:
        return statement
    row = server.execute("SELECT to_jsonb(d) FROM pg_database d WHERE datname = %s", [like]).fetchone()
    found: dict[str, Any] = row[0] if row else {}
    options = [
        sql.SQL("ENCODING {}").format(sql.Literal(_encoding(server, found))),
        sql.SQL("LC_COLLATE {} LC_CTYPE {}").format(sql.Literal(found["datcollate"]), sql.Literal(found["datctype"])),
    ]
    locale = found.get("datlocale") or found.get("daticulocale")
    if found.get("datlocprovider") == "i" and locale:
        options.append(sql.SQL("LOCALE_PROVIDER icu ICU_LOCALE {}").format(sql.Literal(locale)))
    elif found.get("datlocprovider") == "b" and locale:
        options.append(sql.SQL("LOCALE_PROVIDER builtin BUILTIN_LOCALE {}").format(sql.Literal(locale)))
    return sql.SQL(" ").join([statement, *options])


def _encoding(server: psycopg.Connection, found: dict[str, Any]) -> str:
    return str(server.execute("SELECT pg_encoding_to_char(%s)", [found["encoding"]]).fetchone()[0])  # type: ignore[index]


def _installation_code(database: dict[str, Any], name: str) -> set[str] | None:
    """The code of the installation's database (restore_guard), or None when it holds no installation yet."""
    with database_connect(database, dbname=name) as live:
        return code_of(live) if _has_table(live, "django_migrations") else None


def _load(
    checked: CheckedArchive, database: dict[str, Any], loading: str, installation: set[str] | None
) -> dict[str, int]:
    """pg_restore the dump into the new database in one transaction, as `database`'s user (the unprivileged
    loader), then check there its code, its migrations and every table's count."""
    manifest = checked.manifest
    with staging_directory() as directory:
        dump = directory / DUMP
        with archive_open(checked.path) as archive:
            member_copy(archive, checked.members[DUMP], manifest.database, dump)
        with database_connect(database, dbname=loading) as probe:
            major = server_major(str(probe.execute("SHOW server_version_num").fetchone()[0]))  # type: ignore[index]
        restorer = _tool("pg_restore", major)
        # The extensions were made by the superuser already; the loader may neither make nor comment them.
        listing = [line for line in _run([restorer, "--list", str(dump)], database).splitlines()
                   if " EXTENSION " not in line]  # fmt: skip
        (Path(directory) / "list").write_text("\n".join(listing) + "\n")
        _run(
            [restorer, "--no-owner", "--no-privileges", "--single-transaction", "--exit-on-error",
             "--use-list", str(Path(directory) / "list"),
             "--dbname", database_conninfo(database, dbname=loading), str(dump)],
            database,
        )  # fmt: skip
    expected_tables = _tables_at(checked)
    uncounted = sorted(expected_tables - set(manifest.counts))
    if uncounted:
        raise BackupFailed(
            f"the manifest does not count {len(uncounted)} kbsite table(s) (first: {uncounted[0]}): the archive is "
            "damaged or was not written by `manage.py backup`. Nothing was changed"
        )
    with database_connect(database, dbname=loading) as restored:
        foreign_code_refuse(code_of(restored), installation)
        _schema_check(restored, checked, expected_tables)
        counts = {}
        for table in sorted(manifest.counts):  # checked identifiers (backup_archive.TableName), quoted all the same
            # In kbsite's schema only: a bare name would find the system's tables too (pg_authid, which the
            # loader may not read: a traceback), and no count of theirs says anything about the backup.
            if not _has_table(restored, table):
                raise BackupFailed(
                    f"the restored database lacks the table {table} the manifest counts: nothing changed"
                )
            query = sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier("public", table))
            counts[table] = int(restored.execute(query).fetchone()[0])  # type: ignore[index]
    problems = [
        f"{table}: {counts[table]} rows, the backup held {expected}"
        for table, expected in sorted(manifest.counts.items())
        if counts[table] != expected
    ]
    if problems:
        raise BackupFailed("the restored database differs from the backup, nothing changed: " + "; ".join(problems[:5]))
    return counts


def _tables_at(checked: CheckedArchive) -> set[str]:
    """The tables of this code's models at the archive's migration state (an older archive lacks newer ones)."""
    loader = _migrations()
    nodes = [(app, name) for app, name in checked.manifest.migrations.items() if (app, name) in loader.graph.nodes]
    if "collections_app" not in checked.manifest.migrations or not nodes:
        raise BackupFailed(
            "the archive's manifest names no kbsite migrations: it was not written by `manage.py backup`. "
            "Nothing was changed"
        )
    state = loader.project_state(nodes, at_end=True)
    return {
        model._meta.db_table
        for model in state.apps.get_models()
        if model._meta.managed and not model._meta.proxy and model._meta.app_label in APPS
    }


def _schema_check(restored: psycopg.Connection, checked: CheckedArchive, tables: set[str]) -> None:
    """The loaded database is the manifest's: its migrations are the ones named, and every model's table exists."""
    applied = (
        set(restored.execute("SELECT app, name FROM django_migrations").fetchall())
        if _has_table(restored, "django_migrations")
        else set()
    )
    missing_migrations = sorted(f"{app}.{name}" for app, name in checked.manifest.migrations.items()
                                if (app, name) not in applied)  # fmt: skip
    if missing_migrations:
        raise BackupFailed(
            f"the restored database lacks migrations its manifest names (first: {missing_migrations[0][:100]}): "
            "the archive is damaged or altered. Nothing was changed"
        )
    absent = sorted(table for table in tables if not _has_table(restored, table))
    if absent:
        raise BackupFailed(
            f"the restored database lacks {len(absent)} kbsite table(s) (first: {absent[0]}): the archive is "
            "damaged or altered. Nothing was changed"
        )


def _has_table(connection: psycopg.Connection, table: str) -> bool:
    found = connection.execute("SELECT to_regclass(%s)", [f'public."{table}"']).fetchone()
    return bool(found and found[0] is not None)


def _originals_in_place(checked: CheckedArchive) -> int:
    """Write every original into the staging folder (checked as written), then rename each into place; an
    original already there with the same bytes is kept. Returns how many were written."""
    root = Path(settings.MEDIA_ROOT)
    destinations_check(checked)
    staging = root / STAGING
    shutil.rmtree(staging, ignore_errors=True)  # what a killed restore left: never anything of a document's
    try:
        staging.mkdir(parents=True)
        wanted = []
        with archive_open(checked.path) as archive:
            for name, stored in sorted(checked.manifest.files.items()):
                destination = root / name
                if destination.is_file() and not destination.is_symlink() and _sha256(destination) == stored.sha256:
                    continue
                staged = staging / name
                try:
                    staged.parent.mkdir(parents=True, exist_ok=True)
                    member_copy(archive, checked.members[STORAGE + name], stored, staged)
                except OSError as exc:
                    raise BackupFailed(
                        f"an original could not be written to the storage folder ({exc.strerror or 'error'}): "
                        "nothing was changed; free space or fix the storage folder, then restore again"
                    ) from exc
                wanted.append(name)
        for name in wanted:
            destination = root / name
            if destination.exists() or destination.is_symlink():
                aside = root / SET_ASIDE / name
                aside.parent.mkdir(parents=True, exist_ok=True)
                destination.replace(aside)
            destination.parent.mkdir(parents=True, exist_ok=True)
            (staging / name).replace(destination)
        return len(wanted)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def destinations_check(checked: CheckedArchive) -> None:
    """Refuse, before anything is written, an archive whose originals cannot all be put in place: a destination
    that is there and is not a regular file (a folder, a link), a name under an existing file, or two names of the
    archive where one would be the other's folder."""
    try:
        _destinations_check(Path(settings.MEDIA_ROOT), set(checked.manifest.files))
    except OSError as exc:
        raise BackupFailed(
            f"an original's place in the storage folder cannot be checked ({exc.strerror or 'error'}; a name too "
            "long for this file system?): refused, nothing was changed"
        ) from exc


def _destinations_check(root: Path, names: set[str]) -> None:
    for name in sorted(names):
        parts = name.split("/")
        destination = root / name
        if destination.is_symlink() or (destination.exists() and not destination.is_file()):
            raise BackupFailed(
                "the archive names an original where the storage folder holds something that is not a regular file "
                "(a folder or a link): refused, nothing was changed"
            )
        for depth in range(1, len(parts)):
            folder = "/".join(parts[:depth])
            above = root / folder
            if folder in names or above.is_symlink() or (above.exists() and not above.is_dir()):
                raise BackupFailed(
                    "the archive names an original under a name that is a file, not a folder (in the storage "
                    "folder or in the archive itself): refused, nothing was changed"
                )


def _wait_until_free(server: psycopg.Connection, loading: str) -> None:
    deadline = time.monotonic() + FREE_WAIT_SECONDS
    while _sessions_on(server, loading):
        if time.monotonic() > deadline:
            raise BackupFailed(
                f"someone is connected to {loading}, the database being restored: it cannot be switched in while "
                "they are. Nothing was changed; run the restore again once they have left"
            )
        time.sleep(0.2)


def _sessions_on(server: psycopg.Connection, database: str) -> int:
    query = "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()"
    return int(server.execute(query, [database]).fetchone()[0])  # type: ignore[index]


def _switch(server: psycopg.Connection, *, name: str, loading: str, replaced: str | None) -> None:
    """Make the new database the installation's, in one transaction; the old one is kept as `replaced`."""
    if replaced is not None:
        # The copy an earlier restore kept: the new one is whole and verified, so this one's turn to go.
        server.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(replaced)))
    steps = [sql.SQL("ALTER DATABASE {} RENAME TO {}").format(sql.Identifier(loading), sql.Identifier(name))]
    if replaced is not None:
        # Ending the sessions and renaming go in one round trip: a session that connects in between makes the
        # rename wait (5 s, PostgreSQL's own) and fail, and the whole is tried again.
        steps = [
            sql.SQL("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = {}"
                    " AND pid <> pg_backend_pid()").format(sql.Literal(name)),
            sql.SQL("ALTER DATABASE {} RENAME TO {}").format(sql.Identifier(name), sql.Identifier(replaced)),
            *steps,
        ]  # fmt: skip
    for attempt in range(SWITCH_ATTEMPTS):
        try:
            with server.transaction():
                server.execute(sql.SQL("; ").join(steps))
            return
        except psycopg.errors.ObjectInUse as exc:
            if attempt == SWITCH_ATTEMPTS - 1:
                raise BackupFailed(
                    "sessions kept connecting to the database while it was being switched: nothing was changed; "
                    "stop the platform's processes and run the restore again"
                ) from exc
        except psycopg.errors.InsufficientPrivilege as exc:
            raise BackupFailed(
                "the database user may not end every session on the database (a superuser's?): nothing was changed; "
                "end them, or restore as a superuser"
            ) from exc
