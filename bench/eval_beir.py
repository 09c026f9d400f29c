"""SciFact (BEIR) retrieval quality, through the real ingestion path and the real search function.

Ingestion: every abstract of corpus.jsonl becomes a Markdown document `<corpus id>.md` (the title as a `#`
heading, the abstract as its paragraph) in the collection `bench-scifact` of the tenant `bench`, created on the
first run and REUSED afterwards: `documents.document_create(..., queue=False)` then
`documents.document_ingest(document_id=...)` in this process, one document at a time, as a worker would.
Documents already `done` are skipped, any other state is ingested again, so an interrupted run resumes.
Abstracts judged for a test question go first, then those judged for a train question, then the rest: a run
cut short still covers every test question (for a test question, a train question's abstract is just another
SciFact abstract). All 5,183 take about 45 minutes on a quiet 2-core machine; run it with `nice -n 19`.

Evaluation (skipped with --ingest-only): the collection gets `min_score` 0 (the floor cuts nothing) and
`rerank_top_k` --depth (300 paragraphs per retriever, enough for 100 distinct abstracts in most lists); every
judged question then goes through `retrieval.selectors.search.search(scope=..., query=..., top_n=50, around=0,
hybrid_weight=...)` for keyword only (0), vector only (1) and hybrid (0.5), and once more for hybrid at the
collection default depth (rerank_top_k 40, hybrid_weight null).

- Results are paragraphs; an abstract is ranked where its best paragraph is (the first time it appears),
  as BEIR evaluates chunked documents (max-pooling). Paragraphs map to corpus ids by the document filename.
- search() returns at most MAX_TOP_N (50) paragraphs, ~25-50 abstracts, too few for recall@100. The deeper
  list is the one search() itself cuts to top_n: the floor stage's output in the same call (captured by
  wrapping `_pipeline._floor_stage`; with a retry, the retry's pass, which is what search() answers). The
  script checks on every search that its first 50 paragraphs are exactly the answer's results, and counts
  mismatches. recall@100 is over the first 100 distinct abstracts of that list.
- nDCG@10 and recall@k as BEIR computes them with pytrec_eval (see ndcg_at_k; checked against pytrec_eval).
- Fusion variants, computed here from the keyword-only and vector-only lists (first 100 abstracts each, an
  abstract scored by its best paragraph): weighted RRF (k=60) and a convex combination of min-max or z-score
  normalised scores (an abstract missing from a list gets that list's lowest normalised score). Weighted RRF and
  the z-score combination are the pipeline's own functions (retrieval/selectors/search/_fusion.py: rrf_combine,
  zscore_combine), so the offline variant measures what ships; the pipeline applies them to paragraphs
  (rerank_top_k per list), this script to abstracts (100 per list). Min-max exists only here. Weights are
  tuned on the TRAIN judgements only (qrels/train.tsv) and the chosen one is reported on test. For train
  questions both lists are read off one w=0.5 search (each fused hit keeps its rank per list; the floor is
  off, so nothing is dropped); on test the script checks that this gives the w=0 and w=1 searches' lists.
- Latency: p50/p95 of the trace's `keyword retrieval`, `query embedding` and `vector retrieval` stages and
  of the whole search, per configuration (a broadened retry's own stages are inside `threshold`).

If not every abstract is `done`, only questions whose judged abstracts are all done are evaluated and the
output says PARTIAL with the counts.

Run from the project root:
    nice -n 19 .venv/bin/python bench/eval_beir.py --ingest-only   # ingest / resume (long)
    .venv/bin/python bench/eval_beir.py --no-ingest                # evaluate what is ingested
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import logging
import math
import os
import random
import re
import statistics
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from unittest import mock

from _common import setup_django

SCIFACT = Path("/work/shared/eval/scifact")
TENANT = "bench"
COLLECTION = "bench-scifact"
STAGES = ("keyword retrieval", "query embedding", "vector retrieval")
RRF_K = 60
GRID = [round(0.1 * i, 1) for i in range(1, 10)]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=SCIFACT, help="BEIR folder (corpus.jsonl, queries.jsonl, qrels/)")
    parser.add_argument("--ingest-only", action="store_true", help="ingest (or finish ingesting) and stop")
    parser.add_argument("--no-ingest", action="store_true", help="evaluate what is already ingested")
    parser.add_argument("--depth", type=int, default=300, help="rerank_top_k: paragraphs per retriever (300)")
    parser.add_argument("--limit", type=int, default=0, help="at most this many test questions (0: all)")
    parser.add_argument("--train-limit", type=int, default=0, help="a seeded sample of train questions (0: all)")
    parser.add_argument("--no-default-depth", action="store_true", help="skip hybrid at rerank_top_k 40")
    parser.add_argument("--dump", type=Path, default=None, help="write runs and qrels as JSON (for pytrec_eval)")
    parser.add_argument(
        "--one-situation", action="store_true",
        help="search as before issue 18: one floor and one fusion weight in every language situation",
    )  # fmt: skip
    return parser.parse_args()


def read_jsonl(path: Path) -> dict[str, dict]:
    with path.open(encoding="utf-8") as handle:
        return {row["_id"]: row for row in map(json.loads, handle)}


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    with path.open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            qrels[row["query-id"]][row["corpus-id"]] = int(row["score"])
    return dict(qrels)


# --- ingestion -------------------------------------------------------------------------------------------


def ingest_order(corpus: dict[str, dict], test: dict, train: dict) -> list[str]:
    """Abstracts judged for a test question first, then those judged for a train question, then the rest."""
    first = {d for rels in test.values() for d in rels}
    second = {d for rels in train.values() for d in rels} - first
    rank = {d: (0 if d in first else 1 if d in second else 2, i) for i, d in enumerate(corpus)}
    return sorted(corpus, key=rank.__getitem__)


def markdown_of(row: dict) -> bytes:
    """A SciFact abstract as Markdown: the title as a heading, the abstract as its paragraph."""
    return f"# {row['title'].strip()}\n\n{row['text'].strip()}\n".encode()


def bench_collection():  # type: ignore[no-untyped-def]
    """The reused tenant `bench` and its collection `bench-scifact` (created on the first run)."""
    from accounts.models import Tenant
    from collections_app.models import Collection
    from collections_app.services.collections import collection_create

    tenant, _ = Tenant.objects.get_or_create(name=TENANT)
    collection = Collection.objects.filter(tenant=tenant, name=COLLECTION).first()
    if collection is None:
        collection = collection_create(tenant=tenant, name=COLLECTION)
    return collection


def existing_collection():  # type: ignore[no-untyped-def]
    """The collection an earlier `--ingest-only` run made, for the scripts that read it; stops when there is none."""
    from collections_app.models import Collection

    collection = Collection.objects.filter(tenant__name=TENANT, name=COLLECTION).first()
    if collection is None:
        raise SystemExit(f"no collection {COLLECTION!r} in tenant {TENANT!r}: run bench/eval_beir.py --ingest-only")
    return collection


def ingest(corpus: dict[str, dict], order: list[str], collection) -> None:  # type: ignore[no-untyped-def]
    """Every abstract as `<doc_id>.md`, in `order`; documents already `done` are skipped, others (re)ingested."""
    from collections_app.models import Document, DocumentStatus
    from collections_app.services import documents as document_services

    held = {d.filename: d for d in Document.objects.filter(collection=collection).only("id", "filename", "status")}
    todo = [d for d in order if held.get(f"{d}.md") is None or held[f"{d}.md"].status != DocumentStatus.DONE]
    print(f"ingest: {len(corpus) - len(todo)} of {len(corpus)} documents already done, {len(todo)} to go", flush=True)
    started = time.perf_counter()
    for number, doc_id in enumerate(todo, 1):
        document = held.get(f"{doc_id}.md")
        if document is None:
            document = document_services.document_create(
                collection=collection,
                filename=f"{doc_id}.md",
                content=io.BytesIO(markdown_of(corpus[doc_id])),
                source_uri=f"scifact://{doc_id}",
                uploaded_by="bench",
                queue=False,
            ).document
        document_services.document_ingest(document_id=str(document.pk))
        if number % 25 == 0 or number == len(todo):
            elapsed = time.perf_counter() - started
            left = (len(todo) - number) * elapsed / number
            print(f"  {number}/{len(todo)} in {elapsed:.0f}s, ~{left:.0f}s left", flush=True)
    errors = Document.objects.filter(collection=collection, status=DocumentStatus.ERROR).count()
    if errors:
        print(f"ingest: {errors} documents in error", flush=True)


def build_recipes(collection) -> Counter[str]:  # type: ignore[no-untyped-def]
    """How each document's paragraphs were embedded, from its latest build record (model, runtime, chunking,
    where the breadcrumb's title came from: the title itself differs per document and is left out)."""
    from collections_app.models import Build

    latest = (
        Build.objects.filter(collection=collection, document__isnull=False)
        .order_by("document_id", "-built_at")
        .distinct("document_id")
        .values_list("model", "method")
    )
    return Counter(
        json.dumps({"model": model, **{k: v for k, v in method.items() if k != "title"}}, sort_keys=True)
        for model, method in latest
    )


