"""The keyword stage over all of SciFact: keyword-only nDCG@10 and a digest of every ranking, to compare two commits.

Every abstract (title and text) is one paragraph, written and indexed as ingestion writes them (one insert, one
keyword-index update) in a temporary tenant, deleted at the end; no vector is made, so this runs in a minute where
bench/eval_beir.py's ingestion embeds for hours on a loaded machine. Each of the 300 test questions goes to
`keyword_retrieve` (limit 10); the script prints nDCG@10 against the test qrels and a SHA-256 of every question's
(abstract, score rounded to 1e-6) list. The same digest on two commits means the same BM25 scores to 1e-6 and the
same rankings: what the keyword index's storage must never change.

Run from the project root:  .venv/bin/python bench/keyword_exactness.py [--data /work/shared/eval/scifact]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import time
from collections import defaultdict
from pathlib import Path

from _common import setup_django


def ndcg_at_10(ranked: list[str], relevant: dict[str, int]) -> float:
    gains = [relevant.get(doc, 0) for doc in ranked[:10]]
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains))
    ideal = sorted(relevant.values(), reverse=True)[:10]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


# The keyword index's tables (0013's postings, or 0034's blocks, whichever this commit has) with their indexes.
KEYWORD_TABLES = ("collections_app_keywordposting", "collections_app_keywordblock", "collections_app_keywordterm",
                  "collections_app_keywordstats")  # fmt: skip


def keyword_index_bytes() -> int:
    """What the keyword index takes on disk in this database (run it on one holding only this bench's tenant)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "WHERE c.relname = ANY(%s) AND c.relkind = 'r'",
            [list(KEYWORD_TABLES)],
        )
        return int(cursor.fetchone()[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="/work/shared/eval/scifact", help="BEIR folder")
    parser.add_argument("--slow", type=float, default=0, help="print the questions slower than this many ms")
    args = parser.parse_args()
    setup_django()

    from django.db import connection

    from accounts.models import Tenant
    from collections_app.models import Chunk, Collection, Document
    from collections_app.services.collections import collection_delete
    from collections_app.sql import keyword_vector
    from retrieval.selectors.search import Visibility, keyword_retrieve

    data = Path(args.data)
    corpus = [json.loads(line) for line in (data / "corpus.jsonl").open(encoding="utf-8")]
    queries = {q["_id"]: q["text"] for q in map(json.loads, (data / "queries.jsonl").open(encoding="utf-8"))}
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    for line in list((data / "qrels" / "test.tsv").open(encoding="utf-8"))[1:]:
        query_id, doc_id, score = line.split()
        qrels[query_id][doc_id] = int(score)

    tenant = Tenant.objects.create(name=f"keyword-exactness-{time.time():.0f}")
    collection = Collection.objects.create(tenant=tenant, name="scifact")
    try:
        started = time.perf_counter()
        document = Document.objects.create(tenant=tenant, collection=collection, content_hash="c", filename="c.txt")
        Chunk.objects.bulk_create(
            (
                Chunk(
                    tenant=tenant,
                    collection=collection,
                    document=document,
                    text=f"{row['title']}. {row['text']}",
                    language="en",
                    metadata={"doc": row["_id"]},
                )
                for i, row in enumerate(corpus)
            ),
            batch_size=2000,
        )
        with connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE collections_app_chunk SET search_vector = {keyword_vector()} WHERE document_id = %s",
                [document.pk],
            )
            # What autovacuum does within a minute of a bulk write: without statistics, a table analysed while empty
            # is planned as holding one row per collection, and every question scans the collection's words.
            for table in ("collections_app_chunk", "collections_app_keywordterm", "collections_app_keywordblock"):
                cursor.execute(f"ANALYZE {table}")
        print(f"indexed {len(corpus)} abstracts in {time.perf_counter() - started:.1f} s", flush=True)
        print(f"keyword index bytes per paragraph {keyword_index_bytes() / len(corpus):.0f}")
        doc_of = {
            str(pk): meta["doc"] for pk, meta in Chunk.objects.filter(document=document).values_list("pk", "metadata")
        }
        visible = Visibility(tenant.pk, [str(collection.pk)], [])
        digest = hashlib.sha256()
        scores = []
        times = []
        for query_id in sorted(qrels):
            began = time.perf_counter()
            counts: dict[str, int] = {}
            hits = keyword_retrieve(visible=visible, query=queries[query_id], language="en", limit=10, counts=counts)
            times.append((time.perf_counter() - began) * 1000)
            if args.slow and times[-1] > args.slow:
                print(f"  slow: {times[-1]:.0f} ms, {counts}, question {query_id}")
            ranked = [doc_of[h.chunk_id] for h in hits]
            digest.update(repr([(doc_of[h.chunk_id], round(h.keyword or 0.0, 6)) for h in hits]).encode())
            scores.append(ndcg_at_10(ranked, qrels[query_id]))
        times.sort()
        print(f"questions {len(scores)}")
        print(f"keyword-only nDCG@10 {sum(scores) / len(scores):.4f}")
        print(f"rankings digest {digest.hexdigest()}")
        print(f"keyword p50 {times[len(times) // 2]:.1f} ms, p95 {times[int(len(times) * 0.95)]:.1f} ms")
    finally:
        collection_delete(collection=collection)
        tenant.delete()


if __name__ == "__main__":
    main()
