"""A 60 MB text file through ingestion: chunking time, peak worker memory, embedding rate (measured and estimated).

1. Writes a text file of --size-mb (default 60) MB: SciFact abstracts (title line, blank line, abstract, blank
   line), cycled with their sentences shuffled until the size is reached, so the text is real English prose
   with realistic paragraph lengths. `--format md` writes each title as a `## ` heading instead.
2. In a temporary tenant and collection, uploads it with `document_create` (queue=False: no task is queued).
3. Runs the ingestion of that document in a fresh worker-like process (this script with --worker), so the
   process's peak RSS is the worker's alone:
   (with DEBUG off, as a production worker runs)
   a. loads the embedding model (every worker holds it; its RSS is reported as the baseline);
   b. chunking, timed: `document_stage_stream` — the streamed parse, chunk, language labels and staging to disk
      that `document_ingest` runs for a text file over KB_STREAM_TEXT_ABOVE;
   c. embedding, timed over a bounded sample (--sample paragraphs, default 320) with the real model,
      staged as ingestion stages them: chunks/s;
   d. the other paragraphs get stand-in vectors (the sample's vectors plus noise, renormalised) — embedding
      them for real would take hours — and then the publish step runs for real (`document_publish`: one
      transaction, INSERTs of 500, keyword index, build record), timed. `--no-publish` skips c's stand-ins
      and d.
4. Prints what was measured and what is estimated (whole embedding = paragraphs / measured rate), then
   deletes the temporary tenant (cascade) and its stored file, also on failure or Ctrl-C.

Run from the project root:  .venv/bin/python bench/big_text.py [--size-mb 60] [--sample 320] [--format txt]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from _common import setup_django

DEFAULT_CORPUS = Path("/work/shared/eval/scifact/corpus.jsonl")
MiB = 1024 * 1024


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=float, default=60, help="size of the text file in MiB (default: 60)")
    parser.add_argument("--format", choices=["txt", "md"], default="txt", help="file type (default: txt)")
    parser.add_argument("--sample", type=int, default=320, help="paragraphs embedded for real (default: 320)")
    parser.add_argument("--no-publish", action="store_true", help="skip the stand-in vectors and the publish step")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="BEIR corpus.jsonl (read-only)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)  # internal: the worker-like process, a document id
    return parser.parse_args()


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux


def write_text(path: Path, size: int, fmt: str, corpus: Path) -> int:
    rng = random.Random(7)
    abstracts: list[tuple[str, str]] = []
    if corpus.exists():
        with corpus.open() as lines:
            for line in lines:
                row = json.loads(line)
                if row.get("text"):
                    abstracts.append((row.get("title", ""), row["text"]))
    if not abstracts:  # no corpus: plain generated sentences
        words = [
            "the",
            "of",
            "and",
            "to",
            "in",
            "a",
            "is",
            "that",
            "for",
            "it",
            "as",
            "was",
            "with",
            "be",
            "by",
            "on",
            "not",
            "he",
            "this",
            "are",
            "or",
            "his",
            "from",
            "at",
        ]
        abstracts = [("Section", " ".join(rng.choice(words) for _ in range(200)) + ".") for _ in range(2000)]
    written = 0
    with path.open("w", encoding="utf-8") as out:
        while written < size:
            rng.shuffle(abstracts)
            for title, text in abstracts:
                sentences = text.split(". ")
                rng.shuffle(sentences)
                heading = f"## {title}" if fmt == "md" else title
                piece = f"{heading}\n\n{'. '.join(sentences)}\n\n"
                out.write(piece)
                written += len(piece.encode("utf-8"))
                if written >= size:
                    break
    return written


def worker(document_id: str, sample: int, publish: bool) -> dict[str, float | int | str]:
    """The ingestion of one document, phase by phase, in this (fresh) process."""
    setup_django()
    logging.disable(logging.INFO)
    import numpy as np
    from django.conf import settings

    from collections_app.models import Chunk, Document
    from collections_app.services.documents import Staging, document_publish, document_stage_stream, document_streams
    from embedding import get_embedder

    figures: dict[str, float | int | str] = {"rss_start_mb": rss_mb()}
    document = Document.objects.select_related("collection").get(pk=document_id)
    collection = document.collection
    if not document_streams(document):
        raise SystemExit("this document is not read as a stream: is it over KB_STREAM_TEXT_ABOVE?")
    embedder = get_embedder(collection.embedding_alias)
    embedder.embed_passages(["warm-up: the model is loaded before anything is timed"])
    figures["rss_model_loaded_mb"] = rss_mb()

    with Staging() as staging:
        started = time.perf_counter()
        document_stage_stream(document, collection, staging)
        figures["chunk_s"] = time.perf_counter() - started
        figures["chunks"] = staging.count
        figures["rss_after_chunking_mb"] = rss_mb()
        figures["peak_rss_after_chunking_mb"] = peak_rss_mb()

        batch = settings.KB_EMBED_BATCH
        sampled: list[list[float]] = []
        drafts = staging.drafts()
        started = time.perf_counter()
        while len(sampled) < min(sample, staging.count):
            part = [next(drafts) for _ in range(min(batch, staging.count - len(sampled), sample - len(sampled)))]
            vectors = embedder.embed_passages([d.embedding_text() for d in part])
            staging.add_vectors(vectors)
            sampled += vectors
        figures["embed_sample"] = len(sampled)
        figures["embed_s"] = time.perf_counter() - started
        figures["embed_rate"] = len(sampled) / (time.perf_counter() - started)
        figures["embed_batch"] = batch
        figures["peak_rss_after_embedding_mb"] = peak_rss_mb()
        if not publish:
            return figures

        rng = np.random.default_rng(7)
        base = np.asarray(sampled, dtype=np.float32)
        left = staging.count - len(sampled)
        while left:
            n = min(1000, left)
            noisy = base[rng.integers(0, len(base), n)] + rng.normal(0, 0.01, (n, base.shape[1])).astype(np.float32)
            noisy /= np.linalg.norm(noisy, axis=1, keepdims=True)
            staging.add_vectors(noisy.tolist())
            left -= n
        started = time.perf_counter()
        document_publish(document, collection, staging)
        figures["publish_s"] = time.perf_counter() - started
        figures["published"] = Chunk.objects.filter(document=document).count()
        figures["status"] = Document.objects.get(pk=document.pk).status
    figures["peak_rss_mb"] = peak_rss_mb()
    return figures


def main() -> int:
    args = parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.sample, not args.no_publish)))
        return 0
    setup_django()
    logging.disable(logging.INFO)
    from django.conf import settings

    from accounts.models import Tenant
    from collections_app.services.collections import collection_create
    from collections_app.services.documents import document_create

    load = os.getloadavg()
    print(f"{os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    folder = Path(tempfile.mkdtemp(prefix="kb-big-text-"))
    tenant = Tenant.objects.create(name=f"bench-bigtext-{uuid.uuid4().hex[:10]}")
    try:
        path = folder / f"big.{args.format}"
        size = write_text(path, int(args.size_mb * MiB), args.format, args.corpus)
        print(f"text file: {size / MiB:.1f} MiB ({size} bytes), {args.format}")
        collection = collection_create(tenant=tenant, name="big text")
        with path.open("rb") as content:
            document = document_create(collection=collection, filename=path.name, content=content, queue=False).document
        command = [sys.executable, __file__, "--worker", str(document.pk), "--sample", str(args.sample)]
        if args.no_publish:
            command.append("--no-publish")
        # A worker runs with DEBUG off, as in production: with DEBUG on, Django keeps the SQL of the last
        # 9,000 queries, and each INSERT of 500 paragraphs with their vectors is megabytes of it.
        env = {**os.environ, "KB_DEBUG": "0"}
        answer = subprocess.run(command, check=False, capture_output=True, text=True, env=env)
        if answer.returncode:
            print(answer.stderr[-3000:])
            return 1
        figures = json.loads(answer.stdout.strip().splitlines()[-1])
        report(figures, size, args)
    finally:
        tenant_id = tenant.pk
        tenant.delete()
        shutil.rmtree(Path(settings.MEDIA_ROOT) / str(tenant_id), ignore_errors=True)
        shutil.rmtree(folder, ignore_errors=True)
        print(f"temporary tenant {tenant.name} and the text file deleted")
    return 0


def report(f: dict, size: int, args: argparse.Namespace) -> None:
    chunks = f["chunks"]
    print("\nMEASURED")
    print(
        f"  chunking (stream parse + chunk + language labels + staging): {f['chunk_s']:.1f} s for {chunks} paragraphs"
    )
    print(f"    = {size / MiB / f['chunk_s']:.1f} MiB/s")
    print(
        f"  worker RSS: {f['rss_start_mb']:.0f} MB at start, {f['rss_model_loaded_mb']:.0f} MB with the model loaded,"
    )
    print(
        f"    {f['rss_after_chunking_mb']:.0f} MB after chunking; peak so far {f['peak_rss_after_chunking_mb']:.0f} MB"
    )
    print(
        f"  embedding: {f['embed_sample']} paragraphs in {f['embed_s']:.1f} s = {f['embed_rate']:.2f} paragraphs/s "
        f"(batches of {f['embed_batch']}); peak RSS {f['peak_rss_after_embedding_mb']:.0f} MB"
    )
    if "publish_s" in f:
        print(
            f"  publish (one transaction, {f['published']} paragraphs, stand-in vectors for all but the sample): "
            f"{f['publish_s']:.1f} s; document {f['status']}"
        )
        print(f"  peak worker RSS over the whole run: {f['peak_rss_mb']:.0f} MB")
    print("\nESTIMATED (not measured)")
    embed_total = chunks / f["embed_rate"]
    print(f"  embedding all {chunks} paragraphs at the measured rate: {embed_total / 3600:.1f} h")
    total = f["chunk_s"] + embed_total + f.get("publish_s", 0)
    print(f"  whole ingestion (chunking + embedding + publish): {total / 3600:.1f} h")


if __name__ == "__main__":
    sys.exit(main())
