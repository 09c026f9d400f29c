"""`make run`'s supervisor: the Procfile's processes (gunicorn and the cluster) as one unit.

Why not honcho: honcho stops its processes when it is asked to, but a SIGKILL of honcho (or
of `make`) leaves them running, and the next start then runs a second cluster on the same
queue. Here:

- one supervisor per machine: var/run/kbsite.lock (fcntl; the kernel drops it however we die);
- each process runs in its own session, so a terminal's Ctrl-C or a signal to the whole group
  reaches only the supervisor, which stops each process exactly once (a second SIGTERM during
  django-q2's shutdown deadlocks it, django-q2 issue #346);
- each process gets SIGTERM from the kernel when the supervisor dies, however it dies
  (PR_SET_PDEATHSIG), and the supervisor gets it when `make` dies; the cluster then stops at once, the
  processes it forked with it (infra/supervision.py);
- a cluster a dead supervisor left running anyway (it names that supervisor in its environment) is
  stopped by the next start, which says so;
- whatever is still running after KB_STOP_SECONDS is killed with its process group;
- the supervisor holds the embedded PostgreSQL while it runs; the last process to let go of it
  stops it, and dead holders are dropped from its list (infra/embedded_postgres.py).
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from infra.runlock import AlreadyRunning, run_lock
from infra.supervision import SUPERVISOR_VARIABLE, die_with_parent, stale_cluster, stale_cluster_stop

_LINE = re.compile(r"^([A-Za-z0-9_-]+):\s*(.+)$")


def read_procfile(path: Path, env: dict[str, str]) -> dict[str, list[str]]:
    """name -> argv, with $VARS expanded from `env` (no shell: the pid we keep is the process itself)."""
    processes = {}
    for line in path.read_text().splitlines():
        match = _LINE.match(line.strip())
        if match:
            command = re.sub(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", lambda m: env.get(m.group(1), ""), match.group(2))
            processes[match.group(1)] = shlex.split(command)
    return processes


class Command(BaseCommand):
    help = "Run the web server and the django-q2 cluster (the Procfile) as one unit; a second one refuses to start."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--procfile", default=str(Path(settings.BASE_DIR) / "Procfile"))

    def handle(self, *args: Any, **options: Any) -> None:
        die_with_parent()  # `make` killed: we stop too
        try:
            run_lock(settings.VAR_DIR, "kbsite")
        except AlreadyRunning as exc:
            raise CommandError(
                f"{exc}: stop it first (a second web server and cluster would share its queue)"
            ) from None
        self._stop_stale_cluster()

        stopping = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, lambda signum, frame: stopping.set())

        parent = os.getpid()
        env = {**os.environ, "PORT": settings.PORT, "PYTHONUNBUFFERED": "1", SUPERVISOR_VARIABLE: str(parent)}

        def in_own_session_dying_with_us() -> None:
            die_with_parent()
            if os.getppid() != parent:  # we died before the line above took effect
                os.kill(os.getpid(), signal.SIGTERM)

        children: dict[str, subprocess.Popen[bytes]] = {}
        for name, argv in read_procfile(Path(options["procfile"]), env).items():
            children[name] = subprocess.Popen(
                argv,
                cwd=settings.BASE_DIR,
                env=env,
                start_new_session=True,
                preexec_fn=in_own_session_dying_with_us,  # no threads run yet: safe
            )
            self.stdout.write(f"{name}: pid {children[name].pid}: {' '.join(argv)}")
        self.stdout.write(
            f"kbsite is running on http://127.0.0.1:{env['PORT']}/ (supervisor pid {parent}); Ctrl-C stops all"
        )
        self.stdout.flush()

        failed = None
        while not stopping.wait(0.5):
            failed = next((name for name, child in children.items() if child.poll() is not None), None)
            if failed:
                self.stderr.write(f"{failed} exited with status {children[failed].returncode}; stopping the rest")
                break
        self._stop(children)
        if failed:
            sys.exit(1)

    def _stop_stale_cluster(self) -> None:
        # We hold the supervisor's lock: a cluster that names a supervisor was left by one that died without
        # stopping it. Started by hand, a cluster names none and is left alone (run_cluster then refuses).
        stale = stale_cluster(settings.VAR_DIR)
        if stale is None:
            return
        self.stdout.write(
            f"stopping the cluster (pid {stale.pid}) left running by a supervisor that died (pid {stale.supervisor})"
        )
        self.stdout.flush()
        if not stale_cluster_stop(settings.VAR_DIR, stale, grace=settings.KB_STOP_SECONDS):
            raise CommandError(f"the cluster (pid {stale.pid}) left by a dead supervisor did not stop: stop it first")

    def _stop(self, children: dict[str, subprocess.Popen[bytes]]) -> None:
        for child in children.values():
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)  # once: see the module's docstring
        deadline = time.monotonic() + settings.KB_STOP_SECONDS
        while time.monotonic() < deadline and any(child.poll() is None for child in children.values()):
            time.sleep(0.2)
        for name, child in children.items():
            if child.poll() is None:
                self.stderr.write(f"{name} did not stop in time; killing it")
            # The leader may be gone while something it started (a worker) still runs: its group goes too.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.pid, signal.SIGKILL)
            child.wait()
        self.stdout.write("kbsite stopped")
