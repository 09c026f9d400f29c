"""The golden gate: a re-index that would make answers worse does not replace what searches read.

With `Collection.golden_gate` on, the cutover (services/reindex.py) evaluates the collection's golden questions
twice inside its own transaction: on the serving generation before the switch and on the new one after it,
both through the search pipeline as agents' searches run (the evaluator retrieval registers,
collections_app/hooks.py). If nDCG@10 or hit@5 falls by more than `golden_gate_tolerance`, the transaction
is rolled back: searches never saw the new generation, which stays staged, and a Build records both evaluations
and the reason, held back. An admin may cut it over anyway (`collection_cutover(..., anyway_by=...)`).

Three-valued, as `refused`: gate_passed null = not asked (gate off) or could not judge (no golden questions, no
evaluator: the reason says which; never "passed"), true = passed, false = held back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from collections_app.hooks import cutover_evaluator
from collections_app.models import Collection
from infra.errors import Conflict

GATED_METRICS = ("ndcg_at_10", "hit_at_5")


@dataclass
class GateVerdict:
    passed: bool | None
    record: dict[str, Any] = field(default_factory=dict)


class HeldBack(Conflict):
    """The golden gate held a re-index back: the collection keeps answering from the generation it serves."""

    def __init__(self, verdict: GateVerdict) -> None:
        super().__init__(verdict.record["reason"])
        self.verdict = verdict


def gate_serving(collection: Collection) -> GateVerdict | dict[str, Any]:
    """Before the switch: the serving generation's metrics, or the verdict when the gate is not asked or cannot
    judge (then nothing more is evaluated)."""
    if not collection.golden_gate:
        return GateVerdict(None, {"reason": "not asked: the golden gate is off"})
    evaluator = cutover_evaluator()
    if evaluator is None:
        return GateVerdict(None, {"reason": "cannot judge: no evaluator is registered"})
    metrics, why = evaluator(collection)
    if metrics is None:
        return GateVerdict(None, {"reason": f"cannot judge: {why}"})
    return metrics


def gate_candidate(collection: Collection, serving: dict[str, Any], generation: int) -> GateVerdict:
    """After the switch (in the same transaction): the new generation's metrics against the serving ones."""
    evaluator = cutover_evaluator()
    assert evaluator is not None  # gate_serving found one
    candidate, why = evaluator(collection)
    tolerance = collection.golden_gate_tolerance
    record: dict[str, Any] = {"serving": serving, "candidate": candidate, "tolerance": tolerance,
                              "generation": generation}  # fmt: skip
    if candidate is None:
        return GateVerdict(None, {**record, "reason": f"cannot judge: {why}"})
    worse = [
        f"{name} {serving[name]:.3f} → {candidate[name]:.3f}"
        for name in GATED_METRICS
        if serving.get(name) is not None
        and candidate.get(name) is not None
        and serving[name] - candidate[name] > tolerance
    ]
    if worse:
        reason = f"held back: {', '.join(worse)} (worse by more than {tolerance:g})"
        return GateVerdict(False, {**record, "reason": reason})
    return GateVerdict(True, {**record, "reason": f"passed: no gated metric fell by more than {tolerance:g}"})
