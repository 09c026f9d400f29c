"""The embedded server sizes its buffer pool once, brings its pages back after a restart, runs without JIT, and
leaves a value someone chose alone."""

from __future__ import annotations

import time

import psutil
import pytest

from bench._pg_pair import POSTGRES_BIN_PATH, Server, primary_create
from infra.embedded_postgres import _prepare_server, shared_buffers_mb


def test_an_eighth_of_memory_between_postgresqls_default_and_2_gb():
    gib = 2**30
    assert shared_buffers_mb(1 * gib) == 128  # a small machine keeps PostgreSQL's default
    assert shared_buffers_mb(8 * gib) == 1024
    assert shared_buffers_mb(64 * gib) == 2048


@pytest.fixture
def configured(tmp_path):
    """A cluster whose postgresql.conf sets shared_buffers itself (pg_pair's 32 MB)."""
    primary = primary_create(tmp_path)
    yield primary
    primary.stop()


@pytest.fixture
def server(configured):
    """The same cluster with only initdb's own postgresql.conf value (128 MB), as the embedded server has."""
    conf = configured.data / "postgresql.conf"
    kept = [line for line in conf.read_text().splitlines() if not line.startswith("shared_buffers = 32MB")]
    conf.write_text("\n".join(kept) + "\n")
    configured.stop()
    configured.start()
    return configured


def _buffers(server: Server) -> str:
    return server.sql("SHOW shared_buffers").strip()


def _size_and_restart(server: Server) -> None:
    _prepare_server(POSTGRES_BIN_PATH / "psql", server.url)
    server.stop()
    server.start()


def test_initdbs_128_mb_is_replaced_from_the_next_start(server):
    assert _buffers(server) == "128MB"
    wanted = shared_buffers_mb(psutil.virtual_memory().total)
    shown = f"{wanted // 1024}GB" if wanted % 1024 == 0 else f"{wanted}MB"  # as SHOW prints it
    _size_and_restart(server)
    assert _buffers(server) == shown
    _size_and_restart(server)  # a later start changes nothing
    assert _buffers(server) == shown


def test_a_value_set_by_alter_system_stays(server):
    server.sql("ALTER SYSTEM SET shared_buffers = '200MB'")
    server.stop()
    server.start()
    _size_and_restart(server)
    assert _buffers(server) == "200MB"


def test_another_value_in_postgresql_conf_stays(configured):
    _size_and_restart(configured)
    assert _buffers(configured) == "32MB"


def _pages_in_pool(server: Server, table: str) -> int:
    """Without reading the table (a read would bring its pages in itself)."""
    return int(
        server.sql(
            "SELECT count(*) FROM pg_buffercache b JOIN pg_class c ON b.relfilenode = pg_relation_filenode(c.oid) "
            "AND b.reldatabase = (SELECT oid FROM pg_database WHERE datname = current_database()) "
            f"WHERE c.relname = '{table}'"
        )
    )


def test_the_buffer_pool_comes_back_after_a_restart(server):
    assert server.sql("SHOW shared_preload_libraries") == ""
    _size_and_restart(server)
    assert server.sql("SHOW shared_preload_libraries") == "pg_prewarm"
    server.sql("CREATE EXTENSION pg_buffercache")
    server.sql("CREATE TABLE postings AS SELECT g, repeat('x', 200) AS pad FROM generate_series(1, 20000) g")
    server.sql("SELECT count(*) FROM postings")
    held = _pages_in_pool(server, "postings")
    assert held > 500  # 20,000 rows of ~230 bytes: ~600 pages

    server.stop()  # the pool's pages are written down at shutdown
    server.start()
    deadline = time.monotonic() + 30
    while (back := _pages_in_pool(server, "postings")) < held and time.monotonic() < deadline:
        time.sleep(0.2)
    assert back >= held  # in the pool again before any question read them
    _size_and_restart(server)  # a later start changes nothing
    assert server.sql("SHOW shared_preload_libraries") == "pg_prewarm"


def test_libraries_someone_chose_stay(server):
    server.sql("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
    server.stop()
    server.start()
    _size_and_restart(server)
    assert server.sql("SHOW shared_preload_libraries") == "pg_stat_statements"


def test_jit_is_off_without_a_restart(server):
    """The wheel ships no llvmjit.so: with jit on, every backend planning a costly query tried to load it."""
    assert server.sql("SHOW jit") == "on"  # PostgreSQL's default, as the wheel's server starts
    _prepare_server(POSTGRES_BIN_PATH / "psql", server.url)
    assert server.sql("SHOW jit") == "off"  # a new session: the reload applied it
    server.stop()
    server.start()
    assert server.sql("SHOW jit") == "off"


def test_a_jit_someone_chose_stays(server):
    server.sql("ALTER SYSTEM SET jit = on")
    server.sql("SELECT pg_reload_conf()")
    _prepare_server(POSTGRES_BIN_PATH / "psql", server.url)
    assert server.sql("SHOW jit") == "on"


def test_checkpoints_are_spaced_for_bulk_writes_without_a_restart(server):
    """An import of a million paragraphs wrote every HNSW page it touched whole again after each of its dozens of
    checkpoints (one per 1 GB of WAL by default)."""
    assert (server.sql("SHOW max_wal_size"), server.sql("SHOW checkpoint_timeout")) == ("1GB", "5min")
    _prepare_server(POSTGRES_BIN_PATH / "psql", server.url)
    assert (server.sql("SHOW max_wal_size"), server.sql("SHOW checkpoint_timeout")) == ("8GB", "30min")
    server.stop()
    server.start()
    assert server.sql("SHOW max_wal_size") == "8GB"


def test_checkpoint_spacing_someone_chose_stays(server):
    server.sql("ALTER SYSTEM SET max_wal_size = '2GB'")
    server.sql("SELECT pg_reload_conf()")
    _prepare_server(POSTGRES_BIN_PATH / "psql", server.url)
    assert (server.sql("SHOW max_wal_size"), server.sql("SHOW checkpoint_timeout")) == ("2GB", "5min")
