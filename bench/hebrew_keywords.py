"""Hebrew questions: plain BM25, the keyword stage and the hybrid search, nDCG@10, before and after issue 43.

The material is bench/data/hebrew (its README says where it comes from): 1,131 paragraphs of the Mishnah and 59
questions in today's Hebrew, each with the one paragraph that answers it, mostly asked with other prefixes glued
to the paragraph's words ("לעדים" for "העדים", "משעורים" for "בשעורים") and other inflections where natural.

Every paragraph is one document of its own (`p0001.txt`, a name that reads as no words), ingested by the real
ingestion (document_create + document_ingest, queue=False) into the collection `mishnah` of the tenant
`bench-hebrew`, created on the first run and reused afterwards (an interrupted run resumes). Every question then
goes through the real `retrieval.selectors.search.search()` with top_n 50 and around 0: keyword only
(hybrid_weight 0), vector only (1) and hybrid at the collection's defaults (hybrid_weight null), the floor off
(min_score 0, as bench/eval_beir.py measures) and at the default floor. A paragraph's document is its corpus id;
nDCG@10 as BEIR computes it (eval_beir.ndcg_at_k). Plain BM25 is computed here, outside the platform: k1 0.9,
b 0.4, lower-cased \\w+ tokens, no stemming (eval_beir.plain_bm25).

Before and after (`--index before|after|both`): `before` writes the collection's keyword index as it was before
migration 0038 (each paragraph's language configuration, 'simple' for Hebrew, OR'd with 'simple') and asks the
keyword stage without the question's prefix-stripped forms (_keyword.HEBREW_FORMS_SQL left out); `after` writes it
as ingestion now does (collections_app.sql.keyword_vector) and asks as the stage now asks. The keyword triggers keep
the statistics and postings of either. The vector side is the same in both.

Run from the project root (the database must be migrated; KB_VAR_DIR picks another one):
    .venv/bin/python bench/hebrew_keywords.py            # ingest (first run: ~10 minutes), then both
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import logging
import statistics
import sys
import time
from contextlib import ExitStack
from unittest import mock

from _common import ROOT, setup_django
from eval_beir import ndcg_at_k, plain_bm25

DATA = ROOT / "bench" / "data" / "hebrew"
TENANT = "bench-hebrew"
COLLECTION = "mishnah"
# The keyword index as it was before migration 0038.
BEFORE_VECTOR = "to_tsvector(kb_ts_config(language), text) || to_tsvector('simple', text)"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", choices=("before", "after", "both"), default="both")
    parser.add_argument("--no-ingest", action="store_true", help="evaluate what is ingested")
    return parser.parse_args()


def read_corpus() -> dict[str, dict]:
    with (DATA / "corpus.jsonl").open(encoding="utf-8") as handle:
        return {row["_id"]: row for row in map(json.loads, handle)}


def read_questions() -> dict[str, tuple[str, str]]:
    with (DATA / "questions.tsv").open(encoding="utf-8") as handle:
        return {r["id"]: (r["question"], r["paragraph"]) for r in csv.DictReader(handle, delimiter="\t")}


def filename_of(number: int) -> str:
    return f"p{number:04d}.txt"


def bench_collection():  # type: ignore[no-untyped-def]
    from accounts.models import Tenant
    from collections_app.models import Collection
    from collections_app.services.collections import collection_create

    tenant, _ = Tenant.objects.get_or_create(name=TENANT)
    collection = Collection.objects.filter(tenant=tenant, name=COLLECTION).first()
    return collection or collection_create(tenant=tenant, name=COLLECTION)


def ingest(corpus: dict[str, dict], collection) -> None:  # type: ignore[no-untyped-def]
    """Every paragraph as its own document; those already `done` are skipped, others (re)ingested."""
    from collections_app.models import Document, DocumentStatus
    from collections_app.services import documents as document_services

    held = {d.filename: d for d in Document.objects.filter(collection=collection).only("id", "filename", "status")}
    names = {filename_of(n): doc_id for n, doc_id in enumerate(corpus, 1)}
    todo = [name for name in names if held.get(name) is None or held[name].status != DocumentStatus.DONE]
    print(f"ingest: {len(names) - len(todo)} of {len(names)} documents done, {len(todo)} to go", flush=True)
    started = time.perf_counter()
    for number, name in enumerate(todo, 1):
        document = held.get(name)
        if document is None:
            document = document_services.document_create(
                collection=collection,
                filename=name,
                content=io.BytesIO(f"{corpus[names[name]]['text']}\n".encode()),
                uploaded_by="bench",
                queue=False,
            ).document
        document_services.document_ingest(document_id=str(document.pk))
        if number % 100 == 0 or number == len(todo):
            print(f"  {number}/{len(todo)} in {time.perf_counter() - started:.0f}s", flush=True)


def index_as(collection, when: str) -> None:  # type: ignore[no-untyped-def]
    """The collection's keyword index written as before migration 0038 or as now (the triggers follow)."""
    from django.db import connection, transaction

    from collections_app.sql import keyword_vector

    vector = BEFORE_VECTOR if when == "before" else keyword_vector()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE collections_app_chunk SET search_vector = {vector} "
            "WHERE collection_id = %s AND search_vector IS NOT NULL",
            [collection.pk],
        )


