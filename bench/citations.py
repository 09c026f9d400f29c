"""The citation check's cost: POST /api/citations/verify with 10 and 100 citations against a 2,000-paragraph document.

The document is written as bench/paragraph_edit.py writes it (50 paragraphs embedded for real, the others their
vectors plus noise, keyword-indexed with the ingestion's SQL). One real search (`around=1`) gives the search_id and
its surfaced paragraphs; each check then cites, in turn, surfaced paragraphs with their exact quote, the same with a
reworded quote (the similarity search over the paragraph's passages), paragraphs never surfaced, and invented ids,
so every fact is computed. Prints the median and p95 of --runs checks per size, in ms, through the API with a real
viewer key (authentication, the check, its CitationCheck row, the answer). Works in a temporary tenant, deleted at
the end.

Run from the project root:  .venv/bin/python bench/citations.py [--runs 30]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import uuid

from _common import setup_django
from paragraph_edit import _document


def _citations(size: int, surfaced: list[tuple[str, str]], others: list[str]) -> list[dict[str, str]]:
    cited: list[dict[str, str]] = []
    while len(cited) < size:
        for paragraph_id, text in surfaced:
            cited.append({"paragraph_id": paragraph_id, "quote": text[:80]})
            cited.append({"paragraph_id": paragraph_id, "quote": "requests are answered by the desk " + text[-40:]})
        cited += [{"paragraph_id": p} for p in others[:4]]
        cited.append({"paragraph_id": str(uuid.uuid4()), "quote": "a sentence nobody wrote"})
    return cited[:size]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--paragraphs", type=int, default=2000)
    args = parser.parse_args()
    setup_django()

    from rest_framework.test import APIClient

    from accounts.issuing import api_key_create
    from accounts.models import Tenant
    from collections_app.models import Chunk
    from collections_app.services.collections import collection_create

    print(f"cpus {os.cpu_count()}, load average {os.getloadavg()[0]:.2f}")
    tenant = Tenant.objects.create(name=f"bench-citations-{time.time_ns()}")
    try:
        collection = collection_create(tenant=tenant, name="handbook")
        document = _document(collection, args.paragraphs, 50)
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {api_key_create(tenant=tenant, role='viewer').secret}")
        answer = client.post(
            "/api/search", {"query": "how fast does the refunds desk answer", "around": 1}, format="json"
        )
        assert answer.status_code == 200, answer.content
        search = answer.json()
        shown = [r["chunk_id"] for r in search["results"]]
        surfaced = [(str(pk), text) for pk, text in Chunk.objects.filter(pk__in=shown).values_list("pk", "text")]
        others = [
            str(pk)
            for pk in Chunk.objects.filter(document=document).exclude(pk__in=shown)[:4].values_list("pk", flat=True)
        ]
        print(f"document: {args.paragraphs} paragraphs; the search surfaced {len(shown)} results")
        for size in (10, 100):
            body = {"search_id": search["search_id"], "citations": _citations(size, surfaced, others)}
            times = []
            for _ in range(args.runs):
                began = time.perf_counter()
                checked = client.post("/api/citations/verify", body, format="json")
                times.append((time.perf_counter() - began) * 1000)
                assert checked.status_code == 200, checked.content
            facts = checked.json()["citations"]
            quotes = {q: sum(1 for c in facts if c["quote"] == q) for q in ("exact", "normalised", "absent", None)}
            times.sort()
            p95 = times[int(0.95 * (len(times) - 1))]
            print(
                f"  {size:>3} citations: median {statistics.median(times):7.1f} ms   p95 {p95:7.1f} ms"
                f"   (exists {sum(c['exists'] for c in facts)}, surfaced {sum(bool(c['surfaced']) for c in facts)}, "
                f"quotes {quotes})"
            )
    finally:
        tenant.delete()
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
