"""Rate limits hold across web processes: 1,500 searches in 15 s on one key, served by 2 gunicorn workers.

What runs: `manage.py serve` (what `make run` runs) with KB_WEB_WORKERS=2 on a var/ of its own (a fresh
embedded PostgreSQL, migrated first), on 127.0.0.1, with the default search rate (KB_THROTTLE_SEARCH,
600/min) unless --rate is given. One tenant with no collection and one viewer key: an allowed search then
answers at once (nothing to embed or rank), so the clients can send 1,500 in 15 s on 2 cores and the
run measures the limit, not the search.

What is measured: --clients threads (default 30), each with its own keep-alive connection, send POST
/api/search on that one key until --requests (default 1,500) have been sent or --seconds (default 15) have
passed. Reported: requests sent, answers by status (200 allowed, 429 refused), the rate's limit, and which
gunicorn worker processes answered (both must have, or the run proves nothing).

Run from the project root:  .venv/bin/python bench/rate_limit.py
Exit status 1 if more searches were allowed than the rate lets through in the run's window.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import subprocess
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from search_load import free_port, prepare_platform, wait_until_serving

ROOT = Path(__file__).resolve().parent.parent


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=30)
    parser.add_argument("--requests", type=int, default=1500)
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--rate", default="600/min", help="KB_THROTTLE_SEARCH for the run (default 600/min)")
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    var_dir = Path(tempfile.mkdtemp(prefix="kbbench-rate-"))
    port = free_port()
    env = prepare_platform(var_dir, port, KB_WEB_WORKERS="2", KB_THROTTLE_SEARCH=args.rate)
    python = str(ROOT / ".venv" / "bin" / "python")
    from accounts.issuing import api_key_create
    from accounts.keys import tenant_get_or_create
    from accounts.models import Role

    tenant = tenant_get_or_create(name="bench")
    key = api_key_create(tenant=tenant, role=Role.VIEWER, name="bench searcher").secret

    log = var_dir / "serve.log"
    with open(log, "ab") as out:
        platform = subprocess.Popen(
            [python, "manage.py", "serve"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    try:
        wait_until_serving(port, platform, log)

        statuses: Counter[int] = Counter()
        lock = threading.Lock()
        sent = 0
        started = time.monotonic()
        deadline = started + args.seconds
        body = json.dumps({"query": "where do bikes go", "around": 0})

        def client() -> None:
            nonlocal sent
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
            while time.monotonic() < deadline:
                with lock:
                    if sent >= args.requests:
                        return
                    sent += 1
                try:
                    connection.request("POST", "/api/search", body, headers)
                    answer = connection.getresponse()
                    answer.read()
                    code = answer.status
                except OSError:
                    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                    code = 0
                with lock:
                    statuses[code] += 1

        threads = [threading.Thread(target=client) for _ in range(args.clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.monotonic() - started
    finally:
        os.killpg(platform.pid, 15)
        platform.wait(timeout=60)

    workers = len(set(re.findall(r"Booting worker with pid: (\d+)", log.read_text())))
    limit = int(args.rate.split("/")[0])
    allowed = statuses[200]
    print(f"cores: {os.cpu_count()}; gunicorn workers booted: {workers}; rate: {args.rate}")
    print(f"sent {sent} searches on one key in {elapsed:.1f}s from {args.clients} clients")
    print(f"answers: {dict(sorted(statuses.items()))}; allowed {allowed} of at most {limit}")
    return 0 if allowed <= limit else 1


if __name__ == "__main__":
    raise SystemExit(main())
