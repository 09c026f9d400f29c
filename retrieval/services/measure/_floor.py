"""The floor read off a measure: where answers' scores end and controls' begin. A plain function, no database.

Run unfloored, every question hands back its best results with their semantic scores. The lowest score at which
an answer was found (`answer_score` of each found question) against the highest score a control reached
(`best_score` of each control): when every answer scores above every control, any floor between the two keeps
every answer and refuses every control; when they overlap, the report says by how much and what each end costs.
"""

from __future__ import annotations

from typing import Any


def floor_read_off(rows: list[dict[str, Any]]) -> dict[str, Any]:
    answers = sorted(r["answer_score"] for r in rows if not r["control"] and r.get("answer_score") is not None)
    controls = sorted(r["best_score"] for r in rows if r["control"] and r.get("best_score") is not None)
    report: dict[str, Any] = {
        "answers": len(answers),
        "controls": len(controls),
        "lowest_answer": answers[0] if answers else None,
        "highest_control": controls[-1] if controls else None,
        "separated": None,
        "band": None,
        "suggested": None,
        "overlap": None,
    }
    if not answers or not controls:
        report["note"] = "no found answer to read a floor from" if not answers else "no control to read a floor from"
        return report
    low, high = answers[0], controls[-1]
    if low > high:
        report.update(separated=True, band=[high, low], suggested=round((low + high) / 2, 4))
        report["note"] = f"any floor above {high} and at most {low} keeps every answer and refuses every control"
    else:
        lost = sum(1 for a in answers if a <= high)
        passed = sum(1 for c in controls if c >= low)
        report.update(separated=False, band=[low, high], overlap=round(high - low, 4))
        report["note"] = (
            f"answers and controls overlap by {high - low:.4f}: a floor above {high} refuses every control and "
            f"loses {lost} of {len(answers)} answers; a floor at {low} keeps every answer and lets {passed} of "
            f"{len(controls)} controls through"
        )
    return report
