"""What a judge behind KB_LLM_URL costs per question and what it changes, on real and unrelated questions.

The material is bench/data/xlang's held-out half (bench/_xlang.py), ingested as bench/eval_xlang.py does (run
`eval_xlang.py --ingest --half heldout` once first). Four sets, drawn by the hash of the fact id (the same on every
run), `--per-set` questions each (15 by default: 30 real and 30 unrelated questions):

  real, same language       question[L] over the L passages (L cycles through en, de, sr, mk, he)
  real, cross-language      question[en] over the X passages and question[X] over the English ones
  unrelated, same language  unrelated[L] over the L passages: nothing in the collection answers it
  unrelated, cross-language unrelated[en] over X's passages and unrelated[X] over English

Every question goes through the real `retrieval.selectors.search.search()` at the collection's defaults, once per
configuration:

  none      KB_LLM_URL unset: no model is asked (what ships without an endpoint)
  judge     the collection has a judge (built-in prompt), KB_PLANNING off: one chat call per search with results
  planning  the same judge, and planning on (what setting KB_LLM_URL alone turns on: one more call per search)

Printed per set and configuration: how many came back answered (results, or results a judge withheld), what the
judge said (approved, refused, could not judge: it answered neither yes nor no, failed or timed out), how many
came back answered after it, and for real questions how many of those hold the right paragraph; then the cost:
the judge's and the planner's call time (p50, p95) and tokens, and the whole search's time beside `none`.

The endpoint is whatever KB_LLM_URL names (an OpenAI-compatible server on this machine; README "A judge on your
own machine"); KB_LLM_TIMEOUT and KB_LLM_MODEL are read as the platform reads them. No question text is printed.

Run from the project root:
  KB_LLM_URL=http://127.0.0.1:8080/v1 .venv/bin/python bench/judge.py [--per-set 15] [--configs none,judge,planning]
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import logging
import os
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from _common import setup_django
from _xlang import LANGUAGES, OTHERS, Fact, label, read_facts

CONFIGS = ("none", "judge", "planning")
SETS = ("real, same language", "real, cross-language", "unrelated, same language", "unrelated, cross-language")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--half", default="heldout", help="which half of bench/data/xlang (default: heldout)")
    parser.add_argument("--per-set", type=int, default=15, help="questions per set (default: 15)")
    parser.add_argument("--configs", default=",".join(CONFIGS), help=f"comma-separated, of {', '.join(CONFIGS)}")
    parser.add_argument("--prompt", default="", help="a judge prompt in place of the built-in one (a file's path)")
    parser.add_argument("--judge-timeout", type=float, default=60.0, help="the judge's own timeout, s (default: 60)")
    parser.add_argument("--rows", default="", help="also write one JSON line per question here, as it is asked")
    parser.add_argument("--report", default="", help="print the report of a --rows file (a run cut short) and stop")
    return parser.parse_args()


@dataclass(frozen=True)
class Question:
    set: str
    text: str
    language: str  # the passages it is asked over (a language filter, as eval_xlang.py asks)
    relevant: str | None  # the document that answers it; None: nothing does


def questions(facts: list[Fact], docs: dict[tuple[str, str], str], per_set: int) -> list[Question]:
    """`per_set` questions per set, each fact used once per set, in the order of its id's hash."""
    facts = sorted(
        (f for f in facts if all((f.id, c) in docs for c in LANGUAGES)),
        key=lambda f: hashlib.sha256(f"judge:{f.id}".encode()).hexdigest(),
    )
    chosen: list[Question] = []
    for number, fact in enumerate(facts[:per_set]):
        same = LANGUAGES[number % len(LANGUAGES)]
        other = OTHERS[number % len(OTHERS)]
        asked, written = ("en", other) if number % 2 == 0 else (other, "en")
        chosen += [
            Question(SETS[0], fact.question[same], same, docs[fact.id, same]),
            Question(SETS[1], fact.question[asked], written, docs[fact.id, written]),
            Question(SETS[2], fact.unrelated[same], same, None),
            Question(SETS[3], fact.unrelated[asked], written, None),
        ]
    return chosen


