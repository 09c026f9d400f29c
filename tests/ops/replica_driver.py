"""The platform against a primary and its read replica, in a process of its own (tests/ops/test_replicas.py).

Started with DATABASE_URL (the primary) and KB_DATABASE_REPLICA_URLS (the standby) set, it reads one JSON
command a line on stdin and answers one JSON line on stdout:

- {"op": "setup", "paragraphs": N}: a tenant, a viewer key, a collection (floor off) and one document of N
  paragraphs, ingested inline (KB_TASKS_SYNC). Answers the key's secret.
- {"op": "search", "secret": ..., "seconds": S | "n": N}: searches through POST /api/search (the real view)
  for S seconds or N times; each answer's status, the trace's database stage, and the versions of the
  documents its results came from.
- {"op": "replace", "seconds": S}: new versions of the document, one after another, for S seconds: every
  one is a cutover on the primary (the old version retires in the publishing transaction).
- {"op": "map", "secret": ...}: the corpus map through its API view; its status.
"""

from __future__ import annotations

import io
import json
import sys
import time
from collections.abc import Callable
from typing import Any

import django

django.setup()

from rest_framework.test import APIClient  # noqa: E402

from accounts.issuing import api_key_create  # noqa: E402
from accounts.models import Role, Tenant  # noqa: E402
from collections_app.models import Collection, Document  # noqa: E402
from collections_app.services.collections import collection_create  # noqa: E402
from collections_app.services.documents import document_create  # noqa: E402

QUERY = "where are the lanterns kept"


def policy(version: int, paragraphs: int) -> bytes:
    lines = ["# Lanterns"]
    for i in range(paragraphs):
        lines.append(f"## Shelf {i}\n\nLanterns of edition {version} are kept on shelf {i}, row {i * 3 + version}.")
    return "\n\n".join(lines).encode()


def setup(paragraphs: int) -> dict[str, Any]:
    tenant = Tenant.objects.create(name="acme")
    collection = collection_create(tenant=tenant, name="handbook", min_score=0)
    document_create(collection=collection, filename="lanterns.md", content=io.BytesIO(policy(1, paragraphs)))
    document = Document.objects.get(collection=collection, filename="lanterns.md")
    assert document.status == "done", document.error
    return {"secret": api_key_create(tenant=tenant, role=Role.VIEWER).secret, "paragraphs": paragraphs}


def search(secret: str, seconds: float = 0, n: int = 0, path: str = "/api/search") -> dict[str, Any]:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    answers: list[dict[str, Any]] = []
    deadline = time.monotonic() + seconds
    while (n and len(answers) < n) or (seconds and time.monotonic() < deadline):
        response = client.post(
            path, {"query": QUERY, "collections": ["handbook"], "top_n": 50, "around": 0}, format="json"
        )
        body = response.json()
        if response.status_code != 200:
            answers.append({"status": response.status_code, "detail": body.get("detail")})
            continue
        database = next(s for s in body["trace"] if s["stage"] == "database")
        answers.append(
            {
                "status": 200,
                "database": database.get("counts", {}),
                "versions": sorted({r["document"]["version"] for r in body["results"]}),
                "results": len(body["results"]),
            }
        )
    return {"answers": answers}


def replace(seconds: float) -> dict[str, Any]:
    collection = Collection.objects.get(name="handbook")
    document = Document.objects.filter(collection=collection, filename="lanterns.md").order_by("-version").first()
    assert document is not None
    paragraphs = document.chunks.count()
    version = document.version
    deadline = time.monotonic() + seconds
    cutovers = 0
    while time.monotonic() < deadline:
        version += 1
        document_create(
            collection=collection, filename="lanterns.md", content=io.BytesIO(policy(version, paragraphs)), replace=True
        )
        cutovers += 1
    latest = Document.objects.filter(collection=collection, filename="lanterns.md").order_by("-version").first()
    assert latest is not None and latest.status == "done", latest and latest.error
    return {"cutovers": cutovers, "version": latest.version}


def corpus_map(secret: str) -> dict[str, Any]:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    collection = Collection.objects.get(name="handbook")
    response = client.get(f"/api/manage/collections/{collection.pk}/map")
    return {"status": response.status_code}


def main() -> None:
    ops: dict[str, Callable[..., dict[str, Any]]] = {
        "setup": setup,
        "search": search,
        "replace": replace,
        "map": corpus_map,
    }
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        command = json.loads(line)
        op = ops[command.pop("op")]
        try:
            answer = op(**command)
        except Exception as exc:  # the test shows it; the driver stays up for the next command
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
