"""The first search a fresh web process answers, against its tenth: with and without the start-up warm-up.

What runs: gunicorn exactly as `make run` starts it (kbsite/gunicorn_conf.py, one worker) on a var/ of its
own (a fresh embedded PostgreSQL, migrated first), on 127.0.0.1. Before it starts, this script makes a tenant,
a viewer key and a small collection in process (one handbook document in English and one in German, read
and embedded here, no cluster needed).

What is measured, once with KB_WARM_EMBEDDING=0 and once with it on (the web server's default): a new gunicorn
is started, the script waits until it serves and then --settle seconds more (a person does not search in the
very second a server starts; with the warm-up on, its log line says when the worker is ready), then asks
--searches questions (default 10) one after another, each a different question, and prints each latency. The
first search's trace says which stages took the time.

Run from the project root:  .venv/bin/python bench/first_search.py [--settle 20 --searches 10]
"""

from __future__ import annotations

import argparse
import io
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from search_load import ROOT, Api, free_port, prepare_platform, wait_until_serving

QUESTIONS = [
    "how many days of annual leave do I get?",
    "where do I park my bicycle?",
    "can I work from home on Fridays?",
    "who approves a purchase over 5,000 euros?",
    "Wie viele Urlaubstage kann ich übertragen?",
    "what happens when I am ill for more than three days?",
    "how do I book a meeting room?",
    "Wer genehmigt Sonderurlaub?",
    "is there a bonus for referring a new colleague?",
    "when are salaries paid?",
    "how are travel expenses reimbursed?",
    "what is the notice period?",
]

HANDBOOK = b"""# Staff handbook

## Annual leave

Every employee has 30 working days of annual leave a year. Unused days may be carried over until 31 March.

## Working from home

Employees may work from home up to two days a week, agreed with their team lead.

## Bicycles

Bicycles are parked in the garage under the east wing; the door opens with your badge.

## Purchases

A purchase over 5,000 euros is approved by the finance director before the order is placed.

## Salaries

Salaries are paid on the last working day of each month.
"""

HANDBUCH = """# Mitarbeiterhandbuch

## Urlaub

Nicht genommene Urlaubstage können bis zum 31. März des Folgejahres übertragen werden.

## Sonderurlaub

Sonderurlaub für die eigene Hochzeit beträgt zwei Tage und wird von der Personalabteilung genehmigt.

## Krankheit

Wer länger als drei Tage krank ist, legt ab dem vierten Tag eine ärztliche Bescheinigung vor.
""".encode()


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--searches", type=int, default=10, help="searches per fresh web process (default 10)")
    parser.add_argument("--settle", type=float, default=20, help="seconds between serving and the first search")
    parser.add_argument("--rounds", type=int, default=1, help="fresh web processes per mode (default 1)")
    return parser.parse_args()


def seed() -> str:
    """A tenant, a viewer key and a collection of two read documents; returns the key."""
    from accounts.issuing import api_key_create
    from accounts.keys import tenant_get_or_create
    from accounts.models import Role
    from collections_app.services.collections import collection_create
    from collections_app.services.documents import document_create, document_ingest

    tenant = tenant_get_or_create(name="bench-first-search")
    collection = collection_create(tenant=tenant, name="handbook")
    for name, content in (("handbook.md", HANDBOOK), ("handbuch.md", HANDBUCH)):
        document = document_create(collection=collection, filename=name, content=io.BytesIO(content), queue=False)
        document_ingest(document_id=str(document.document.pk))
    return api_key_create(tenant=tenant, role=Role.VIEWER, name="bench searcher").secret


def one_process(env: dict[str, str], port: int, key: str, args: argparse.Namespace, log: Path) -> list[dict]:
    """Start a fresh gunicorn, search --searches times, stop it; each search's latency and trace."""
    command = [str(ROOT / ".venv" / "bin" / "gunicorn"), "--config", "kbsite/gunicorn_conf.py", "kbsite.wsgi"]
    with open(log, "ab") as out:
        web = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_until_serving(port, web, log)
        time.sleep(args.settle)
        api, seen = Api(port, key), []
        for question in (QUESTIONS * 2)[: args.searches]:
            began = time.perf_counter()
            status, answer = api.json("POST", "/api/search", {"query": question})
            seen.append({"ms": (time.perf_counter() - began) * 1000, "status": status, "trace": answer.get("trace")})
        return seen
    finally:
        web.send_signal(signal.SIGTERM)
        web.wait(timeout=60)


def slowest_stages(trace: list[dict] | None) -> str:
    stages = sorted(trace or [], key=lambda s: -float(s.get("ms") or 0))[:3]
    return ", ".join(f"{s['stage']} {float(s['ms']):.0f} ms" for s in stages)


def main() -> int:
    args = parse_args()
    var_dir = Path(tempfile.mkdtemp(prefix="kbbench-first-"))
    port = free_port()
    print(f"migrating a fresh database under {var_dir.name} ...", flush=True)
    env = prepare_platform(var_dir, port, KB_WEB_WORKERS="1")
    key = seed()
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}", flush=True)
    failed = False
    for warm in ("0", "1"):
        for round_ in range(args.rounds):
            seen = one_process({**env, "KB_WARM_EMBEDDING": warm}, port, key, args, var_dir / f"web-{warm}.log")
            failed = failed or any(s["status"] != 200 for s in seen)
            latencies = [s["ms"] for s in seen]
            rest = sorted(latencies[1:])
            print(
                f"KB_WARM_EMBEDDING={warm} round {round_ + 1}: first {latencies[0]:.0f} ms, "
                f"tenth {latencies[min(9, len(latencies) - 1)]:.0f} ms, median of the others "
                f"{rest[len(rest) // 2]:.0f} ms; all {[round(x) for x in latencies]}",
                flush=True,
            )
            print(f"  first search's slowest stages: {slowest_stages(seen[0]['trace'])}", flush=True)
    warm_lines = [line for line in (var_dir / "web-1.log").read_text().splitlines() if "web worker" in line]
    print("log:", *warm_lines[:2], sep="\n  ")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
