"""django-q2's Redis broker, made reliable: a task a cluster has taken stays visible until it is acknowledged.

django-q2's own Redis broker pops a task off the queue (BLPOP): from then on it exists only in the memory of
the cluster that took it, so a worker or a whole machine killed mid-ingestion loses it, and nothing can tell
that document from one being read. This one moves each task atomically (BLMOVE) from the shared queue into
the list of the cluster that took it (`<queue>:taken:<cluster id>`); the cluster's monitor removes it when the
task is acknowledged (done, or failed for good: max_attempts is 1). A worker that starts an ingestion marks
the task started (`<queue>:started`).

Whether a cluster is alive is told by PostgreSQL, like an ingestion's lease: `manage.py run_cluster` holds a
session advisory lock named after its cluster id (`cluster_alive`) for as long as it runs, on a connection of
its own, and the server drops it the moment the process dies. So the recovery of any surviving cluster, on any
machine (collections_app/services/recovery.py), reads `taken_tasks()`: each task with the cluster that took it,
whether that cluster is alive, and whether a worker started it; and requeues the documents of the dead ones.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django_q.brokers.redis_broker import Redis

from infra.locks import session_lock, session_lock_held

logger = logging.getLogger(__name__)

# This process's cluster: set by `manage.py run_cluster` before django-q2 forks its pusher, workers and monitor,
# which inherit it (and carry it when pickled). Processes that only queue tasks (the web server) never take one.
CLUSTER_ID = uuid.uuid4().hex
# Q_CLUSTER's broker_class when KB_REDIS_URL is set (kbsite/settings.py).
REDIS_BROKER = "infra.redis_broker.ReliableRedis"


def _alive_key(cluster_id: str) -> str:
    return f"kbsite-cluster:{cluster_id}"


class ReliableRedis(Redis):
    """The Redis broker, with a list of taken tasks per cluster (Q_CLUSTER's broker_class when KB_REDIS_URL is set)."""

    def __init__(self, list_key: str | None = None) -> None:
        self.cluster_id = CLUSTER_ID
        super().__init__(list_key=list_key)

    def __getstate__(self) -> tuple[Any, ...]:
        return (*super().__getstate__(), self.cluster_id)

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        *rest, self.cluster_id = state
        super().__setstate__(tuple(rest))

    @property
    def taken_key(self) -> str:
        return f"{self.list_key}:taken:{self.cluster_id}"

    @property
    def started_key(self) -> str:
        return f"{self.list_key}:started"

    def dequeue(self) -> list[tuple[bytes, bytes]] | None:
        task = self.connection.blmove(self.list_key, self.taken_key, 1, "LEFT", "RIGHT")
        if task:
            return [(task, task)]  # the payload is its own acknowledgement id: removed from the list by value
        return None

    def acknowledge(self, task_id: Any) -> None:
        pipe = self.connection.pipeline()
        pipe.lrem(self.taken_key, 1, task_id)
        pipe.srem(self.started_key, task_id)
        pipe.execute()

    def fail(self, task_id: Any) -> None:
        self.acknowledge(task_id)  # a payload nobody can read (another key's signature): never handed out again

    def lock_size(self) -> int:
        return int(self.connection.llen(self.taken_key))

    def task_started(self, task_id: Any) -> None:
        self.connection.sadd(self.started_key, task_id)

    def forget(self, where: str, payload: bytes) -> None:
        """Remove one task from a cluster's taken list (or the queue), and its started mark."""
        pipe = self.connection.pipeline()
        pipe.lrem(where, 1, payload)
        pipe.srem(self.started_key, payload)
        pipe.execute()

    def taken_tasks(self) -> Iterator[TakenTask]:
        """Every task in the queue or taken by a cluster: where it is, whether that cluster lives, started or not."""
        started = set(self.connection.smembers(self.started_key))
        for payload in self.connection.lrange(self.list_key, 0, -1):
            yield TakenTask(where=self.list_key, payload=payload, waiting=True, alive=True, started=False)
        prefix = f"{self.list_key}:taken:"
        for key in self.connection.scan_iter(match=f"{prefix}*", count=100):
            name = key.decode() if isinstance(key, bytes) else str(key)
            alive = cluster_alive(cluster_id=name[len(prefix) :])
            for payload in self.connection.lrange(name, 0, -1):
                yield TakenTask(where=name, payload=payload, waiting=False, alive=alive, started=payload in started)


@dataclass(frozen=True)
class TakenTask:
    where: str  # the queue, or the taken list of the cluster that took it
    payload: bytes
    waiting: bool  # still in the shared queue: some cluster will take it
    alive: bool  # the cluster that took it still runs
    started: bool  # a worker started it


@contextmanager
def cluster_alive_lease() -> Iterator[None]:
    """Hold this cluster's liveness lock while it runs (a session advisory lock on a connection of its own)."""
    with session_lock(_alive_key(CLUSTER_ID), application_name=f"kbsite-cluster {CLUSTER_ID}") as taken:
        if not taken:
            raise RuntimeError("another process holds this cluster's id")
        yield


def cluster_alive(*, cluster_id: str) -> bool:
    """Whether the cluster of this id still runs (its lock is held), on any machine."""
    if cluster_id == CLUSTER_ID:
        return True
    return session_lock_held(_alive_key(cluster_id))
