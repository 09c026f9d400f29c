"""Advisory locks, spelled once, and the session of its own a lock that outlives a transaction is held on."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from django.db import connections


class Cursor(Protocol):
    """A DB-API cursor: Django's, or psycopg's on a connection of its own."""

    def execute(self, sql: str, params: list[Any], /) -> object: ...

    def fetchone(self) -> Any: ...


# An advisory lock's key: a 64-bit integer, or a text PostgreSQL hashes to one (hashtextextended(text, 0)).
LockKey = int | str


def advisory_key(name: str) -> int:
    """64 bits of a name's SHA-256, as a signed bigint: two names share a lock by a 1-in-2^64 chance."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


def _key_sql(key: LockKey) -> str:
    return "hashtextextended(%s, 0)" if isinstance(key, str) else "%s"


def advisory_xact_lock(cursor: Cursor, key: LockKey) -> None:
    """Wait for the lock; it is held until the transaction ends."""
    cursor.execute(f"SELECT pg_advisory_xact_lock({_key_sql(key)})", [key])


def advisory_try_lock(cursor: Cursor, key: LockKey) -> bool:
    """Take the session lock if nobody holds it (held until advisory_unlock or the session ends)."""
    cursor.execute(f"SELECT pg_try_advisory_lock({_key_sql(key)})", [key])
    return bool(cursor.fetchone()[0])


def advisory_unlock(cursor: Cursor, key: LockKey) -> None:
    cursor.execute(f"SELECT pg_advisory_unlock({_key_sql(key)})", [key])


def own_session(*, application_name: str = "") -> Any:
    """A new autocommit session to the default database, apart from Django's connection: a session lock taken
    on it outlives whatever the caller does with Django's (closing it, a rolled-back transaction), and closing
    it (or the process dying) releases every lock it holds. Session advisory locks need a direct connection or
    a session-mode pooler, not transaction pooling. `application_name` shows who holds what in pg_stat_activity.
    """
    wrapper = connections["default"]
    raw = wrapper.get_new_connection(wrapper.get_connection_params())
    try:
        raw.autocommit = True
        if application_name:
            raw.execute("SELECT set_config('application_name', %s, false)", [application_name])
    except BaseException:
        raw.close()
        raise
    return raw


@contextmanager
def session_lock(key: LockKey, *, application_name: str) -> Iterator[bool]:
    """Try the lock on a session of its own (own_session), held while the block runs; yields whether it was
    taken. The session closes when the block ends, which releases it."""
    raw = own_session(application_name=application_name)
    try:
        with raw.cursor() as cursor:
            taken = advisory_try_lock(cursor, key)
        yield taken
    finally:
        raw.close()


def session_lock_held(key: LockKey) -> bool:
    """Whether a live session holds the lock: taken for an instant on Django's connection, then let go."""
    with connections["default"].cursor() as cursor:
        if not advisory_try_lock(cursor, key):
            return True
        advisory_unlock(cursor, key)
    return False
