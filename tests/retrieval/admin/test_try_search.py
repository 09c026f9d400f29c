"""The editor's "Try a search" page reads as an agent's answer does: each result's badge and score, its
keyword, vector and fused ranks, and for an empty answer the reason, the best score and the floor it missed."""

from __future__ import annotations

import re

from retrieval.models import SearchEvent
from tests.files.documents import HANDBOOK, html_bytes
from tests.margins import assert_clears, assert_falls_short, best_cosine

URL = "/admin/retrieval/searchevent/try/{}/"


def test_each_result_shows_its_badge_score_and_its_keyword_vector_and_fused_ranks(cast, staff, collection, upload):
    upload(cast.editor, collection, "handbook.html", html_bytes(HANDBOOK))
    response = staff.get(URL.format(collection.pk), {"q": "how are refunds paid back to my card"})
    page = response.content.decode()

    first = response.context["answer"]["results"][0]
    assert "original card" in first["text"]
    assert first["badge"] in ("supported", "weak")
    assert f"kb-badge-{first['badge']}" in page and f"score {first['score']:.3f}" in page
    # The refunds paragraph is first after fusion and is found by both lists (its words and its meaning).
    assert first["ranks"]["fused"] == 1
    assert first["ranks"]["keyword"] is not None and first["ranks"]["vector"] is not None
    ranks = re.search(r"fused #(\d+) · keyword #(\d+) · vector #(\d+)", page)
    assert ranks is not None and ranks.group(1) == "1"
    assert "empty-answer" not in page


def test_an_empty_answer_says_why_with_the_best_score_and_the_floor(cast, staff, collection, upload):
    upload(cast.editor, collection, "handbook.html", html_bytes(HANDBOOK))
    question = "which volcano erupted in Iceland in 2010"
    best = best_cosine(collection, question)
    response = staff.get(URL.format(collection.pk), {"q": question})
    page = response.content.decode()

    empty = response.context["answer"]["empty"]
    assert_falls_short(best, empty["floor"], what="the unrelated question's best paragraph")
    assert empty["reason"] == "below_floor"
    assert "none scored at or above the floor" in page
    assert abs(empty["best_score"] - best) < 0.001  # the trace's best candidate is the best paragraph
    assert f"{best:.3f}" in page and f"{empty['floor']}" in page
    assert empty["margin"] < 0 and f"{empty['margin']:.3f}" in page
    # The audit keeps the figures (the floor stage's counts), never the question.
    floor_stage = next(s for s in SearchEvent.objects.get().stages if s["stage"] == "floor")
    assert floor_stage["counts"]["best_score"] == empty["best_score"]


def test_a_result_that_clears_the_floor_is_not_explained_as_empty(cast, staff, collection, upload):
    upload(cast.editor, collection, "handbook.html", html_bytes(HANDBOOK))
    response = staff.get(URL.format(collection.pk), {"q": "when do parcels arrive"})
    answer = response.context["answer"]
    assert answer["empty"] is None
    assert_clears(answer["results"][0]["score"], answer["floor"], what="the delivery paragraph")
