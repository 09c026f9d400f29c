"""Golden questions travel with the collection file: a table of their own, `kb_golden_questions`.

Registered in collections_app's hooks (retrieval/apps.py), so every export writes it and every import reads it
back; a plain reader of the format ignores it, and a file without it imports as before.

    seq         the question's number in the file
    collection  the collection it belongs to (a file may hold several)
    question    the question's text
    markers     JSON array of phrases that must appear in the answer
    documents   JSON array of document numbers (kb_documents.seq)
    paragraphs  JSON array of [document number, ordinal] pairs: the paragraph's place, since its id is this
                installation's and an import makes new ones
    control     1 when nothing should answer it
    note        the editor's note

An answer that was not exported (a paragraph hidden since, of another generation, or a document with no live
paragraph) is left out of the row; an import that finds a question left with no answer skips it and says so in the
import's build record, with its number, never its text.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from collections_app.hooks import CollectionFileTable
from collections_app.models import Chunk, ChunkKind, Collection
from collections_app.services.collection_file import BadCollectionFile
from infra.validation import loads_bounded
from retrieval.models import GoldenQuestion

from ._questions import (
    MAX_MARKER_CHARS,
    MAX_NOTE_CHARS,
    MAX_QUESTION_CHARS,
    MAX_QUESTIONS,
    InvalidGolden,
    _list,
    _text,
    document_names,
    golden_question_clean,
    golden_questions_for,
)

TABLE = "kb_golden_questions"
TABLE_SQL = f"""
CREATE TABLE {TABLE} (
    seq INTEGER PRIMARY KEY,
    collection TEXT NOT NULL,
    question TEXT NOT NULL,
    markers TEXT NOT NULL,
    documents TEXT NOT NULL,
    paragraphs TEXT NOT NULL,
    control INTEGER NOT NULL,
    note TEXT NOT NULL
)
"""
COLUMNS = ("seq", "question", "markers", "documents", "paragraphs", "control", "note")


def golden_file_write(collection: Collection, store: sqlite3.Connection, seqs: dict[Any, int]) -> None:
    """The collection's golden questions, their answers named by document number and ordinal (`seqs`: document
    id -> its number in the file; a document not in it was not exported)."""
    store.execute(TABLE_SQL)
    questions = list(golden_questions_for(collection))
    wanted = {pk for golden in questions for pk in golden.paragraphs}
    # Only paragraphs the export wrote (live, searchable): an answer elsewhere could name nothing in the file.
    places = {
        pk: (seqs[document_id], ordinal)
        for pk, document_id, ordinal in Chunk.objects.live()
        .paragraphs()
        .filter(collection=collection, pk__in=wanted, embedding__isnull=False)
        .values_list("pk", "document_id", "position__ordinal")
        if document_id in seqs
    }
    rows = [
        (
            seq,
            collection.name,
            golden.question,
            _json(list(golden.markers)),
            _json([seqs[d] for d in golden.documents if d in seqs]),
            _json([list(places[p]) for p in golden.paragraphs if p in places]),
            int(golden.control),
            golden.note,
        )
        for seq, golden in enumerate(questions, start=1)
    ]
    store.executemany(f"INSERT INTO {TABLE} VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)


def golden_file_check(store: sqlite3.Connection, name: str) -> None:
    """BadCollectionFile naming the first problem of the file's golden questions of collection `name` (none: the
    file has no such table, and imports as before)."""
    _rows(store, name)


def golden_file_read(
    collection: Collection, store: sqlite3.Connection, name: str, documents: dict[Any, Any]
) -> list[str]:
    """The file's golden questions, created in `collection` (just imported) with their answers linked to its new
    documents and paragraphs. Returns warnings: what could not come back."""
    rows = _rows(store, name)
    if not rows:
        return []
    warnings: list[str] = []
    referenced = {documents[seq] for row in rows for seq, _ in row["paragraphs"] if seq in documents}
    paragraph_of = {
        (document_id, ordinal): pk
        for document_id, ordinal, pk in Chunk.objects.filter(
            collection=collection, kind=ChunkKind.PARAGRAPH, document_id__in=referenced
        ).values_list("document_id", "position__ordinal", "pk")
    }
    known = document_names(collection)
    created: dict[str, GoldenQuestion] = {}
    dropped: dict[str, list[int]] = {}  # why -> the questions' numbers in the file
    lost = 0
    for row in rows:
        doc_ids = [str(documents[seq]) for seq in row["documents"] if seq in documents]
        paragraph_ids = [
            str(paragraph_of[key])
            for seq, ordinal in row["paragraphs"]
            if seq in documents and (key := (documents[seq], ordinal)) in paragraph_of
        ]
        lost += len(row["documents"]) - len(doc_ids) + len(row["paragraphs"]) - len(paragraph_ids)
        values = {
            "question": row["question"],
            "markers": row["markers"],
            "documents": doc_ids,
            "paragraphs": paragraph_ids,
            "control": row["control"],
            "note": row["note"],
        }
        try:
            cleaned = golden_question_clean(collection=collection, values=values, known=known)
        except InvalidGolden as exc:
            # Mostly: its answer did not come with the file, so nothing could judge it; a hand-made file can also
            # hold a control that names answers, said as such.
            why = "nothing left to judge them by" if exc.field == "markers" else str(exc)
            dropped.setdefault(why, []).append(row["seq"])
            continue
        if cleaned["question"] in created:
            continue  # the same question twice in one file: the first is kept (a collection holds it once)
        created[cleaned["question"]] = GoldenQuestion(tenant_id=collection.tenant_id, collection=collection, **cleaned)
    GoldenQuestion.objects.bulk_create(created.values())
    if lost:
        warnings.append(
            f"golden questions: {lost} answer(s) named a document or paragraph the file does not hold; left out"
        )
    for why, seqs in dropped.items():
        shown = ", ".join(str(seq) for seq in seqs[:10]) + (", ..." if len(seqs) > 10 else "")
        warnings.append(f"golden questions: {len(seqs)} not imported, {why} (numbers in the file: {shown})")
    return warnings


def _rows(store: sqlite3.Connection, name: str) -> list[dict[str, Any]]:
    kind = store.execute("SELECT type FROM sqlite_master WHERE name = ?", (TABLE,)).fetchone()
    if kind is None:
        return []
    if kind[0] != "table":
        raise BadCollectionFile(f"{TABLE} must be a table")
    found = {row[1] for row in store.execute(f"PRAGMA table_info({TABLE})")}
    lacking = sorted({"collection", *COLUMNS} - found)
    if lacking:
        raise BadCollectionFile(f"table {TABLE} lacks the column {', '.join(lacking)}")
    cursor = store.execute(
        f"SELECT {', '.join(COLUMNS)} FROM {TABLE} WHERE collection = ? ORDER BY seq LIMIT ?",
        (name, MAX_QUESTIONS + 1),
    )
    rows = [_checked(dict(zip(COLUMNS, row, strict=True))) for row in cursor]
    if len(rows) > MAX_QUESTIONS:
        raise BadCollectionFile(f"{TABLE} holds more than {MAX_QUESTIONS} questions of {name}")
    return rows


def _checked(row: dict[str, Any]) -> dict[str, Any]:
    try:
        _number(row["seq"], "seq (the question's number)")
    except InvalidGolden as exc:
        raise BadCollectionFile(f"{TABLE}: {exc}") from None
    where = f"{TABLE} row {row['seq']}"
    try:
        row["question"] = _text(row["question"], "its question", MAX_QUESTION_CHARS, blank=False)
        row["note"] = _text(row["note"], "its note", MAX_NOTE_CHARS)
        row["markers"] = [
            _text(m, "a marker", MAX_MARKER_CHARS, blank=False)
            for m in _list(_json_list(row["markers"], "markers"), "markers")
        ]
        row["documents"] = [
            _number(v, "a document number") for v in _list(_json_list(row["documents"], "documents"), "documents")
        ]
        pairs = _list(_json_list(row["paragraphs"], "paragraphs"), "paragraphs")
        if any(not isinstance(pair, list) or len(pair) != 2 for pair in pairs):
            raise InvalidGolden("paragraphs must be [document number, ordinal] pairs")
        row["paragraphs"] = [
            (_number(seq, "a document number"), _number(ordinal, "an ordinal")) for seq, ordinal in pairs
        ]
    except InvalidGolden as exc:
        raise BadCollectionFile(f"{where}: {exc}") from None
    if row["control"] not in (0, 1):
        raise BadCollectionFile(f"{where}: control must be 0 or 1")
    row["control"] = bool(row["control"])
    return row


def _json_list(value: object, what: str) -> Any:
    if not isinstance(value, str) or len(value) > 1024 * 1024:
        raise InvalidGolden(f"{what} must be JSON text")
    try:
        return loads_bounded(value)
    except ValueError:
        raise InvalidGolden(f"{what} is not JSON") from None


def _number(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 2**31 - 1:
        raise InvalidGolden(f"{what} must be a whole number from 0")
    return value


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


GOLDEN_TABLE = CollectionFileTable(name=TABLE, write=golden_file_write, check=golden_file_check, read=golden_file_read)

__all__ = ["GOLDEN_TABLE", "golden_file_check", "golden_file_read", "golden_file_write"]
