"""The parallel material of bench/data/xlang: one fact per line, in five languages, split in two halves.

Each line of bench/data/xlang/*.jsonl: {"id", "topic", "passage": {en, de, sr, mk, he}, "question": {...},
"unrelated": {...}}: a short paragraph, a question it answers, and a question nothing in the set answers, each
written in English, German, Serbian (Latin script), Macedonian and Hebrew. Written for the project (issue 18).

The halves are fixed by the id alone (its SHA-256's first byte even: calibration, odd: held out), so adding lines
never moves one from a half to the other: floors and weights are chosen on the calibration half, and the figures
quoted (bench/README.md, docs/DECISIONS.md) are those of the held-out half.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data" / "xlang"
LANGUAGES = ("en", "de", "sr", "mk", "he")
OTHERS = ("de", "sr", "mk", "he")  # the languages English is crossed with, both ways
HALVES = ("calibration", "heldout")


@dataclass(frozen=True)
class Fact:
    id: str
    topic: str
    passage: dict[str, str]
    question: dict[str, str]
    unrelated: dict[str, str]


def half_of(fact_id: str) -> str:
    return HALVES[hashlib.sha256(fact_id.encode()).digest()[0] % 2]


def read_facts(half: str | None = None, folder: Path = DATA) -> list[Fact]:
    """Every complete line of the folder's *.jsonl (a line being written is skipped), of one half or both."""
    facts: dict[str, Fact] = {}
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
                fact = Fact(row["id"], row["topic"], row["passage"], row["question"], row["unrelated"])
            except (ValueError, KeyError, TypeError):
                continue
            if all(fact.passage.get(c) and fact.question.get(c) and fact.unrelated.get(c) for c in LANGUAGES):
                facts[fact.id] = fact
    return [f for _, f in sorted(facts.items()) if half is None or half_of(f.id) == half]


def label(code: str) -> str:
    """The data's language code as kbsite labels it (Serbian is `sh`, with Croatian and Bosnian)."""
    return "sh" if code == "sr" else code