# --- metrics ---------------------------------------------------------------------------------------------


def ndcg_at_k(ranking: list[str], rels: dict[str, int], k: int) -> float:
    """BEIR's nDCG@k (pytrec_eval `ndcg_cut.k`): gain = the judged grade, discount log2(rank + 1), the ideal
    DCG from all judged documents (also those never retrieved); unjudged documents gain 0.

    Toy check (asserted in self_check): ranking [a, b, c], rels {a: 1, c: 2, d: 1}, k = 3:
      DCG  = 1/log2(2) + 0/log2(3) + 2/log2(4)       = 1 + 0 + 1          = 2
      IDCG = 2/log2(2) + 1/log2(3) + 1/log2(4)       = 2 + 0.63093 + 0.5  = 3.13093
      nDCG@3 = 2 / 3.13093 = 0.63879; pytrec_eval 0.5 (pytrec-eval-terrier) gives 0.6387878864795979.
    """
    dcg = sum(rels.get(doc, 0) / math.log2(rank + 1) for rank, doc in enumerate(ranking[:k], start=1))
    ideal = sorted((g for g in rels.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(rank + 1) for rank, g in enumerate(ideal, start=1))
    return dcg / idcg if idcg else 0.0


def recall_at_k(ranking: list[str], rels: dict[str, int], k: int) -> float:
    """Share of the relevant (grade > 0) documents in the first k, as pytrec_eval `recall.k`."""
    relevant = {d for d, g in rels.items() if g > 0}
    return len(relevant.intersection(ranking[:k])) / len(relevant) if relevant else 0.0


def self_check() -> None:
    rels = {"a": 1, "c": 2, "d": 1}
    assert abs(ndcg_at_k(["a", "b", "c"], rels, 3) - 0.6387878864795979) < 1e-12
    assert abs(recall_at_k(["a", "b", "c"], rels, 3) - 2 / 3) < 1e-12


def scores_of(runs: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> dict[str, float]:
    qids = sorted(runs)
    return {
        "nDCG@10": statistics.fmean(ndcg_at_k(runs[q], qrels[q], 10) for q in qids),
        "R@10": statistics.fmean(recall_at_k(runs[q], qrels[q], 10) for q in qids),
        "R@50": statistics.fmean(recall_at_k(runs[q], qrels[q], 50) for q in qids),
        "R@100": statistics.fmean(recall_at_k(runs[q], qrels[q], 100) for q in qids),
    }


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100), as in search_latency.py."""
    ordered = sorted(values)
    return ordered[max(1, math.ceil(q / 100 * len(ordered))) - 1]


# --- running searches ------------------------------------------------------------------------------------


class Run:
    """One configuration over a set of questions: per question the ranked abstracts and their best scores."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.ranking: dict[str, list[str]] = {}
        self.keyword: dict[str, dict[str, float]] = {}
        self.semantic: dict[str, dict[str, float]] = {}
        self.answer_docs: dict[str, list[str]] = {}
        self.stage_ms: dict[str, list[float]] = defaultdict(list)
        self.retried = 0
        self.mismatches = 0
        self.short = 0  # questions whose deep list has fewer than 100 abstracts
        # Each retriever's own list (first 100 abstracts, best paragraph's score), read off the fused hits'
        # ranks: the fused list holds every hit of both lists (the floor is off), each with its rank per list.
        self.lists: dict[str, dict[str, list[tuple[str, float]]]] = {"keyword": {}, "vector": {}}


def run_searches(name: str, questions: dict[str, str], collection, weight, doc_of: dict[str, str]) -> Run:  # type: ignore[no-untyped-def]
    from retrieval.selectors.search import SearchScope, _pipeline, search

    run = Run(name)
    scope = SearchScope(tenant_id=collection.tenant_id, collections=[collection])
    original = _pipeline._floor_stage
    captured: list = []

    def floor_stage(trace, plan, fused):  # type: ignore[no-untyped-def]
        kept = original(trace, plan, fused)
        captured.append(kept)
        return kept

    started = time.perf_counter()
    with mock.patch.object(_pipeline, "_floor_stage", floor_stage):
        for number, (qid, text) in enumerate(questions.items(), 1):
            captured.clear()
            answer = search(scope=scope, query=text, top_n=_pipeline.MAX_TOP_N, around=0, hybrid_weight=weight)
            deep = captured[-1]
            if [r["chunk_id"] for r in answer.results] != [h.chunk_id for h in deep[: _pipeline.MAX_TOP_N]]:
                run.mismatches += 1
            run.retried += bool(answer.retried)
            ranking: list[str] = []
            seen: set[str] = set()
            keyword: dict[str, float] = {}
            semantic: dict[str, float] = {}
            for hit in deep:
                doc = doc_of[hit.document_id]
                if doc not in seen:
                    seen.add(doc)
                    ranking.append(doc)
                if hit.keyword is not None:
                    keyword.setdefault(doc, hit.keyword)
                if hit.semantic is not None:
                    semantic.setdefault(doc, hit.semantic)
            run.ranking[qid] = ranking
            run.keyword[qid] = keyword
            run.semantic[qid] = semantic
            run.answer_docs[qid] = list(dict.fromkeys(doc_of[r["document"]["id"]] for r in answer.results))
            run.short += len(ranking) < 100
            for source, attribute in (("keyword", "keyword"), ("vector", "semantic")):
                ordered = sorted((h for h in deep if source in h.ranks), key=lambda h: h.ranks[source])
                best: dict[str, float] = {}
                for hit in ordered:
                    best.setdefault(doc_of[hit.document_id], getattr(hit, attribute))
                run.lists[source][qid] = list(best.items())[:100]
            for stage in answer.stages:
                if stage.name in STAGES and stage.status == "ran":
                    run.stage_ms[stage.name].append(stage.ms)
            run.stage_ms["total"].append(answer.latency_ms)
            if number % 100 == 0:
                print(f"    {name}: {number}/{len(questions)} in {time.perf_counter() - started:.0f}s", flush=True)
    return run


def plain_bm25(corpus: dict[str, dict], docs: set[str], questions: dict[str, str]) -> dict[str, list[str]]:
    """Reference outside the platform: BM25 (k1 0.9, b 0.4) over title + abstract of the ingested abstracts,
    lower-cased \\w+ tokens, no stemming, no stop words (the "plain BM25" of issue 7). First 100 per question."""
    tokens = {d: re.findall(r"\w+", f"{corpus[d]['title']} {corpus[d]['text']}".lower()) for d in docs}
    postings: dict[str, dict[str, int]] = defaultdict(dict)
    for doc, words in tokens.items():
        for word, count in Counter(words).items():
            postings[word][doc] = count
    n, avgdl = len(tokens), statistics.fmean(len(w) for w in tokens.values())
    k1, b = 0.9, 0.4
    runs: dict[str, list[str]] = {}
    for qid, text in questions.items():
        score: dict[str, float] = defaultdict(float)
        for word in set(re.findall(r"\w+", text.lower())):
            found = postings.get(word, {})
            idf = math.log(1 + (n - len(found) + 0.5) / (len(found) + 0.5))
            for doc, tf in found.items():
                score[doc] += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(tokens[doc]) / avgdl))
        runs[qid] = sorted(score, key=lambda d: (-score[d], d))[:100]
    return runs


