"""Where issue 7's SciFact 0.7499 came from: a collection whose abstracts were embedded two ways.

Issue 7's full run (vector only 0.7265, hybrid as shipped 0.7499) was ingested in two parts (bench/README.md,
eval_beir): the first 853 abstracts of eval_beir's ingest order (every abstract judged for a test or a train
question, and 186 others) under a `git archive` of commit 8c789d2, whose ingestion embedded
`ChunkDraft.embedding_text()` with no title; the other 4,330 when the run resumed, under code from commit
cedb42a on, which put the file's stem before every breadcrumb (`10009203 <U+203A> <title>`, then the abstract). Keyword
search reads no embedding, so its figure is the same today (0.6668); only the vector side can differ.

This script asks whether that mix alone gives issue 7's figures. Over bench/eval_beir.py's collection (ingest it
first), it embeds every paragraph again with the file-stem prefix (cached in var/, keyed by the texts and the
model) and ranks the 300 SciFact test questions exactly (numpy, every live paragraph, an abstract ranked by its
best paragraph, nDCG@10 as eval_beir computes it) over four collections of vectors:

- `stored`: the vectors in the database (today's embedding text, no prefix);
- `prefixed`: every paragraph with the prefix (issue 7's later code, had it built everything);
- `mixed`: the first --first (853) abstracts as stored, the rest prefixed (issue 7's collection);
- `mixed, reversed`: the first 853 prefixed, the rest as stored (a control: the direction matters).

`--apply mixed` then writes the mixed vectors into the collection (the stored ones are saved first to
var/scifact-stored-vectors.npz), so `bench/eval_beir.py --no-ingest` measures the whole search() on issue 7's
collection; `--restore` writes the saved vectors back. Run from the project root:

    .venv/bin/python bench/scifact_title_mix.py                   # ~12 min the first time (embedding)
    .venv/bin/python bench/scifact_title_mix.py --apply mixed     # then eval_beir.py --no-ingest
    .venv/bin/python bench/scifact_title_mix.py --restore
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import time

import numpy as np
from _common import ROOT, setup_django
from eval_beir import SCIFACT, existing_collection, ingest_order, ndcg_at_k, read_jsonl, read_qrels

CACHE = ROOT / "var" / "scifact-prefixed-vectors.npz"
SAVED = ROOT / "var" / "scifact-stored-vectors.npz"
BATCH = 64


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--first", type=int, default=853, help="abstracts (in ingest order) kept as stored (853)")
    parser.add_argument("--apply", choices=["mixed", "prefixed"], help="write these vectors into the collection")
    parser.add_argument("--restore", action="store_true", help="write the saved stored vectors back")
    return parser.parse_args()


def live_paragraphs(collection):  # type: ignore[no-untyped-def]
    """(chunk ids, abstract ids, embedding texts with the file-stem prefix, stored vectors) of every live paragraph."""
    from collections_app.models import Chunk
    from ingestion.blocks import ChunkDraft

    rows = list(
        Chunk.objects.filter(collection=collection)
        .live()
        .paragraphs()
        .order_by("pk")
        .values_list("pk", "document__filename", "text", "section", "page", "embedding")
    )
    ids = [str(pk) for pk, *_ in rows]
    abstracts = [name.removesuffix(".md") for _, name, *_ in rows]
    prefixed = [
        ChunkDraft(text=text, section=list(section), page=page).embedding_text(name.removesuffix(".md"))
        for _, name, text, section, page, _ in rows
    ]
    stored = np.array([np.asarray(vector, dtype=np.float32) for *_, vector in rows])
    return ids, abstracts, prefixed, stored


def prefixed_vectors(texts: list[str], alias: str) -> np.ndarray:
    from embedding import get_embedder

    embedder = get_embedder(alias)
    key = hashlib.sha256(json.dumps([embedder.model_identity(), texts]).encode()).hexdigest()
    if CACHE.exists():
        cached = np.load(CACHE)
        if str(cached["key"]) == key:
            print(f"prefixed    : {len(texts)} vectors from {CACHE.relative_to(ROOT)}", flush=True)
            return np.asarray(cached["vectors"])
    started = time.perf_counter()
    vectors: list[list[float]] = []
    for start in range(0, len(texts), BATCH):
        vectors.extend(embedder.embed_passages(texts[start : start + BATCH]))
        done = start + BATCH
        if done % (BATCH * 20) == 0:
            elapsed = time.perf_counter() - started
            print(f"  embedded {done}/{len(texts)} in {elapsed:.0f}s", flush=True)
    matrix = np.asarray(vectors, dtype=np.float32)
    print(f"prefixed    : {len(texts)} paragraphs embedded in {time.perf_counter() - started:.0f}s", flush=True)
    CACHE.parent.mkdir(exist_ok=True)
    np.savez(CACHE, key=key, vectors=matrix)
    return matrix


def vector_only_ndcg(matrix: np.ndarray, abstracts: list[str], questions: np.ndarray, qrels: list[dict]) -> float:
    """Exact cosine ranking (the vectors are unit length), an abstract where its best paragraph is."""
    scores = questions @ matrix.T
    values = []
    for row, rels in zip(scores, qrels, strict=True):
        ranking: list[str] = []
        for index in np.argsort(-row):
            if abstracts[index] not in ranking:
                ranking.append(abstracts[index])
                if len(ranking) == 10:
                    break
        values.append(ndcg_at_k(ranking, rels, 10))
    return statistics.fmean(values)


def write_vectors(ids: list[str], matrix: np.ndarray) -> None:
    from django.db import connection, transaction

    with transaction.atomic(), connection.cursor() as cursor:
        cursor.executemany(
            "UPDATE collections_app_chunk SET embedding = %s::vector WHERE id = %s",
            [(json.dumps([float(x) for x in vector]), pk) for pk, vector in zip(ids, matrix, strict=True)],
        )


def main() -> int:
    args = parse_args()
    setup_django()
    from embedding import get_embedder

    collection = existing_collection()
    if args.restore:
        if not SAVED.exists():
            raise SystemExit(f"nothing saved at {SAVED.relative_to(ROOT)}: the collection holds its own vectors")
        saved = np.load(SAVED)
        write_vectors([str(pk) for pk in saved["ids"]], saved["vectors"])
        SAVED.unlink()
        print(f"restored    : {len(saved['ids'])} stored vectors written back", flush=True)
        return 0
    ids, abstracts, prefixed_texts, stored = live_paragraphs(collection)

    corpus = read_jsonl(SCIFACT / "corpus.jsonl")
    test_qrels = read_qrels(SCIFACT / "qrels" / "test.tsv")
    train_qrels = read_qrels(SCIFACT / "qrels" / "train.tsv")
    early = set(ingest_order(corpus, test_qrels, train_qrels)[: args.first])
    in_early = np.array([abstract in early for abstract in abstracts])
    print(
        f"collection  : {len(set(abstracts))} abstracts, {len(ids)} paragraphs; first {args.first} abstracts in "
        f"ingest order hold {int(in_early.sum())} of them",
        flush=True,
    )
    prefixed = prefixed_vectors(prefixed_texts, collection.embedding_alias)
    mixed = np.where(in_early[:, None], stored, prefixed)
    if args.apply:
        if SAVED.exists():
            raise SystemExit(f"{SAVED.relative_to(ROOT)} exists: --restore first, it holds the stored vectors")
        np.savez(SAVED, ids=np.array(ids), vectors=stored)
        write_vectors(ids, mixed if args.apply == "mixed" else prefixed)
        print(f"applied     : {args.apply} vectors written; --restore puts the stored ones back", flush=True)
        return 0

    queries = read_jsonl(SCIFACT / "queries.jsonl")
    qids = sorted((q for q in test_qrels if q in queries), key=int)
    embedder = get_embedder(collection.embedding_alias)
    questions = np.array([embedder.embed_query(queries[q]["text"]) for q in qids], dtype=np.float32)
    rels = [test_qrels[q] for q in qids]
    variants = {
        "stored (no prefix)": stored,
        "prefixed (all)": prefixed,
        f"mixed (first {args.first} stored, rest prefixed)": mixed,
        f"mixed, reversed (first {args.first} prefixed)": np.where(in_early[:, None], prefixed, stored),
    }
    print(f"\n| vector only, exact, {len(qids)} test questions | nDCG@10 |\n|---|---|")
    for name, matrix in variants.items():
        print(f"| {name} | {vector_only_ndcg(matrix, abstracts, questions, rels):.4f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
