"""Judging one answer: markers, paragraphs (windows included) and documents; rank and nDCG@10."""

from __future__ import annotations

import math

import pytest

from retrieval.services.golden import Answers, judge, totals


def result(text: str, document: str = "d1", chunk: str = "c0") -> dict:
    return {"text": text, "document": {"id": document}, "chunk_id": chunk}


def test_a_marker_is_found_whatever_its_case_and_spacing() -> None:
    judged = judge([result("nothing"), result("Bikes go in the covered\n  rack.")], Answers(markers=("Covered rack",)))
    assert (judged.rank, judged.met) == (2, ["marker: Covered rack"])
    assert judged.ndcg == pytest.approx(1 / math.log2(3))


def test_a_paragraph_stitched_into_a_neighbours_window_counts_but_not_from_another_document() -> None:
    answers = Answers(paragraphs={"p9": ("d1", "Lunch is served at noon.")})
    window = result("Canteen. Lunch is served  at noon. Green dishes.", chunk="p8")
    assert judge([window], answers).rank == 1
    assert judge([result("Lunch is served at noon.", document="d2")], answers).rank is None
    assert judge([result("other", chunk="p9")], answers).rank == 1  # it cites the paragraph


def test_a_document_counts_once_and_ndcg_reaches_one_only_when_the_answers_lead() -> None:
    answers = Answers(documents=frozenset({"d1", "d2"}))
    ideal = judge([result("a", "d1"), result("b", "d2"), result("c", "d3")], answers)
    assert ideal.ndcg == pytest.approx(1.0)
    repeated = judge([result("a", "d1"), result("b", "d1"), result("c", "d2")], answers)
    expected = (1 + 1 / math.log2(4)) / (1 + 1 / math.log2(3))
    assert repeated.rank == 1 and repeated.ndcg == pytest.approx(expected, abs=1e-6)


def test_a_paragraph_and_its_marker_met_by_one_result_score_one() -> None:
    answers = Answers(markers=("rack",), paragraphs={"p1": ("d1", "The covered rack.")})
    assert judge([result("The covered rack.", chunk="p1")], answers).ndcg == pytest.approx(1.0)


def test_totals_count_controls_apart_and_average_over_the_judged_questions() -> None:
    rows: list[dict] = [
        {"control": False, "rank": 1, "ndcg": 1.0, "answered": True, "latency_ms": 10.0},
        {"control": False, "rank": 4, "ndcg": 0.5, "answered": True, "latency_ms": 30.0},
        {"control": False, "rank": None, "ndcg": 0.0, "answered": False, "latency_ms": 20.0},
        {"control": True, "rank": None, "ndcg": 0.0, "answered": True, "latency_ms": 40.0},
    ]
    metrics = totals(rows)
    assert (metrics["questions"], metrics["found"], metrics["controls"], metrics["controls_answered"]) == (3, 2, 1, 1)
    assert metrics["hit_at_1"] == pytest.approx(1 / 3, abs=1e-6)
    assert metrics["hit_at_5"] == pytest.approx(2 / 3, abs=1e-6)
    assert metrics["mrr"] == pytest.approx((1 + 1 / 4) / 3, abs=1e-6)
    assert metrics["ndcg_at_10"] == pytest.approx(0.5, abs=1e-6)
    assert metrics["latency_ms"]["max"] == 40.0
