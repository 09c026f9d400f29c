"""Which database answers a read: the primary, or a streaming read replica (KB_DATABASE_REPLICA_URLS).

The rule, in one place:

- **Writes always go to the primary** (`default`), and so does every read outside a read-only call: the
  admin, the management API, uploads, builds, audit rows, authentication and rate limits (they must read
  their own writes, or a revoked key would live on for the replica's lag).
- **A read-only agent call** (a search through the API or MCP, the corpus map, MCP's collections) runs its
  reads inside `read_only_call()`: the ORM's reads are routed to the replica it chose (`ReplicaRouter`), and
  raw SQL asks `read_connection()` for the same one. What the call records afterwards (the search's audit
  row, its model calls) is a write, so it goes to the primary.
- **A replica is used only when it is fresh.** Before a call, the chosen replica is asked how far behind it
  replays (`replica_lag_seconds`); one that is down, not streaming with unreplayed WAL, or further behind
  than KB_REPLICA_MAX_LAG_SECONDS is passed over, and a replica that fails in the middle of a call has the
  call run again on the primary. With no usable replica the call falls back to the primary, or, with
  KB_REPLICA_FALLBACK=refuse, is refused (503) rather than answered from a server it was told to spare.
  `Served` says which database answered and, on a replica, its replay lag: the search trace carries it, by
  alias ("replica-1"), never by address.

A replica replays each of the primary's transactions whole, so a collection cut over in one transaction
appears on a replica at once or not yet, never half (tests/ops/test_replicas.py shows it).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper

from infra.errors import DomainError

logger = logging.getLogger(__name__)

T = TypeVar("T")

REPLICA_PREFIX = "replica-"
# A replica that failed is not asked again for this long (per process): a stopped standby costs one failed
# connection attempt per interval, not one per search.
DOWN_FOR_SECONDS = 10.0

# The alias the current read-only call reads from (None: the primary, as everywhere else).
_reading: ContextVar[str | None] = ContextVar("kbsite_reading", default=None)
_served: ContextVar[Served | None] = ContextVar("kbsite_served", default=None)
_down_until: dict[str, float] = {}
_down_lock = threading.Lock()

# How far behind a standby replays: nothing when it has replayed all it received while streaming, else the age
# of the last transaction it replayed (which is large on an idle primary too: then it is not trusted, rightly,
# when the stream is broken, and a stream that works has replayed all it got). NULL on a primary.
_LAG_SQL = """
    SELECT pg_is_in_recovery(),
           CASE
             WHEN NOT pg_is_in_recovery() THEN NULL
             WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn()
                  AND EXISTS (SELECT 1 FROM pg_stat_wal_receiver WHERE status = 'streaming') THEN 0
             ELSE coalesce(extract(epoch FROM now() - pg_last_xact_replay_timestamp()), 'Infinity')
           END
"""


class ReplicaUnavailable(DomainError):
    """No read replica may answer this call and the deployment said not to fall back (KB_REPLICA_FALLBACK)."""

    meaning = "unavailable"


@dataclass(frozen=True)
class Served:
    """Which database answered a read-only call: its alias, its replay lag (replicas), why not a replica."""

    alias: str
    lag_seconds: float | None = None
    fallback: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"served_by": "primary" if self.alias == DEFAULT_DB_ALIAS else self.alias}
        if self.lag_seconds is not None:
            out["replay_lag_seconds"] = round(self.lag_seconds, 3)
        if self.fallback:
            out["fallback"] = self.fallback
        return out


def replica_aliases() -> list[str]:
    """The replicas' aliases, in the order KB_DATABASE_REPLICA_URLS lists them (settings.py declares them)."""
    return [alias for alias in settings.DATABASES if alias.startswith(REPLICA_PREFIX)]


class ReplicaRouter:
    """Django's router: reads inside `read_only_call()` from its replica, everything else from the primary."""

    def db_for_read(self, model: type, **hints: Any) -> str:
        return _reading.get() or DEFAULT_DB_ALIAS

    def db_for_write(self, model: type, **hints: Any) -> str:
        return DEFAULT_DB_ALIAS

    def allow_relation(self, obj1: object, obj2: object, **hints: Any) -> bool:
        return True  # every database holds the same rows: a replica is a copy of the primary

    def allow_migrate(self, db: str, app_label: str, model_name: str | None = None, **hints: Any) -> bool:
        return db == DEFAULT_DB_ALIAS  # a replica replays the primary's migrations


def read_alias() -> str:
    """The database the current call reads from."""
    return _reading.get() or DEFAULT_DB_ALIAS


def read_connection() -> BaseDatabaseWrapper:
    """The connection raw SQL of a read-only call reads with (the primary's outside one)."""
    return connections[read_alias()]