# --- fusion ----------------------------------------------------------------------------------------------


def rrf(keyword: list[tuple[str, float]], vector: list[tuple[str, float]], weight: float) -> list[str]:
    """Weighted RRF: (1 - w) / (k + keyword rank) + w / (k + vector rank), k = 60 (the pipeline's rrf_combine)."""
    from retrieval.selectors.search._fusion import ranked, rrf_combine

    lists = {"keyword": [d for d, _ in keyword], "vector": [d for d, _ in vector]}
    return ranked(rrf_combine(lists, {"keyword": 1 - weight, "vector": weight}, k=RRF_K))


def minmax(items: list[tuple[str, float]]) -> dict[str, float]:
    if not items:
        return {}
    low, high = min(s for _, s in items), max(s for _, s in items)
    return {d: (s - low) / (high - low) if high > low else 1.0 for d, s in items}


def convex(keyword: list[tuple[str, float]], vector: list[tuple[str, float]], alpha: float, how: str) -> list[str]:
    """alpha * vector + (1 - alpha) * keyword on normalised scores; missing from a list = that list's lowest.

    z-score: the pipeline's own zscore_combine (what KB_FUSION=zscore ships); min-max: computed here."""
    if how == "zscore":
        from retrieval.selectors.search._fusion import ranked, zscore_combine

        return ranked(zscore_combine({"keyword": keyword, "vector": vector}, {"keyword": 1 - alpha, "vector": alpha}))
    kw, vec = minmax(keyword), minmax(vector)
    kw_floor, vec_floor = min(kw.values(), default=0.0), min(vec.values(), default=0.0)
    docs = set(kw) | set(vec)
    score = {d: alpha * vec.get(d, vec_floor) + (1 - alpha) * kw.get(d, kw_floor) for d in docs}
    return sorted(score, key=lambda d: (-score[d], d))


