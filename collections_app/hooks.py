"""What other apps plug into this one's flows, registered explicitly (never a signal nobody sees connected).

collections_app never imports retrieval (pyproject [tool.importlinter]), yet two of its flows need retrieval's
answer: a re-index's cutover asks the golden gate (retrieval evaluates golden questions), and the cluster's
recovery round sweeps what a killed `measure` left behind; a collection file carries the collection's golden
questions in a table of retrieval's; and deleting a document warns which golden questions refer to it. retrieval
registers all four in its AppConfig.ready(); with nothing registered, the gate cannot judge (it says so), the sweep
has nothing extra to do, a collection file holds only the format's own tables, and a deletion names no golden
question.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
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


# --- tables another app adds to a collection file ---------------------------------------------------------------


@dataclass(frozen=True)
class CollectionFileTable:
    """A table of a collection file that another app writes and reads back (golden questions: retrieval's).

    A plain reader of the format ignores it (only the format's own tables are required); a file without it imports
    as before. The file names documents by their number in `kb_documents` (`seq`) and paragraphs by that number and
    their ordinal, never by an id of this installation, so:

    - `write(collection, store, seqs)`: inside the export's snapshot, creates and fills its table; `seqs` maps each
      exported document's id to its number (a document not in it was not exported);
    - `check(store, collection_name)`: the file is untrusted: raises BadCollectionFile naming the problem (called
      when the file is uploaded, before anything is stored); a file without the table passes;
    - `read(collection, store, collection_name, documents)`: inside the import's transaction, after the paragraphs
      are written; `documents` maps a document's number in the file to the new document's id. Returns warnings for
      the import's build record (what could not come back, and why).
    """

    name: str
    write: Callable[[Collection, sqlite3.Connection, dict[Any, int]], object]
    check: Callable[[sqlite3.Connection, str], object]
    read: Callable[[Collection, sqlite3.Connection, str, dict[Any, Any]], list[str]]


_collection_file_tables: dict[str, CollectionFileTable] = {}


def register_collection_file_table(table: CollectionFileTable) -> None:
    """A table every export writes and every import reads (registered again under its name: replaced)."""
    _collection_file_tables[table.name] = table


def collection_file_tables() -> list[CollectionFileTable]:
    return list(_collection_file_tables.values())
