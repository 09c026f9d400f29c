"""Judging one answer against a golden question, and the totals of an evaluation. Plain functions, no database.

A result *satisfies* an answer when
- a marker appears in its text (case and runs of whitespace ignored: the text handed back, windows included);
- a judged paragraph's text appears in it and it comes from that paragraph's document (so a paragraph stitched
  into a neighbour's window counts), or it cites that paragraph;
- it comes from a judged document.

found / rank: the first result that satisfies any answer (1-based). nDCG@10 (binary gains): a result gains 1
when it satisfies an answer no earlier result satisfied; at most R results gain, R = min(10, the largest of the
numbers of markers, paragraphs and documents), and the ideal ranking puts R gains first. A result that only
repeats an answer already met (a second paragraph of the same judged document) gains nothing, as BEIR counts
each judged document once.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

NDCG_DEPTH = 10
_SPACE = re.compile(r"\s+")


def normalized(text: str) -> str:
    """What a marker is compared on: case-folded, every run of whitespace one space."""
    return _SPACE.sub(" ", text.casefold()).strip()


@dataclass(frozen=True)
class Answers:
    """What counts as a question's answer. `paragraphs` maps a paragraph id to (its document id, its text);
    a paragraph whose row is gone (a re-index made new ones) is in `gone`, and counts for nothing."""

    markers: tuple[str, ...] = ()
    paragraphs: dict[str, tuple[str, str]] = field(default_factory=dict)
    documents: frozenset[str] = frozenset()
    gone: tuple[str, ...] = ()

    @property
    def ideal(self) -> int:
        return min(NDCG_DEPTH, max(len(self.markers), len(self.paragraphs), len(self.documents)))


@dataclass(frozen=True)
class Judgement:
    rank: int | None  # 1-based rank of the first result that answers; None: not found
    ndcg: float
    met: list[str]  # the answers met, as "marker: ...", "paragraph <id>", "document <id>"

    @property
    def found(self) -> bool:
        return self.rank is not None


def satisfied(result: dict[str, Any], answers: Answers) -> set[str]:
    """The answers one returned result meets (keys as in Judgement.met)."""
    text = normalized(result.get("text") or "")
    document = str((result.get("document") or {}).get("id") or "")
    met = {f"marker: {m}" for m in answers.markers if normalized(m) and normalized(m) in text}
    for paragraph, (of_document, paragraph_text) in answers.paragraphs.items():
        cited = str(result.get("chunk_id")) == paragraph
        stitched = of_document == document and bool(normalized(paragraph_text)) and normalized(paragraph_text) in text
        if cited or stitched:
            met.add(f"paragraph {paragraph}")
    if document in answers.documents:
        met.add(f"document {document}")
    return met


def judge(results: Sequence[dict[str, Any]], answers: Answers) -> Judgement:
    rank: int | None = None
    seen: set[str] = set()
    dcg, gains = 0.0, 0
    for position, result in enumerate(results, start=1):
        met = satisfied(result, answers)
        if met and rank is None:
            rank = position
        new = met - seen
        seen |= met
        if new and position <= NDCG_DEPTH and gains < answers.ideal:
            dcg += 1 / math.log2(position + 1)
            gains += 1
    ideal = sum(1 / math.log2(position + 1) for position in range(1, answers.ideal + 1))
    return Judgement(rank=rank, ndcg=round(dcg / ideal, 6) if ideal else 0.0, met=sorted(seen))


def totals(rows: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """An evaluation's metrics from its rows: hit@1, hit@5, MRR and nDCG@10 over the questions with an answer;
    controls answered (results handed back) against refused (nothing handed back); latency in ms."""
    rows = list(rows)
    judged = [r for r in rows if not r["control"]]
    controls = [r for r in rows if r["control"]]
    latencies = sorted(r["latency_ms"] for r in rows)

    def share(hits: int) -> float | None:
        return round(hits / len(judged), 6) if judged else None

    return {
        "questions": len(judged),
        "found": sum(1 for r in judged if r["rank"] is not None),
        "hit_at_1": share(sum(1 for r in judged if r["rank"] == 1)),
        "hit_at_5": share(sum(1 for r in judged if r["rank"] is not None and r["rank"] <= 5)),
        "mrr": round(sum(1 / r["rank"] for r in judged if r["rank"]) / len(judged), 6) if judged else None,
        "ndcg_at_10": round(statistics.fmean(r["ndcg"] for r in judged), 6) if judged else None,
        "controls": len(controls),
        "controls_answered": sum(1 for r in controls if r["answered"]),
        "controls_refused": sum(1 for r in controls if not r["answered"]),
        "latency_ms": {
            "p50": round(statistics.median(latencies), 2) if latencies else None,
            "p95": round(latencies[min(len(latencies) - 1, math.ceil(0.95 * len(latencies)) - 1)], 2)
            if latencies
            else None,
            "max": round(latencies[-1], 2) if latencies else None,
        },
    }
