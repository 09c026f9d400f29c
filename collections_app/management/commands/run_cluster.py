"""The django-q2 cluster as `make run` runs it: one per machine, recovering ingestions that died."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import time
from types import FrameType
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import close_old_connections
from django_q.cluster import Cluster

from collections_app.hooks import recovery_sweeps
from collections_app.services.collection_file import collection_files_sweep
from collections_app.services.deletion import deletions_resume
from collections_app.services.documents import trash_purge_expired
from collections_app.services.recovery import documents_recover, recovery_reads_redis
from collections_app.services.retired_paragraphs import retired_paragraphs_prune
from infra.redis_broker import cluster_alive_lease
from infra.runlock import AlreadyRunning, run_lock
from infra.supervision import death_signal, forks_die_with_their_parent

logger = logging.getLogger("collections_app.recovery")
# Pruning retired paragraphs counts days: once an hour is plenty, and keeps a 30-second round cheap.
PRUNE_EVERY_SECONDS = 3600


class Command(BaseCommand):
    help = (
        "Run the django-q2 cluster (one per machine: a second one refuses to start). At start and every "
        "KB_RECOVERY_SECONDS it requeues documents left `parsing` by an ingestion that died."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--wait",
            type=float,
            default=0,
            help="seconds to wait for a cluster that is stopping to let go before refusing (default 0)",
        )

    _pruned_at: float | None = None

    def handle(self, *args: Any, **options: Any) -> None:
        # Started by a supervisor to die with it (`manage.py serve` sets the death signal): a death signal
        # with another parent than the one we started with means that supervisor was killed.
        supervisor = os.getppid() if death_signal() else None
        try:
            run_lock(settings.VAR_DIR, "cluster", wait=options["wait"])
        except AlreadyRunning as exc:
            raise CommandError(f"{exc}: not starting a second cluster beside it") from None
        # Before the workers are forked: they and their embedding threads inherit it.
        os.nice(max(0, min(19, settings.KB_CLUSTER_NICE)))
        with contextlib.ExitStack() as alive:
            if recovery_reads_redis():
                # Other machines' clusters tell this one alive by its lock (infra/redis_broker.py); held by this
                # process, dropped by PostgreSQL the moment it dies, whatever kills it.
                alive.enter_context(cluster_alive_lease())
            self._run(supervisor)

    def _run(self, supervisor: int | None) -> None:
        from django_q.cluster import Cluster

        # On the ORM broker this cluster is the only one on its queue (the lock above), so every task a cluster
        # had taken and not finished belongs to one that is gone: requeue those documents now. (On Redis, each
        # taken task's cluster says whether it is alive.)
        self._recover(cluster_start=True)
        cluster = Cluster()
        stopping = threading.Event()

        def orphaned() -> bool:
            return supervisor is not None and os.getppid() != supervisor

        def stop(signum: int, frame: FrameType | None) -> None:
            # Only set a flag: django-q2's own handler stops the cluster inside the handler, and a second
            # signal arriving meanwhile deadlocks it (django-q2 issue #346). The loop below stops it once.
            stopping.set()
            if orphaned():
                # Our supervisor was killed: nobody waits for a graceful stop, which would last as long as the
                # document being ingested (hours), holding the lock the next start needs. A graceful stop
                # already under way is cut short too (its join returns when the sentinel is gone).
                self._kill_sentinel(cluster)

        # Cluster() installed its handlers; ours replace them.
        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        # The sentinel django-q2 forks, and the workers it forks, die with their parent: never an orphan worker.
        forks_die_with_their_parent()
        cluster.start()
        while not stopping.wait(settings.KB_RECOVERY_SECONDS):
            if not cluster.sentinel.is_alive():
                logger.error("the cluster's sentinel died; stopping")
                sys.exit(1)
            self._recover(cluster_start=False)
        if orphaned():
            self._kill_sentinel(cluster)
            cluster.sentinel.join()
            logger.warning(
                "the supervisor died: cluster stopped at once; the next start requeues the documents it was ingesting"
            )
        else:
            cluster.stop()

    @staticmethod
    def _kill_sentinel(cluster: Cluster) -> None:
        """SIGKILL the sentinel; its workers, pusher and monitor follow it (their death signal)."""
        if cluster.sentinel is not None and cluster.sentinel.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(cluster.sentinel.pid, signal.SIGKILL)

    def _recover(self, *, cluster_start: bool) -> None:
        close_old_connections()
        try:
            documents_recover(cluster_start=cluster_start)
            for sweep in recovery_sweeps():  # other apps' leftovers of dead workers (collections_app/hooks.py)
                sweep()
            collection_files_sweep()  # imports and exports whose worker died: failed, saying what to do
            if self._pruned_at is None or time.monotonic() - self._pruned_at >= PRUNE_EVERY_SECONDS:
                self._pruned_at = time.monotonic()
                pruned = retired_paragraphs_prune()
                if pruned:
                    logger.info("pruned %d retired paragraphs", pruned)
                purged = trash_purge_expired()  # documents in the trash longer than KB_TRASH_DAYS
                if purged:
                    logger.info("purged %d document(s) from the trash", purged)
                # Deleted collections and tenants whose removal died with its worker (services/deletion.py); at
                # the cluster's start too, so a removal cut short by a crash goes on as soon as a cluster runs.
                deletions_resume()
        except Exception:
            # A database hiccup must not take the cluster down; the next round tries again.
            logger.exception("recovery round failed")
        finally:
            close_old_connections()