@dataclass
class Row:
    answered: bool  # results came back, or a judge withheld them
    verdict: str  # approved | refused | could not judge | not asked
    after: bool  # results came back
    right_before: bool  # the relevant document among what came back or was withheld
    right_after: bool
    search_ms: float
    judge: tuple[float, int | None, int | None] | None = None  # ms, tokens in, tokens out
    planner_ms: list[float] = field(default_factory=list)
    translator_ms: list[float] = field(default_factory=list)
    translator_failed: int = 0


def ask(scope, question: Question) -> Row:  # type: ignore[no-untyped-def]
    from retrieval.selectors.search import search

    answer = search(scope=scope, query=question.text, filters={"language": label(question.language)})
    shown = [r["document"]["id"] for r in answer.results]
    held = [r["document"]["id"] for r in answer.withheld]
    stage = next((s for s in answer.stages if s.name == "judge"), None)
    if stage is None or stage.status == "skipped":
        verdict = "not asked"
    elif stage.status == "failed":
        verdict = "could not judge"
    else:
        verdict = str(stage.counts.get("verdict"))
    judge = next(((c.ms, c.tokens_in, c.tokens_out) for c in answer.calls if c.kind == "judge"), None)
    return Row(
        answered=bool(shown or held), verdict=verdict, after=bool(shown),
        right_before=question.relevant in shown + held, right_after=question.relevant in shown,
        search_ms=answer.latency_ms, judge=judge,
        planner_ms=[c.ms for c in answer.calls if c.kind == "planner"],
        translator_ms=[c.ms for c in answer.calls if c.kind == "translator"],
        translator_failed=sum(not c.ok for c in answer.calls if c.kind == "translator"),
    )  # fmt: skip


@contextmanager
def configured(config: str, args: argparse.Namespace, collection) -> Iterator[None]:  # type: ignore[no-untyped-def]
    from django.test import override_settings

    from retrieval.services.judges import collection_judge_remove, collection_judge_set

    if config == "none":
        collection_judge_remove(collection=collection)
        with override_settings(KB_LLM_URL=""):
            yield
        return
    prompt = Path(args.prompt).read_text(encoding="utf-8") if args.prompt else ""
    collection_judge_set(collection=collection, prompt=prompt, timeout=args.judge_timeout)
    try:
        with override_settings(KB_PLANNING=config == "planning"):
            yield
    finally:
        collection_judge_remove(collection=collection)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))] if ordered else float("nan")


def report(config: str, rows: dict[str, list[Row]], baseline_ms: float | None) -> None:
    print(f"\n{config}:")
    print(f"  {'set':<27} asked answered approved refused no-verdict answered-after right-before right-after")
    for name in SETS:
        got = rows.get(name, [])
        count = {v: sum(r.verdict == v for r in got) for v in ("approved", "refused", "could not judge")}
        real = name.startswith("real")
        right = f"{sum(r.right_before for r in got):12d} {sum(r.right_after for r in got):11d}" if real else ""
        print(
            f"  {name:<27} {len(got):5d} {sum(r.answered for r in got):8d} {count['approved']:8d}"
            f" {count['refused']:7d} {count['could not judge']:10d} {sum(r.after for r in got):14d} {right}"
        )
    every = [r for got in rows.values() for r in got]
    judged = [r.judge for r in every if r.judge]
    searches = [r.search_ms for r in every]
    line = f"  search p50 {percentile(searches, 0.5):.0f} ms, p95 {percentile(searches, 0.95):.0f} ms"
    if baseline_ms is not None and config != "none":
        line += f" (none: p50 {baseline_ms:.0f} ms)"
    print(line)
    if judged:
        # A call that failed or timed out is recorded without tokens (the endpoint reported no usage).
        answered = [j for j in judged if j[1] is not None]
        ms = [j[0] for j in answered]
        tokens_in = [j[1] for j in answered if j[1] is not None]
        tokens_out = [j[2] for j in answered if j[2] is not None]
        print(
            f"  judge calls {len(judged)}, {len(judged) - len(answered)} timed out or failed; the others:"
            f" p50 {percentile(ms, 0.5):.0f} ms, p95 {percentile(ms, 0.95):.0f} ms,"
            f" tokens in p50 {statistics.median(tokens_in) if tokens_in else 'n/a'}"
            f" (p95 {percentile([float(t) for t in tokens_in], 0.95):.0f}),"
            f" out p50 {statistics.median(tokens_out) if tokens_out else 'n/a'}"
        )
    planned = [ms for r in every for ms in r.planner_ms]
    if planned:
        p50, p95 = percentile(planned, 0.5), percentile(planned, 0.95)
        print(f"  planner calls {len(planned)}: p50 {p50:.0f} ms, p95 {p95:.0f} ms")
    translated = [r for r in every if r.translator_ms]
    if translated:
        calls = sum(len(r.translator_ms) for r in translated)
        failed = sum(r.translator_failed for r in translated)
        slowest = percentile([max(r.translator_ms) for r in translated], 0.5)
        print(
            f"  translation: {len(translated)} searches, {calls} calls ({failed} failed or timed out);"
            f" the slowest call of a search p50 {slowest:.0f} ms"
        )


