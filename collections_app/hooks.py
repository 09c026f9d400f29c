"""What other apps plug into this one's flows, registered explicitly (never a signal nobody sees connected).

collections_app never imports retrieval (pyproject [tool.importlinter]), yet two of its flows need retrieval's
answer: a re-index's cutover asks the golden gate (retrieval evaluates golden questions), and the cluster's
recovery round sweeps what a killed `measure` left behind. retrieval registers both in its AppConfig.ready();
with nothing registered, the gate cannot judge (it says so) and the sweep has nothing extra to do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from collections_app.models import Collection

# collection -> (the metrics of its golden questions as searches read it now, or None: it cannot judge; why not).
CutoverEvaluator = Callable[[Collection], tuple[dict[str, Any] | None, str]]

_cutover_evaluator: list[CutoverEvaluator] = []
_recovery_sweeps: list[Callable[[], object]] = []


def register_cutover_evaluator(evaluator: CutoverEvaluator) -> None:
    """The one function the golden gate evaluates with (a second registration replaces the first)."""
    _cutover_evaluator[:] = [evaluator]


def cutover_evaluator() -> CutoverEvaluator | None:
    return _cutover_evaluator[0] if _cutover_evaluator else None


def register_recovery_sweep(sweep: Callable[[], object]) -> None:
    """A sweep each recovery round runs after the documents' (once per function, however often registered)."""
    if sweep not in _recovery_sweeps:
        _recovery_sweeps.append(sweep)


def recovery_sweeps() -> list[Callable[[], object]]:
    return list(_recovery_sweeps)
