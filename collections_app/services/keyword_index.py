"""A collection's keyword index written in one pass where its paragraphs arrive in bulk.

The keyword statistics' triggers (migration 0034) keep the index current statement by statement: right for a
build, an edit or a delete. A collection import writes its paragraphs in a thousand batches in one transaction;
per batch the triggers rewrote each word's count and last block, and every old version stayed until the end (at
a million paragraphs, tens of millions of dead rows). Inside `keyword_index_deferred` the triggers leave the
collection out, and at its end `kb_keyword_index_fill` builds the collection's statistics, words and blocks from
its paragraphs at once: the postings sorted by word once, every block written once.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection, transaction

# The keyword stage's tables, analysed after a bulk write (see keyword_index_analyse).
KEYWORD_TABLES = ("collections_app_chunk", "collections_app_keywordterm", "collections_app_keywordblock")


@contextmanager
def keyword_index_deferred(collection_id: uuid.UUID) -> Iterator[None]:
    """Paragraphs of `collection_id` written inside this block are indexed for keywords in one pass at its end,
    in the caller's transaction (a failure rolls both back). Searches in other transactions see the collection's
    index as it was until the commit, as always."""
    if not connection.in_atomic_block:
        raise RuntimeError("keyword_index_deferred needs the caller's transaction")  # the setting is local to it
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config('kb.deferred_collections', %s, true)", [f"{{{collection_id}}}"])
    yield
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config('kb.deferred_collections', '', true)")
        cursor.execute("SELECT kb_keyword_index_fill(%s)", [collection_id])
    transaction.on_commit(keyword_index_analyse)


def keyword_index_analyse() -> None:
    """Fresh statistics for the planner, as autovacuum takes them within a minute of a bulk write: a table last
    analysed while nearly empty plans the keyword stage as if a collection held one word (docs/DECISIONS.md)."""
    with connection.cursor() as cursor:
        for table in KEYWORD_TABLES:
            cursor.execute(f"ANALYZE {table}")