def fused_runs(keyword: dict, vector: dict) -> dict[str, dict[str, list[str]]]:
    """Every fusion variant of the grid: name -> {qid: ranking}."""
    variants: dict[str, dict[str, list[str]]] = defaultdict(dict)
    for qid in keyword:
        kw, vec = keyword[qid], vector[qid]
        for value in GRID:
            variants[f"rrf w={value}"][qid] = rrf(kw, vec, value)
            variants[f"minmax a={value}"][qid] = convex(kw, vec, value, "minmax")
            variants[f"zscore a={value}"][qid] = convex(kw, vec, value, "zscore")
    return variants


# --- main ------------------------------------------------------------------------------------------------


def evaluate(args: argparse.Namespace, corpus: dict, test_qrels: dict, train_qrels: dict, collection) -> int:  # type: ignore[no-untyped-def]
    from collections_app.models import Chunk, Document, DocumentStatus
    from collections_app.services.collections import collection_update
    from embedding import get_embedder

    queries = read_jsonl(args.data / "queries.jsonl")
    documents = Document.objects.filter(collection=collection)
    doc_of = {str(pk): name.removesuffix(".md") for pk, name in documents.values_list("pk", "filename")}
    done = {doc_of[str(pk)] for pk in documents.filter(status=DocumentStatus.DONE).values_list("pk", flat=True)}
    chunks = Chunk.objects.filter(collection=collection).count()

    def eligible(qrels: dict) -> dict[str, str]:
        qids = [q for q in sorted(qrels, key=int) if q in queries and set(qrels[q]) <= done]
        return {q: queries[q]["text"] for q in qids}

    test, train = eligible(test_qrels), eligible(train_qrels)
    test = dict(list(test.items())[: args.limit or None])
    if args.train_limit and args.train_limit < len(train):
        picked = set(random.Random(0).sample(sorted(train), args.train_limit))
        train = {q: t for q, t in train.items() if q in picked}
    partial = len(done) < len(corpus)
    print(f"corpus      : {len(done)} of {len(corpus)} abstracts ingested (done), {chunks} paragraphs")
    if partial:
        print(
            f"PARTIAL     : only {len(done)}/{len(corpus)} abstracts are in the collection; evaluated on the "
            f"{len(test)}/{len(test_qrels)} test and {len(train)}/{len(train_qrels)} train questions whose judged "
            "abstracts are all ingested (figures are higher than on the full corpus: fewer distractors)"
        )
    else:
        print(f"questions   : {len(test)} test, {len(train)} train")
    print(f"machine     : {os.cpu_count()} cpus, load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    recipes = build_recipes(collection)
    for recipe, count in recipes.most_common():
        print(f"built by    : {count} documents, {recipe}")
    if len(recipes) > 1:
        print(
            "MIXED       : the documents were embedded by more than one recipe (a resumed ingestion crossed a "
            "change): the figures measure the mix, not one pipeline (issue 7's 0.7499, bench/scifact_title_mix.py)"
        )

    collection_update(collection=collection, min_score=0.0, rerank_top_k=args.depth)
    get_embedder(collection.embedding_alias).embed_query("warm-up: the model loads once per process")
    print(f"\nsearching (top_n 50, around 0, min_score 0, rerank_top_k {args.depth}) ...", flush=True)
    runs = {
        "keyword only (w=0)": run_searches("keyword", test, collection, 0.0, doc_of),
        "vector only (w=1)": run_searches("vector", test, collection, 1.0, doc_of),
        "hybrid (w=0.5)": run_searches("hybrid", test, collection, 0.5, doc_of),
    }
    # Train: one hybrid search per question gives both lists (checked on test against w=0 and w=1 below).
    train_run = run_searches("train hybrid", train, collection, 0.5, doc_of)
    default_hybrid = None
    if not args.no_default_depth:
        collection_update(collection=collection, rerank_top_k=40)
        default_hybrid = run_searches("hybrid, default depth", test, collection, None, doc_of)
        runs["hybrid (w=null, rerank_top_k 40)"] = default_hybrid

    print(f"\nTEST, {len(test)} questions{' (PARTIAL corpus)' if partial else ''}: abstracts ranked by best paragraph")
    print(f"  {'system':<36} {'nDCG@10':>8} {'R@10':>7} {'R@50':>7} {'R@100':>7}  retried  <100 docs  mismatch")
    for name, run in runs.items():
        s = scores_of(run.ranking, test_qrels)
        print(
            f"  {name:<36} {s['nDCG@10']:8.4f} {s['R@10']:7.4f} {s['R@50']:7.4f} {s['R@100']:7.4f}"
            f"  {run.retried:7d}  {run.short:8d}  {run.mismatches:8d}"
        )
    bm25 = scores_of(plain_bm25(corpus, done, test), test_qrels)
    print(
        f"  {'plain BM25, outside the platform':<36} {bm25['nDCG@10']:8.4f} {bm25['R@10']:7.4f} {bm25['R@50']:7.4f}"
        f" {bm25['R@100']:7.4f}  (reference: same abstracts, no stemming)"
    )
    for name, run in runs.items():
        answer = scores_of(run.answer_docs, test_qrels)
        print(f"  {name:<36} answer's own 50 paragraphs: nDCG@10 {answer['nDCG@10']:.4f}, R@50 {answer['R@50']:.4f}")

    print(f"\nFUSION of the keyword and vector lists (100 abstracts each), tuned on {len(train)} train questions")
    hybrid_run = runs["hybrid (w=0.5)"]
    for source, single in (("keyword", runs["keyword only (w=0)"]), ("vector", runs["vector only (w=1)"])):
        same = sum([d for d, _ in hybrid_run.lists[source][q]] == [d for d, _ in single.lists[source][q]] for q in test)
        print(f"  {source} list read off a w=0.5 search = the one-retriever search's list: {same}/{len(test)}")
    train_variants = fused_runs(train_run.lists["keyword"], train_run.lists["vector"])
    test_variants = fused_runs(runs["keyword only (w=0)"].lists["keyword"], runs["vector only (w=1)"].lists["vector"])
    train_scores = {name: scores_of(r, train_qrels)["nDCG@10"] for name, r in train_variants.items()}
    best: dict[str, str] = {}
    for family in ("rrf", "minmax", "zscore"):
        names = [n for n in train_scores if n.startswith(family)]
        best[family] = max(names, key=lambda n: (train_scores[n], -names.index(n)))
        print(f"  {family:<7} train nDCG@10: " + "  ".join(f"{n.split()[1]} {train_scores[n]:.4f}" for n in names))
    chosen = max(best.values(), key=lambda n: train_scores[n])
    platform = scores_of(runs["hybrid (w=0.5)"].ranking, test_qrels)
    default = scores_of(default_hybrid.ranking, test_qrels) if default_hybrid else {}
    print(f"\n  {'on TEST':<36} {'nDCG@10':>8} {'R@10':>7} {'R@100':>7}  (train nDCG@10)")
    for name in ("rrf w=0.5", *best.values()):
        s = scores_of(test_variants[name], test_qrels)
        mark = "  <- chosen on train" if name == chosen else ("  (untuned baseline)" if name == "rrf w=0.5" else "")
        print(f"  {name:<36} {s['nDCG@10']:8.4f} {s['R@10']:7.4f} {s['R@100']:7.4f}  ({train_scores[name]:.4f}){mark}")
    shown = [("platform hybrid (w=0.5, depth)", platform)]
    if default_hybrid:
        shown.append(("platform hybrid (default depth 40)", default))
    for name, s in shown:
        print(f"  {name:<36} {s['nDCG@10']:8.4f} {s['R@10']:7.4f} {s['R@100']:7.4f}")
    chosen_test = scores_of(test_variants[chosen], test_qrels)["nDCG@10"]
    delta = chosen_test - platform["nDCG@10"]
    from django.conf import settings

    winner = chosen if delta > 0 else f"the platform's hybrid ({settings.KB_FUSION} w=0.5 over paragraphs)"
    print(f"  winner on test: {winner}, by {abs(delta):.4f} nDCG@10 ({chosen} vs platform hybrid w=0.5)")

    print("\nLATENCY per stage (ms, from each answer's trace), p50 / p95")
    print(f"  {'configuration':<36} " + " ".join(f"{s:>20}" for s in (*STAGES, "total")))
    for name, run in [*runs.items(), ("train hybrid (w=0.5)", train_run)]:
        cells = []
        for stage in (*STAGES, "total"):
            values = run.stage_ms.get(stage, [])
            cells.append(f"{percentile(values, 50):8.1f} / {percentile(values, 95):7.1f}" if values else "-")
        print(f"  {name:<36} " + " ".join(f"{c:>20}" for c in cells))

    if args.dump:
        wanted = {**{f"test:{q}": test_qrels[q] for q in test}}
        dumped = {
            "qrels": wanted,
            "runs": {name: {f"test:{q}": r for q, r in run.ranking.items()} for name, run in runs.items()},
            "chosen": {f"test:{q}": r for q, r in test_variants[chosen].items()},
        }
        args.dump.write_text(json.dumps(dumped))
    return 0


def main() -> int:
    args = parse_args()
    self_check()
    setup_django()
    logging.getLogger("collections_app").setLevel(logging.WARNING)
    corpus = read_jsonl(args.data / "corpus.jsonl")
    test_qrels = read_qrels(args.data / "qrels" / "test.tsv")
    train_qrels = read_qrels(args.data / "qrels" / "train.tsv")
    if args.one_situation:
        from eval_xlang import pipeline_before

        pipeline_before().__enter__()  # for the whole run: the process ends with it
    collection = bench_collection()
    print(f"collection  : {collection.name} ({collection.pk}) of tenant {TENANT}, model {collection.embedding_alias}")
    if not args.no_ingest:
        ingest(corpus, ingest_order(corpus, test_qrels, train_qrels), collection)
    if args.ingest_only:
        return 0
    return evaluate(args, corpus, test_qrels, train_qrels, collection)


if __name__ == "__main__":
    sys.exit(main())