def run(collection, questions: dict[str, tuple[str, str]], doc_of: dict[str, str], weight, floor_off: bool):  # type: ignore[no-untyped-def]
    """Per question, the corpus ids in the order of their best paragraph."""
    from collections_app.models import Collection
    from retrieval.selectors.search import SearchScope, _pipeline, search

    Collection.objects.filter(pk=collection.pk).update(min_score=0.0 if floor_off else None)
    collection.refresh_from_db()
    scope = SearchScope(tenant_id=collection.tenant_id, collections=[collection])
    rankings: dict[str, list[str]] = {}
    for qid, (text, _) in questions.items():
        answer = search(scope=scope, query=text, top_n=_pipeline.MAX_TOP_N, around=0, hybrid_weight=weight)
        rankings[qid] = list(dict.fromkeys(doc_of[r["document"]["id"]] for r in answer.results))
    return rankings


def score(rankings: dict[str, list[str]], questions: dict[str, tuple[str, str]]) -> float:
    return statistics.fmean(ndcg_at_k(rankings[q], {questions[q][1]: 1}, 10) for q in questions)


def main() -> int:
    args = parse_args()
    logging.disable(logging.WARNING)
    setup_django()
    from collections_app.models import Chunk, Document
    from retrieval.selectors.search import _keyword

    corpus, questions = read_corpus(), read_questions()
    collection = bench_collection()
    if not args.no_ingest:
        ingest(corpus, collection)
    ids = {filename_of(n): doc_id for n, doc_id in enumerate(corpus, 1)}
    doc_of = {
        str(pk): ids[name] for pk, name in Document.objects.filter(collection=collection).values_list("pk", "filename")
    }
    labels = sorted(set(Chunk.objects.filter(collection=collection).values_list("language", flat=True)))
    print(f"{len(doc_of)} documents, {Chunk.objects.filter(collection=collection).count()} paragraphs, labels {labels}")
    print(f"{len(questions)} questions; nDCG@10 (one answering paragraph each)\n")

    bm25 = plain_bm25(corpus, set(corpus), {q: text for q, (text, _) in questions.items()})
    print(f"  {'plain BM25, outside the platform':<44} {score(bm25, questions):.4f}")
    configurations = [
        ("keyword stage (hybrid_weight 0)", 0.0, True),
        ("vector only (hybrid_weight 1)", 1.0, True),
        ("hybrid, defaults, floor off", None, True),
        ("hybrid, defaults, default floor", None, False),
    ]
    for when in ("before", "after") if args.index == "both" else (args.index,):
        index_as(collection, when)
        with ExitStack() as stack:
            if when == "before":
                sql = _keyword._KEYWORD_SQL.replace(_keyword.HEBREW_FORMS_SQL, "")
                stack.enter_context(mock.patch.object(_keyword, "_KEYWORD_SQL", sql))
            for name, weight, floor_off in configurations:
                found = run(collection, questions, doc_of, weight, floor_off)
                print(f"  {when + ': ' + name:<44} {score(found, questions):.4f}", flush=True)
    index_as(collection, "after")  # the collection left as the platform builds it
    return 0


if __name__ == "__main__":
    sys.exit(main())
