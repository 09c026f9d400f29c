"""Sections with bodies of ordinary words, long enough to be cut: (heading level, heading, body)."""

from __future__ import annotations

SENTENCE = (
    "refunds arrive within five working days once the parcel reaches our warehouse and a person has checked "
    "that the goods are unused complete and in their original packaging before the money goes back"
)
WORDS = SENTENCE.split(" ")


def body(seed: int, words: int) -> str:
    """Sentences of ordinary words, different per seed, about `words` long."""
    out = [WORDS[(seed * 7 + i * 3) % len(WORDS)] for i in range(words)]
    return " ".join(" ".join(out[i : i + 12]).capitalize() + "." for i in range(0, len(out), 12))


SECTIONS = [
    (1, "Handbook", body(1, 40)),
    (2, "Returns", body(2, 260)),
    (3, "Damaged goods", body(3, 90)),
    (2, "Shipping", body(4, 30)),
    (2, "Payroll", body(5, 180)),
]
