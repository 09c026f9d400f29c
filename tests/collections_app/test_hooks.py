"""What retrieval plugs into collections_app's flows without collections_app importing it."""

from __future__ import annotations

from collections_app.hooks import cutover_evaluator, recovery_sweeps
from retrieval.services.golden import evaluations_sweep, gate_evaluate
from retrieval.services.measure import measures_sweep


def test_retrieval_registers_the_golden_gate_and_the_measure_and_evaluation_sweeps_at_start() -> None:
    assert cutover_evaluator() is gate_evaluate
    assert measures_sweep in recovery_sweeps() and evaluations_sweep in recovery_sweeps()


def test_the_cluster_recovery_round_runs_the_registered_sweeps(db, monkeypatch) -> None:
    from collections_app.management.commands import run_cluster

    ran = []
    monkeypatch.setattr(run_cluster, "documents_recover", lambda **_: None)
    monkeypatch.setattr(run_cluster, "recovery_sweeps", lambda: [lambda: ran.append("swept")])
    run_cluster.Command()._recover(cluster_start=False)
    assert ran == ["swept"]