def read_only_call(call: Callable[[], T]) -> tuple[T, Served]:
    """Run `call` (reads only) on a fresh replica when there is one: its result, and which database served it.

    A replica that fails during the call (stopped, restarted, cut off) has the call run again on the primary:
    the call only reads, so running it twice is safe, and the answer says it fell back and why.
    """
    if not replica_aliases():
        return call(), Served(DEFAULT_DB_ALIAS)  # one database: nothing to choose, and nothing changes
    outer = _served.get()
    if outer is not None:  # already inside one (MCP's collections reading maps): the same database
        return call(), outer
    served = _choose()
    try:
        return _run(call, served), served
    except DatabaseError as exc:
        if served.alias == DEFAULT_DB_ALIAS:
            raise
        # Stopped, cut off, or a query cancelled by a conflict with replay: the primary answers instead. (SQL that
        # is wrong fails there too, and is raised from there.)
        failed, reason = served.alias, f"{served.alias} failed during the call ({type(exc).__name__})"
    logger.warning("read replica %s failed during a read-only call; answering from the primary", failed)
    if _failed_on_replica(failed):
        _mark_down(failed)
    served = _fallback(reason)
    return _run(call, served), served


def served_now() -> Served:
    """Which database the current call reads from (the primary outside a read-only call)."""
    return _served.get() or Served(DEFAULT_DB_ALIAS)


def _run(call: Callable[[], T], served: Served) -> T:
    reading = _reading.set(None if served.alias == DEFAULT_DB_ALIAS else served.alias)
    serving = _served.set(served)
    try:
        with _one_snapshot(served.alias):
            return call()
    finally:
        _served.reset(serving)
        _reading.reset(reading)


@contextmanager
def _one_snapshot(alias: str) -> Iterator[None]:
    """Every read of the call from one snapshot (a read-only REPEATABLE READ transaction).

    Statement by statement, a replica (or the primary) may replay a cutover between the retrieval that found a
    document's paragraphs and the query that reads their text: the call would see half of it. One snapshot sees
    the cutover whole or not at all. Inside a transaction already under way (a test's), it is that one's.
    """
    if connections[alias].in_atomic_block:
        yield
        return
    with transaction.atomic(using=alias):
        with connections[alias].cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        yield


def _fallback(reason: str) -> Served:
    if settings.KB_REPLICA_FALLBACK == "refuse":
        raise ReplicaUnavailable(f"no read replica can answer now ({reason}) and KB_REPLICA_FALLBACK is refuse")
    return Served(DEFAULT_DB_ALIAS, fallback=reason)


def _choose() -> Served:
    """The first replica that answers and is fresh enough; the primary, with why, when none is."""
    reasons = []
    for alias in replica_aliases():
        if _is_down(alias):
            reasons.append(f"{alias} is down")
            continue
        try:
            lag = replica_lag_seconds(alias)
        except DatabaseError as exc:
            logger.warning("read replica %s cannot be reached (%s); passing it over", alias, type(exc).__name__)
            _close(alias)
            _mark_down(alias)
            reasons.append(f"{alias} is down")
            continue
        if lag is None:
            reasons.append(f"{alias} is not in recovery (not a replica)")
        elif lag > settings.KB_REPLICA_MAX_LAG_SECONDS:
            reasons.append(f"{alias} lags {_seconds(lag)} (KB_REPLICA_MAX_LAG_SECONDS is {_seconds(lag_bound())})")
        else:
            return Served(alias, lag_seconds=lag)
    return _fallback("; ".join(reasons))


def lag_bound() -> float:
    return float(settings.KB_REPLICA_MAX_LAG_SECONDS)


def replica_lag_seconds(alias: str) -> float | None:
    """How many seconds the replica's replay is behind (0: caught up); None when it is not a replica."""
    with connections[alias].cursor() as cursor:
        cursor.execute(_LAG_SQL)
        in_recovery, lag = cursor.fetchone()
    if not in_recovery:
        return None
    return float(lag)


@contextmanager
def reading_from(alias: str) -> Iterator[None]:
    """Route this block's reads to `alias` (tests and benches that pin a database)."""
    token = _reading.set(None if alias == DEFAULT_DB_ALIAS else alias)
    try:
        yield
    finally:
        _reading.reset(token)


def _failed_on_replica(alias: str) -> bool:
    """Whether the replica's connection is broken (the server is gone, not only one query); closed if so."""
    wrapper = connections[alias]
    try:
        broken = wrapper.connection is None or not wrapper.is_usable()
    except DatabaseError:
        broken = True
    if broken:
        _close(alias)
    return broken


def _close(alias: str) -> None:
    try:
        connections[alias].close()
    except DatabaseError:
        connections[alias].connection = None


def _is_down(alias: str) -> bool:
    with _down_lock:
        return _down_until.get(alias, 0.0) > time.monotonic()


def _mark_down(alias: str) -> None:
    with _down_lock:
        _down_until[alias] = time.monotonic() + DOWN_FOR_SECONDS


def _seconds(value: float) -> str:
    return f"{value:.1f} s"
