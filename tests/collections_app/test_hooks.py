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


def test_retrieval_registers_the_golden_questions_table_of_a_collection_file() -> None:
    from collections_app.hooks import collection_file_tables
    from retrieval.services.golden import GOLDEN_TABLE

    assert collection_file_tables() == [GOLDEN_TABLE] and GOLDEN_TABLE.name == "kb_golden_questions"


def test_with_no_table_registered_an_export_holds_only_the_formats_and_kbsites_document_tables(
    cast, collection, upload, monkeypatch, tmp_path
) -> None:
    import sqlite3

    from collections_app import hooks
    from collections_app.services.collection_file import collection_export
    from tests.files.documents import html_bytes
    from tests.retrieval.services.golden.corpus import OFFICE

    assert upload(cast.editor, collection, "office.html", html_bytes(OFFICE)).status_code == 202
    monkeypatch.setattr(hooks, "_collection_file_tables", {})
    path = tmp_path / "plain.db"
    collection_export(collection=collection, path=path)
    with sqlite3.connect(path) as store:
        tables = {name for (name,) in store.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert tables == {"store_meta", "agents_chunks", "collection_built", "kb_documents"}
