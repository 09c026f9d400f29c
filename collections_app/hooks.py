"""What other apps plug into this one's flows, registered explicitly (never a signal nobody sees connected).

collections_app never imports retrieval (pyproject [tool.importlinter]), yet two of its flows need retrieval's
answer: a re-index's cutover asks the golden gate (retrieval evaluates golden questions), and the cluster's
recovery round sweeps what a killed `measure` left behind, and deleting a document warns which golden questions
refer to it. retrieval registers them in its AppConfig.ready(); with nothing registered, the gate cannot judge
(it says so), the sweep has nothing extra to do, and a deletion names no golden question.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from collections_app.models import Collection

# collection -> (the metrics of its golden questions as searches read it now, or None: it cannot judge; why not).
CutoverEvaluator = Callable[[Collection], tuple[dict[str, Any] | None, str]]

# (collection, document ids) -> the golden questions that refer to those documents or their paragraphs, as
# {"id": ..., "question": ...}, per document id (a document nobody refers to is left out).
DocumentReferences = Callable[[Collection, list[str]], dict[str, list[dict[str, str]]]]

_cutover_evaluator: list[CutoverEvaluator] = []
_document_references: list[DocumentReferences] = []
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


def register_document_references(finder: DocumentReferences) -> None:
    """The one function that says who refers to a document (a second registration replaces the first)."""
    _document_references[:] = [finder]


def document_references(collection: Collection, document_ids: list[str]) -> dict[str, list[dict[str, str]]]:
    """The golden questions referring to each of the documents (none registered: none known)."""
    if not _document_references or not document_ids:
        return {}
    return _document_references[0](collection, document_ids)
