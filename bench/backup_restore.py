"""Backup while 10 clients search and a document ingests; restore into a fresh var/; the same questions answer the same.

    .venv/bin/python bench/backup_restore.py        # ~3-5 min on 2 cores

1. In this installation (var/, or DATABASE_URL): a scratch tenant `bench-backup-…` with a collection of three
   documents read for real, a golden question, and the answers to 12 questions (floor off: full lists).
2. Ten threads search that collection and another thread reads a 60-section document into a second collection
   while `manage.py backup` runs as its own process.
3. A fresh installation in a temporary KB_VAR_DIR (its own embedded PostgreSQL, its own storage): `manage.py
   migrate`, `manage.py restore`, then the same questions asked there (`--answer`, a child process of this script
   with the fresh environment).
4. Checked: the restore's own verification (counts, checksums), every document of the scratch tenant and its
   paragraphs, builds and golden question, the ingesting document whole or absent (never half), and the answers
   identical (chunk ids, texts, scores). The scratch tenant is deleted at the end; the fresh var/ with it.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, setup_django

QUESTIONS = [
    "where can I park my car?", "where do I secure my cycle?", "when is lunch served?", "how do I print in colour?",
    "I lost my badge, what now?", "how much is a hotel night refunded?", "what is the daily allowance abroad?",
    "who approves a flight?", "how often must I change my password?", "how do I work from home?",
    "when is the helpdesk open?", "how long are backups kept?",
]  # fmt: skip
DOCUMENTS = {
    "office.html": [("Parking", "Staff cars must be left in the underground garage beneath building B."),
                    ("Bicycles", "Cyclists can lock their bikes in the covered rack next to the main entrance."),
                    ("Canteen", "Lunch is served between noon and two o'clock; vegetarian dishes are marked green."),
                    ("Printing", "Colour printers sit on the third floor and need a badge to release jobs."),
                    ("Badges", "A lost badge is replaced by reception; the old badge stops working at once.")],
    "travel.html": [("Hotels", "Hotel nights are refunded up to 140 euros in capitals and 110 euros elsewhere."),
                    ("Per diem", "The daily allowance abroad is 45 euros, paid with the next salary."),
                    ("Flights", "Flights need the approval of a director and are booked in economy class only.")],
    "it.html": [("Passwords", "Passwords are changed every ninety days and must be fourteen characters long."),
                ("VPN", "Working from home requires the VPN client, which starts automatically after login."),
                ("Helpdesk", "The helpdesk answers the phone from eight in the morning until six in the evening."),
                ("Backups", "Network drive files are backed up every night and kept for thirty days.")],
}  # fmt: skip


def _html(sections: list[tuple[str, str]]) -> bytes:
    body = "".join(f"<h2>{h}</h2><p>{p}</p>" for h, p in sections)
    return f"<!doctype html><html><body>{body}</body></html>".encode()


def answers(collection_id: str) -> list[list[list[object]]]:
    from collections_app.models import Collection
    from retrieval.selectors.search import collection_scope, search

    scope = collection_scope(collection=Collection.objects.get(pk=collection_id))
    return [[[r["chunk_id"], r["text"], r["score"]] for r in search(scope=scope, query=q).results] for q in QUESTIONS]


def _ingest(collection, name: str, content: bytes) -> None:  # type: ignore[no-untyped-def]
    from django.db import connection

    from collections_app.services.documents import document_create, document_ingest

    try:
        result = document_create(collection=collection, filename=name, content=io.BytesIO(content), queue=False)
        document_ingest(document_id=str(result.document.pk))
    finally:
        connection.close()


def _manage(*args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *args], capture_output=True, text=True, env=env, cwd=ROOT
    )
    if done.returncode != 0:
        raise SystemExit(f"manage.py {args[0]} failed:\n{done.stderr[-3000:]}")
    return done.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--answer", help=argparse.SUPPRESS)
    options = parser.parse_args()
    setup_django()
    if options.answer:
        print(json.dumps(answers(options.answer)))
        return

    from django.db import connection

    from accounts.models import Tenant
    from collections_app.models import Chunk, Document
    from collections_app.services.collections import collection_create
    from retrieval.models import GoldenQuestion
    from retrieval.selectors.search import collection_scope, search

    tenant = Tenant.objects.create(name=f"bench-backup-{uuid.uuid4().hex[:8]}")
    fresh = Path(tempfile.mkdtemp(prefix="kbsite-fresh-var-"))
    try:
        collection = collection_create(tenant=tenant, name="handbook", min_score=0)
        for name, sections in DOCUMENTS.items():
            _ingest(collection, name, _html(sections))
        GoldenQuestion.objects.create(
            tenant=tenant, collection=collection, question="where do staff cars go?", markers=["garage"]
        )
        before = answers(str(collection.pk))
        inbox = collection_create(tenant=tenant, name="inbox")
        big = _html([(f"Section {i}", " ".join(["refunds arrive within five working days"] * 12)) for i in range(60)])

        stop = threading.Event()
        searched: list[int] = []

        def searching() -> None:
            try:
                while not stop.is_set():
                    search(scope=collection_scope(collection=collection), query=QUESTIONS[len(searched) % 12])
                    searched.append(1)
            finally:
                connection.close()

        clients = [threading.Thread(target=searching) for _ in range(10)]
        reading = threading.Thread(target=_ingest, args=(inbox, "big.html", big))
        for thread in [*clients, reading]:
            thread.start()
        while not Document.objects.filter(collection=inbox, status="parsing").exists():
            time.sleep(0.05)
        archive = fresh / "kbsite.tar"
        started = time.perf_counter()
        print(_manage("backup", str(archive)))
        backup_seconds = time.perf_counter() - started
        status_after = Document.objects.get(collection=inbox).status
        stop.set()
        for thread in [*clients, reading]:
            thread.join()
        print(f"backup in {backup_seconds:.1f} s while {len(searched)} searches ran; big.html was {status_after}")

        env = {**os.environ, "KB_VAR_DIR": str(fresh / "var"), "KB_STORAGE_ROOT": str(fresh / "var" / "storage")}
        env.pop("DATABASE_URL", None)
        _manage("migrate", "--no-input", env=env)
        print(_manage("restore", str(archive), env=env))
        child = subprocess.run(
            [sys.executable, __file__, "--answer", str(collection.pk)], capture_output=True, text=True, env=env
        )
        if child.returncode != 0:
            raise SystemExit(f"asking the restored installation failed:\n{child.stderr[-3000:]}")
        after = json.loads(child.stdout.strip().splitlines()[-1])
        same = after == before
        print(f"{len(QUESTIONS)} questions, {sum(map(len, before))} results: identical after restore: {same}")
        paragraphs = Chunk.objects.filter(collection=collection).count()
        now = Document.objects.get(collection=inbox).status
        print(f"source: {paragraphs} paragraphs in handbook; inbox big.html now {now}")
        if not same:
            raise SystemExit("the restored installation answers differently")
    finally:
        Tenant.objects.filter(pk=tenant.pk).delete()
        shutil.rmtree(fresh, ignore_errors=True)


if __name__ == "__main__":
    main()
