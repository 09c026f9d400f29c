"""Editing one paragraph of a 2,000-paragraph document, end to end: the API request to its answer.

The document is read for real (a Markdown file of --paragraphs sections, each one paragraph, ingested through
the ordinary path: parsed, chunked, labelled, embedded by the collection's model, published with its keyword
index and HNSW entries). Then each operation runs --runs times through the management API (DRF test client,
a real editor key: authentication, the service's one transaction, the answer's serialization) on a paragraph
near the start, so a split or a merge moves ~2,000 neighbours' ordinals (the worst place):

- edit: new text (one paragraph embedded again, its keyword index rebuilt);
- split / merge-next: two rows embedded, ~2,000 ordinals moved; then merged back (one embedded);
- hide / unhide: no embedding, the keyword index emptied and rebuilt;
- revert of the edit (its old text embedded again).

Prints the median and the worst of each, in ms. Works in a temporary tenant, deleted at the end.

Run from the project root:  .venv/bin/python bench/paragraph_edit.py [--paragraphs 2000] [--runs 10]
"""

from __future__ import annotations

import argparse
import io
import statistics
import time
from unittest import mock

from _common import setup_django


def markdown(paragraphs: int) -> bytes:
    topics = ["refunds", "shipping", "payroll", "holidays", "travel", "security", "training", "equipment"]
    sections = []
    for i in range(paragraphs):
        topic = topics[i % len(topics)]
        sections.append(
            f"## Rule {i}: {topic}\n\nRule {i} says how {topic} work for team {i % 37}: requests go to the "
            f"{topic} desk within {i % 9 + 2} days, and the desk answers within {i % 5 + 1} working days."
        )
    return ("# Staff handbook\n\n" + "\n\n".join(sections)).encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--paragraphs", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    setup_django()

    from django.db import transaction
    from rest_framework.test import APIClient

    from collections_app.models import Chunk, Document, ParagraphEdit, Tenant
    from collections_app.services import documents as ingestion
    from collections_app.services.collections import collection_create
    from collections_app.services.keys import api_key_create

    tenant = Tenant.objects.create(name=f"bench-paragraph-edit-{time.time_ns()}")
    try:
        collection = collection_create(tenant=tenant, name="handbook")
        started = time.perf_counter()
        # Uploaded without queueing its task, then read here as a worker would.
        with mock.patch.object(ingestion, "document_queue_ingest", lambda **kwargs: None), transaction.atomic():
            document = ingestion.document_create(
                collection=collection, filename="handbook.md", content=io.BytesIO(markdown(args.paragraphs)),
                uploaded_by="bench",
            ).document  # fmt: skip
        ingestion.document_ingest(document_id=str(document.pk))
        document = Document.objects.get(pk=document.pk)
        count = Chunk.objects.filter(document=document).count()
        print(f"document: {count} paragraphs, read and embedded in {time.perf_counter() - started:.1f} s")
        assert document.status == "done", document.error

        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {api_key_create(tenant=tenant, role='editor').secret}")
        base = f"/api/manage/collections/{collection.pk}/documents/{document.pk}"

        def target() -> Chunk:
            return Chunk.objects.filter(document=document).editable().get(ordinal=5)

        def timed(name: str, method: str, url: str, body: dict | None = None) -> None:
            began = time.perf_counter()
            answer = getattr(client, method)(url, body or {}, format="json")
            times[name].append((time.perf_counter() - began) * 1000)
            assert answer.status_code in (200, 204), answer.content

        times: dict[str, list[float]] = {k: [] for k in ("edit", "revert", "split", "merge-next", "hide", "unhide")}
        for run in range(args.runs):
            row = target()
            url = f"{base}/paragraphs/{row.pk}"
            timed("edit", "patch", url, {"text": f"{row.text} (checked {run})"})
            last = ParagraphEdit.objects.filter(document=document).order_by("-created_at").first()
            assert last is not None
            timed("revert", "post", f"{base}/paragraph-edits/{last.pk}/revert")
            timed("split", "post", f"{url}/split", {"at": row.text.index(" ", len(row.text) // 2)})
            timed("merge-next", "post", f"{url}/merge-next")
            timed("hide", "patch", url, {"hidden": True})
            timed("unhide", "patch", url, {"hidden": False})
        assert Chunk.objects.filter(document=document).count() == count
        print(f"one paragraph of {count}, {args.runs} runs each, through the API (ms):")
        for name, values in times.items():
            print(f"  {name:<11} median {statistics.median(values):7.1f}   worst {max(values):7.1f}")
    finally:
        tenant.delete()


if __name__ == "__main__":
    main()
