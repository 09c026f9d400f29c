"""The vector index after a large removal: built again from the rows left, before VACUUM has to mend it.

An HNSW index keeps a removed paragraph's node until VACUUM takes it out, and taking a node out of the graph means
mending every neighbour that pointed at it: after a million-paragraph collection was removed, the index still
weighed 2,034 MB for 203 paragraphs, and the next import of 20,000 took 59.6 s instead of 29 (docs/DECISIONS.md,
"Deletes in seconds"). pgvector's own advice for large deletes is to rebuild the index first (REINDEX INDEX
CONCURRENTLY, then VACUUM): a build from the rows left costs less than mending, and CONCURRENTLY keeps searches,
imports and edits going while it runs. Only when the removal took at least as many paragraphs as the index still
serves (and at least `KB_VECTOR_INDEX_REBUILD_PARAGRAPHS`), so the rebuild never costs more than the removal did.
"""

from __future__ import annotations

import logging
import re
import time

from django.conf import settings
from django.db import connection

from collections_app.models import Chunk
from infra.locks import session_lock

logger = logging.getLogger(__name__)

# One rebuild at a time: two removals ending together would each build the same index again.
REBUILD_LOCK = "kbsite vector index rebuild"


def vector_indexes_rebuild_after_removal(*, removed_paragraphs: int) -> list[str]:
    """Rebuild each vector (HNSW) index of the paragraphs' table whose rows left are no more than
    `removed_paragraphs`; returns the names rebuilt. Whatever the removal's size, first drop what a killed rebuild
    left. Outside a transaction only (REINDEX and DROP INDEX CONCURRENTLY cannot run in one): inside one it does
    nothing."""
    if connection.in_atomic_block:
        return []
    rebuilt = []
    with session_lock(REBUILD_LOCK, application_name="kbsite-vector-index-rebuild") as held:
        if not held:
            logger.info("a vector index rebuild is already running; this removal leaves it to that one")
            return []
        indexes = _vector_indexes()
        if _index_build_running():
            # Its worker was killed and let the lock go, but its session goes on (PostgreSQL notices the dead client
            # when the statement ends): its `_ccnew` is no leftover, and dropping it waits for the whole rebuild.
            logger.info("a vector index rebuild left by a killed worker is still running; this removal leaves it")
            return []
        for name, _ in indexes:
            # Not only after a large removal: a copy the default 50,000 would leave until the next one weighs what
            # the index did (2 GB after the million), and a `_ccnew` one may still be written to by every insert.
            _drop_invalid_copies(name)
        if removed_paragraphs < settings.KB_VECTOR_INDEX_REBUILD_PARAGRAPHS:
            return []
        for name, predicate in indexes:
            rows_left = _rows_served(predicate)
            if rows_left > removed_paragraphs:
                continue
            started = time.monotonic()
            try:
                with connection.cursor() as cursor:
                    cursor.execute(f"REINDEX INDEX CONCURRENTLY {connection.ops.quote_name(name)}")
            except Exception:
                # A failed concurrent rebuild leaves its half-built copy behind, invalid and still written to.
                _drop_invalid_copies(name)
                logger.exception("vector index %s could not be rebuilt; VACUUM will mend it instead", name)
                continue
            rebuilt.append(name)
            logger.info(
                "vector index %s rebuilt from %d paragraphs in %.1f s (%d removed)",
                name,
                rows_left,
                time.monotonic() - started,
                removed_paragraphs,
            )
    return rebuilt


def _vector_indexes() -> list[tuple[str, str | None]]:
    """Each valid HNSW index of the paragraphs' table (one per embedding width, partial: `WHERE embedding_dims = N`)
    with its predicate."""
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT c.relname, pg_get_expr(i.indpred, i.indrelid)
               FROM pg_index i
               JOIN pg_class c ON c.oid = i.indexrelid
               JOIN pg_am am ON am.oid = c.relam
               WHERE i.indrelid = %s::regclass AND am.amname = 'hnsw' AND i.indisvalid
               ORDER BY c.relname""",
            [Chunk._meta.db_table],
        )
        return list(cursor.fetchall())


def _index_build_running() -> bool:
    """Whether a session builds an index of the paragraphs' table now (REINDEX or CREATE INDEX, concurrently or
    not), whoever started it."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_stat_progress_create_index WHERE relid = %s::regclass)",
            [Chunk._meta.db_table],
        )
        return bool(cursor.fetchone()[0])


def _rows_served(predicate: str | None) -> int:
    """How many rows an index of that predicate serves now."""
    with connection.cursor() as cursor:
        # The predicate is the index's own, read back from the catalogue (this table's migrations wrote it).
        cursor.execute(f"SELECT count(*) FROM {Chunk._meta.db_table} WHERE {predicate or 'true'}")
        return cursor.fetchone()[0]


def _drop_invalid_copies(name: str) -> None:
    """Drop what REINDEX CONCURRENTLY leaves of `name` when it fails or its worker is killed: the new copy
    (`<name>_ccnew`, `_ccnew1`, ...) when it stopped before swapping the names, the old index (`<name>_ccold`...)
    when it stopped after (PostgreSQL's REINDEX page: "the recommended recovery method is to just drop said
    index"). Both invalid: no search reads them."""
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
               WHERE i.indrelid = %s::regclass AND NOT i.indisvalid AND c.relname ~ %s""",
            [Chunk._meta.db_table, f"^{re.escape(name)}_cc(new|old)[0-9]*$"],
        )
        for (copy,) in cursor.fetchall():
            cursor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {connection.ops.quote_name(copy)}")
