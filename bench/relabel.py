"""Relabelling a document's language: time for 2,000 paragraphs with vectors of the default model's width.

Only the language changes, yet each updated row is a new tuple: PostgreSQL writes it into every index of
the chunk table (the per-width HNSW index, the GIN keyword index, the btrees) and the keyword-statistics
triggers rewrite its postings. The script prints the time per paragraph for two relabels (to en, back to
de) and where the time goes (EXPLAIN ANALYZE of a relabel, and of the language column alone, rolled back).

Vectors: `--embedded` (100) paragraphs are embedded for real with the model; the other rows carry those
vectors plus gaussian noise, renormalised (as bench/search_latency.py grows its corpus), so the HNSW index
holds distinct vectors of the real width and distribution. Works in a temporary tenant, deleted at the end.

Run from the project root:  .venv/bin/python bench/relabel.py [--paragraphs 2000] [--embedded 100]
"""

from __future__ import annotations

import argparse
import os
import time
import uuid

from _common import setup_django


def sentence(i: int) -> str:
    roles = ["Arbeitnehmer", "Arbeitgeber", "Auszubildende", "Teilzeitkräfte", "Führungskräfte"]
    topics = ["Kündigungsfristen", "Urlaubsansprüche", "Arbeitszeiten", "Probezeiten", "Überstunden"]
    role, topic = roles[i % len(roles)], topics[(i // len(roles)) % len(topics)]
    return (
        f"Abschnitt {i}: Die {topic} für {role} sind im Arbeitsvertrag geregelt und betragen "
        f"mindestens {i % 9 + 2} Wochen, sofern der Tarifvertrag nichts anderes bestimmt."
    )


def explained(document, code: str, *, keywords: bool) -> list[str]:  # type: ignore[no-untyped-def]
    from django.db import connection, transaction

    from collections_app.models import Chunk
    from collections_app.sql import keyword_vector

    index = f", search_vector = {keyword_vector('%(code)s')}"
    sql = f"""
        EXPLAIN (ANALYZE) UPDATE {Chunk._meta.db_table} SET language = %(code)s {index if keywords else ""}
        WHERE document_id = %(document)s
    """
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(sql, {"code": code, "document": document.pk})
            lines = [row[0] for row in cursor.fetchall()]
        transaction.set_rollback(True)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paragraphs", type=int, default=2000)
    parser.add_argument("--embedded", type=int, default=100, help="paragraphs embedded for real (100)")
    args = parser.parse_args()
    setup_django()

    import numpy as np

    from accounts.models import Tenant
    from collections_app.models import Chunk, Document
    from collections_app.services import documents as ingestion
    from collections_app.services.collections import collection_create
    from collections_app.services.languages import document_language_set
    from embedding import get_embedder, get_model

    print(f"cpus {os.cpu_count()}, load average {os.getloadavg()[0]:.1f}")
    tenant = Tenant.objects.create(name=f"bench-relabel-{uuid.uuid4().hex[:10]}")
    try:
        collection = collection_create(tenant=tenant, name="relabel")
        model = get_model(collection.embedding_alias)
        texts = [sentence(i) for i in range(args.paragraphs)]
        real = np.asarray(get_embedder(collection.embedding_alias).embed_passages(texts[: args.embedded]))
        rng = np.random.default_rng(7)
        noise = rng.normal(0, 0.02, (args.paragraphs, model.dims))
        vectors = real[np.arange(args.paragraphs) % args.embedded] + noise
        vectors[: args.embedded] = real
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        document = Document.objects.create(
            tenant=tenant, collection=collection, content_hash="relabel", filename="tarif.md", status="done"
        )
        Document.objects.filter(pk=document.pk).update(language="de")
        Chunk.objects.bulk_create(
            Chunk(
                tenant=tenant,
                collection=collection,
                document=document,
                text=text,
                language="de",
                embedding=vectors[i].tolist(),
                embedding_dims=model.dims,
            )
            for i, text in enumerate(texts)
        )
        ingestion.document_keywords_index(document)  # the keyword index (and postings) as ingestion builds them
        for code in ("en", "de"):
            started = time.perf_counter()
            document_language_set(document=document, language=code)
            seconds = time.perf_counter() - started
            print(f"relabel to {code}: {seconds:.2f} s ({1000 * seconds / args.paragraphs:.2f} ms a paragraph)")
        for label, keywords in (("a relabel", True), ("the language column alone", False)):
            print(f"where the time goes (EXPLAIN ANALYZE of {label}, rolled back):")
            for line in explained(document, "en", keywords=keywords):
                if "Trigger" in line or "Execution Time" in line or line.startswith("Update"):
                    print("  " + line)
        print(f"load average at the end {os.getloadavg()[0]:.1f}")
    finally:
        tenant.delete()


if __name__ == "__main__":
    main()
