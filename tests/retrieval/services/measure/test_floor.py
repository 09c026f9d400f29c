"""The floor read off a measure's rows: between the answers' lowest score and the controls' highest."""

from __future__ import annotations

from retrieval.services.measure import floor_read_off


def row(*, control: bool = False, answer: float | None = None, best: float | None = None) -> dict:
    return {"control": control, "answer_score": answer, "best_score": best if best is not None else answer}


def test_answers_above_every_control_give_a_band_between_the_two_and_a_floor_inside_it() -> None:
    rows = [row(answer=0.91), row(answer=0.84), row(answer=None, best=0.7),  # the last one was not found
            row(control=True, best=0.78), row(control=True, best=0.66)]  # fmt: skip
    floor = floor_read_off(rows)
    assert floor["separated"] is True
    assert floor["lowest_answer"] == 0.84 and floor["highest_control"] == 0.78 and floor["band"] == [0.78, 0.84]
    assert 0.78 < floor["suggested"] <= 0.84
    # The suggested floor keeps every found answer and refuses every control.
    assert all(r["answer_score"] >= floor["suggested"] for r in rows if not r["control"] and r["answer_score"])
    assert all(r["best_score"] < floor["suggested"] for r in rows if r["control"])
    assert floor["overlap"] is None


def test_overlapping_answers_and_controls_are_reported_with_by_how_much_and_what_each_end_costs() -> None:
    floor = floor_read_off([row(answer=0.8), row(answer=0.9), row(control=True, best=0.85)])
    assert floor["separated"] is False and floor["suggested"] is None
    assert floor["overlap"] == 0.05 and floor["band"] == [0.8, 0.85]
    assert "loses 1 of 2 answers" in floor["note"] and "lets 1 of 1 controls through" in floor["note"]


def test_without_a_control_no_floor_is_read() -> None:
    floor = floor_read_off([row(answer=0.8)])
    assert floor["separated"] is None and floor["suggested"] is None and "no control" in floor["note"]
