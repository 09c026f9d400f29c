"""Pipeline stages with plain data: fusion, the floor, windows and the trace."""

from __future__ import annotations

import pytest

from retrieval.selectors.search import Hit, Trace, build_windows, passes_floor, reciprocal_rank_fusion


def hit(chunk: str, ordinal: int = 0, semantic: float | None = None, document: str = "d1") -> Hit:
    return Hit(chunk_id=chunk, document_id=document, collection_id="c1", ordinal=ordinal, semantic=semantic)


def test_fusion_puts_a_paragraph_both_lists_found_above_one_only_one_list_ranked_first() -> None:
    keyword = [hit("only-keyword"), hit("both")]
    vector = [hit("only-vector", semantic=0.9), hit("both", semantic=0.85)]

    fused = reciprocal_rank_fusion({"keyword": keyword, "vector": vector}, k=60)

    assert fused[0].chunk_id == "both"
    assert fused[0].ranks == {"keyword": 2, "vector": 2}
    assert fused[0].semantic == 0.85  # the vector side's score travels with the fused hit


def test_fusion_weights_decide_between_the_two_first_places() -> None:
    lists = {"keyword": [hit("k")], "vector": [hit("v", semantic=0.9)]}

    assert reciprocal_rank_fusion(lists, weights={"vector": 1.5, "keyword": 0.5})[0].chunk_id == "v"
    assert reciprocal_rank_fusion(lists, weights={"vector": 0.5, "keyword": 1.5})[0].chunk_id == "k"


@pytest.mark.parametrize(
    ("semantic", "floor", "kept"),
    [(0.81, 0.8, True), (0.8, 0.8, True), (0.79, 0.8, False), (None, 0.8, False), (None, 0.0, True)],
)
def test_the_floor_keeps_only_scores_at_or_above_it_and_zero_turns_it_off(semantic, floor, kept) -> None:
    assert passes_floor(hit("a", semantic=semantic), floor) is kept


def test_a_window_stops_at_a_paragraph_the_reader_may_not_read() -> None:
    # Ordinal 3 is restricted: readable neighbours of a hit at 4 are 5 only, never 2 across the gap.
    readable = {"d1": {2, 4, 5}}

    [window] = build_windows([hit("a", ordinal=4, semantic=0.9)], readable, around=2)

    assert window.ordinals == [4, 5]


def test_touching_windows_of_one_document_merge_and_keep_the_best_score() -> None:
    hits = [hit("a", ordinal=1, semantic=0.82), hit("b", ordinal=3, semantic=0.9)]

    [window] = build_windows(hits, {"d1": {0, 1, 2, 3, 4}}, around=1)

    assert window.ordinals == [0, 1, 2, 3, 4] and window.score == 0.9


def test_windows_never_cross_into_another_document() -> None:
    hits = [hit("a", ordinal=5, document="d1"), hit("b", ordinal=0, document="d2")]

    windows = build_windows(hits, {"d1": {4, 5, 6}, "d2": {0, 1}}, around=1)

    assert [(w.document_id, w.ordinals) for w in windows] == [("d1", [4, 5, 6]), ("d2", [0, 1])]


def test_without_around_neighbouring_hits_stay_separate_results() -> None:
    hits = [hit("a", ordinal=1), hit("b", ordinal=2)]

    assert len(build_windows(hits, {}, around=0)) == 2


def test_the_trace_keeps_stage_order_times_what_ran_and_refuses_a_skip_without_reason() -> None:
    trace = Trace()
    trace.skipped("planning", "no planner")
    with trace.timed("fusion") as counts:
        counts["candidates"] = 3

    assert [s.to_json()["stage"] for s in trace.stages] == ["planning", "fusion"]
    assert trace.stages[1].to_json()["counts"] == {"candidates": 3}
    assert trace.stages[1].ms >= 0 and trace.stages[0].to_json()["reason"] == "no planner"
    with pytest.raises(ValueError, match="without a reason"):
        trace.skipped("rerank", "")
