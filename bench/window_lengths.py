"""How long stitched results get, and what a ceiling (`window_max_chars`) does to them, on SciFact.

SciFact abstracts judged for a test question are bound into long "handbooks": `--per-document` abstracts (default
25) to a Markdown file, each abstract a `##` section under the title, `--documents` files (default 12). They are
ingested with the collection defaults (structure, 1,000 characters, overlap 200: an abstract is one block, cut
into about two paragraphs with overlap) in a temporary tenant `bench-windows-…`, deleted at the end.

Every test question whose judged abstracts are all bound in is asked through `retrieval.selectors.search.search` at the
defaults (around 1, top_n 8, the model's floor) once per ceiling in `--ceilings` (100000 stands for none). Per
ceiling it prints: results per question; their length p50 / p95 / max; their paragraphs; how many results the
ceiling split off; and whether the answer stayed whole: the share of questions with a judged abstract among the
matched paragraphs (must not move: a split only drops context that matched nothing) and the length of the result
holding that match.

Run from the project root (a few minutes on 2 cores, most of it embedding ~450 paragraphs):
    nice -n 19 .venv/bin/python bench/window_lengths.py
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import random
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import setup_django

SCIFACT = Path("/work/shared/eval/scifact")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=12)
    parser.add_argument("--per-document", type=int, default=25)
    parser.add_argument("--ceilings", default="100000,6000,4000,3000,2500,2000")
    parser.add_argument("--seed", type=int, default=7)
    return parser.parse_args()


def percentile(values: list[int], q: float) -> int:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0


def main() -> int:
    args = parse_args()
    setup_django()
    from accounts.models import Tenant
    from collections_app.models import Chunk
    from collections_app.services import documents as document_services
    from collections_app.services.collections import collection_create
    from retrieval.selectors.search import SearchScope, search

    corpus = {row["_id"]: row for row in map(json.loads, (SCIFACT / "corpus.jsonl").open())}
    queries = {row["_id"]: row["text"] for row in map(json.loads, (SCIFACT / "queries.jsonl").open())}
    qrels: dict[str, set[str]] = {}
    with (SCIFACT / "qrels" / "test.tsv").open() as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            qrels.setdefault(row["query-id"], set()).add(row["corpus-id"])
    judged = sorted({d for rels in qrels.values() for d in rels})
    random.Random(args.seed).shuffle(judged)
    bound = judged[: args.documents * args.per_document]
    tenant = Tenant.objects.create(name=f"bench-windows-{uuid.uuid4().hex[:8]}")
    try:
        collection = collection_create(tenant=tenant, name="handbooks")
        started = time.perf_counter()
        for number in range(args.documents):
            members = bound[number * args.per_document : (number + 1) * args.per_document]
            text = f"# Handbook {number + 1}\n\n" + "".join(
                f"## {corpus[d]['title'].strip()}\n\n{corpus[d]['text'].strip()}\n\n" for d in members
            )
            document = document_services.document_create(
                collection=collection, filename=f"handbook-{number + 1}.md", content=io.BytesIO(text.encode()),
                source_uri=f"bench://handbook-{number + 1}", uploaded_by="bench", queue=False,
            ).document  # fmt: skip
            document_services.document_ingest(document_id=str(document.pk))
            print(
                f"  handbook {number + 1}/{args.documents} ingested, {time.perf_counter() - started:.0f}s", flush=True
            )
        paragraphs = Chunk.objects.filter(collection=collection).paragraphs()
        lengths = [len(t) for t in paragraphs.values_list("text", flat=True)]
        print(f"paragraphs: {len(lengths)}, length p50 {percentile(lengths, 0.5)} p95 {percentile(lengths, 0.95)}")
        # Which abstract each paragraph holds: by its section's last heading (the abstract's title).
        title_of = {corpus[d]["title"].strip(): d for d in bound}
        abstract_of = {str(pk): title_of.get(s[-1] if s else "") for pk, s in paragraphs.values_list("pk", "section")}
        asked = {q: rels for q, rels in qrels.items() if rels <= set(bound)}
        print(f"questions: {len(asked)} (every judged abstract bound in)")
        scope = SearchScope(tenant_id=tenant.pk, collections=[collection])
        for ceiling in [int(c) for c in args.ceilings.split(",")]:
            collection.window_max_chars = ceiling
            collection.save(update_fields=["window_max_chars"])
            scope = SearchScope(tenant_id=tenant.pk, collections=[collection])
            sizes, pieces, per_question, split, answered, answer_sizes = [], [], [], 0, 0, []
            for q, rels in asked.items():
                answer = search(scope=scope, query=queries[q])
                per_question.append(len(answer.results))
                window = next((s for s in answer.stages if s.name == "window"), None)
                split += (window.counts.get("split_by_ceiling", 0) if window else 0) or 0
                hit = None
                for result in answer.results:
                    sizes.append(len(result["text"]))
                    pieces.append(result["passages"])
                    if hit is None and any(abstract_of.get(m["paragraph_id"]) in rels for m in result["matches"]):
                        hit = result
                if hit is not None:
                    answered += 1
                    answer_sizes.append(len(hit["text"]))
            label = "none" if ceiling >= 100000 else str(ceiling)
            print(
                f"ceiling {label:>6}: results/question {statistics.mean(per_question):.2f}, length p50 "
                f"{percentile(sizes, 0.5)} p95 {percentile(sizes, 0.95)} max {max(sizes, default=0)}, paragraphs "
                f"mean {statistics.mean(pieces or [0]):.2f} max {max(pieces, default=0)}, split off {split}, "
                f"answer matched {answered}/{len(asked)}, its result p50 {percentile(answer_sizes, 0.5)} "
                f"p95 {percentile(answer_sizes, 0.95)}",
                flush=True,
            )
    finally:
        tenant.delete()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