def report_rows(path: str) -> None:
    """The report of a --rows file: what a run that was cut short had measured."""
    by_config: dict[str, dict[str, list[Row]]] = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        config, name = row.pop("config"), row.pop("set")
        row["judge"] = tuple(row["judge"]) if row["judge"] else None
        by_config.setdefault(config, {}).setdefault(name, []).append(Row(**row))
    baseline: float | None = None
    for config, rows in by_config.items():
        if config == "none":
            baseline = percentile([r.search_ms for got in rows.values() for r in got], 0.5)
        report(config, rows, baseline)


def main() -> int:
    args = parse_args()
    if args.report:
        report_rows(args.report)
        return 0
    setup_django()
    logging.getLogger("collections_app").setLevel(logging.WARNING)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per chat call
    from django.conf import settings
    from eval_xlang import TENANT, collection_name, corpus

    from collections_app.models import Collection
    from retrieval.selectors.search import SearchScope

    configs = [c for c in args.configs.split(",") if c]
    if any(c not in CONFIGS for c in configs):
        raise SystemExit(f"--configs: each of {', '.join(CONFIGS)}")
    if any(c != "none" for c in configs) and not settings.KB_LLM_URL:
        raise SystemExit("set KB_LLM_URL to the chat endpoint to measure (README: A judge on your own machine)")
    collection = Collection.objects.filter(tenant__name=TENANT, name=collection_name(args.half, "rule")).first()
    if collection is None:
        raise SystemExit(f"run `.venv/bin/python bench/eval_xlang.py --ingest --half {args.half}` first")
    asked = questions(read_facts(args.half), corpus(collection), args.per_set)
    scope = SearchScope(tenant_id=collection.tenant_id, collections=[collection])
    print(
        f"{len(asked)} questions ({args.per_set} per set) over {collection.name}; model {settings.KB_LLM_MODEL or '-'}"
        f", KB_LLM_TIMEOUT {settings.KB_LLM_TIMEOUT:g} s, judge timeout {args.judge_timeout:g} s,"
        f" prompt {'from ' + args.prompt if args.prompt else 'built-in'};"
        f" load {' '.join(f'{v:.2f}' for v in os.getloadavg())}"
    )
    with configured("none", args, collection):  # the first search loads the models: not measured
        ask(scope, asked[0])
    baseline: float | None = None
    for config in configs:
        rows: dict[str, list[Row]] = {}
        started = time.perf_counter()
        with configured(config, args, collection):
            for question in asked:
                row = ask(scope, question)
                rows.setdefault(question.set, []).append(row)
                if args.rows:
                    with open(args.rows, "a", encoding="utf-8") as out:
                        out.write(json.dumps({"config": config, "set": question.set, **dataclasses.asdict(row)}) + "\n")
        if config == "none":
            baseline = percentile([r.search_ms for got in rows.values() for r in got], 0.5)
        report(config, rows, baseline)
        print(f"  ({time.perf_counter() - started:.0f} s; load {' '.join(f'{v:.2f}' for v in os.getloadavg())})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
