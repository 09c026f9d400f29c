"""Golden questions in and out: JSON lines (our own fields) and BEIR (`queries.jsonl` + a `qrels` TSV).

BEIR's qrels name corpus ids; here a corpus id names a document of the collection by its id, file name, file name
without extension, source or the source's last part (in that order: `_questions.NAME_KINDS`), so SciFact's
`<corpus id>.md` documents are found by their corpus ids. An export writes each document's file name without
extension (its file name when another document shares it). What qrels cannot say (markers, paragraphs, a control,
the note) travels in each query's `metadata`, so BEIR out and in again keeps every judgement.

An import is all or nothing: every problem is reported with its file and line, and nothing is written. A question
already in the collection (same text) gets the imported judgements; others are created.
"""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from collections_app.models import Collection
from infra.errors import DomainError
from infra.validation import loads_bounded
from retrieval.models import GoldenQuestion

from ._questions import (
    FIELDS,
    MAX_QUESTIONS,
    DocumentNames,
    InvalidGolden,
    document_names,
    golden_question_clean,
    golden_questions_for,
)

MAX_IMPORT_BYTES = 20 * 1024 * 1024
SHOWN_PROBLEMS = 10
QRELS_HEADER = "query-id\tcorpus-id\tscore"


class ImportTooLarge(DomainError):
    meaning = "too_large"


@dataclass
class ImportReport:
    created: int = 0
    updated: int = 0
    # Queries of a BEIR file that judge nothing (another split's) and, with skip_unknown, unknown corpus ids.
    skipped: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"created": self.created, "updated": self.updated, "skipped": len(self.skipped),
                "skipped_reasons": self.skipped[:SHOWN_PROBLEMS]}  # fmt: skip


class _Problems:
    def __init__(self, where: str) -> None:
        self.where = where
        self.found: list[str] = []

    def add(self, message: str) -> None:
        self.found.append(message)

    def raise_any(self) -> None:
        if not self.found:
            return
        shown = "; ".join(self.found[:SHOWN_PROBLEMS])
        more = f" (and {len(self.found) - SHOWN_PROBLEMS} more)" if len(self.found) > SHOWN_PROBLEMS else ""
        raise InvalidGolden(f"{len(self.found)} problem(s), nothing imported: {shown}{more}", field=self.where)


def _text_of(raw: bytes, name: str) -> str:
    if len(raw) > MAX_IMPORT_BYTES:
        raise ImportTooLarge(f"{name} may be at most {MAX_IMPORT_BYTES // (1024 * 1024)} MB")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidGolden(f"{name} is not UTF-8 text (byte {exc.start})", field=name) from None


def _json_lines(text: str, name: str, problems: _Problems) -> list[tuple[int, dict[str, Any]]]:
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = loads_bounded(line)
        except ValueError as exc:
            problems.add(f"{name} line {number}: not JSON ({exc})")
            continue
        if not isinstance(record, dict):
            problems.add(f"{name} line {number}: expected a JSON object")
            continue
        records.append((number, record))
    return records


# --- JSON lines ---------------------------------------------------------------------------------------------


def golden_export_jsonl(*, collection: Collection) -> str:
    """One JSON object per line: question, markers, documents, paragraphs, control, note (ids as text)."""
    lines = []
    for golden in golden_questions_for(collection):
        lines.append(
            json.dumps(
                {
                    "question": golden.question,
                    "markers": golden.markers,
                    "documents": [str(d) for d in golden.documents],
                    "paragraphs": [str(p) for p in golden.paragraphs],
                    "control": golden.control,
                    "note": golden.note,
                },
                ensure_ascii=False,
            )
        )
    return "".join(line + "\n" for line in lines)


def golden_import_jsonl(*, collection: Collection, content: bytes) -> ImportReport:
    """Lines as golden_export_jsonl writes them; `documents` may name documents (file name, source) too."""
    problems = _Problems("file")
    records = _json_lines(_text_of(content, "file"), "file", problems)
    known = document_names(collection)
    values = []
    for number, record in records:
        cleaned = _clean(collection, record, known, problems, where=f"file line {number}")
        if cleaned is not None:
            values.append(cleaned)
    problems.raise_any()
    return _write(collection, values, ImportReport())


# --- BEIR ---------------------------------------------------------------------------------------------------


def golden_export_beir(*, collection: Collection) -> bytes:
    """A zip as BEIR lays a dataset out: `queries.jsonl` and `qrels/test.tsv` (score 1 per judged document)."""
    known = document_names(collection)
    queries, qrels = [], [QRELS_HEADER]
    for golden in golden_questions_for(collection):
        metadata = {
            name: value
            for name, value in (
                ("markers", golden.markers),
                ("paragraphs", [str(p) for p in golden.paragraphs]),
                ("control", golden.control),
                ("note", golden.note),
            )
            if value
        }
        queries.append(json.dumps({"_id": str(golden.pk), "text": golden.question, "metadata": metadata},
                                  ensure_ascii=False))  # fmt: skip
        for document in golden.documents:
            qrels.append(f"{golden.pk}\t{known.names_of.get(str(document), str(document))}\t1")
    buffer = io.BytesIO()
    # Stored, not deflated: a golden set is small, and what it holds stays greppable.
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("queries.jsonl", "".join(q + "\n" for q in queries))
        archive.writestr("qrels/test.tsv", "\n".join(qrels) + "\n")
    return buffer.getvalue()


def golden_import_beir(
    *, collection: Collection, queries: bytes, qrels: bytes, skip_unknown: bool = False
) -> ImportReport:
    """BEIR `queries.jsonl` (`_id`, `text`, optional `metadata`) and a qrels TSV (query-id, corpus-id, score;
    a header line is allowed). Judgements with a score above 0 count; a query no line judges is skipped (a BEIR
    queries file holds every split's) unless its metadata makes it a control or gives markers or paragraphs.
    A corpus id naming no document is a problem, or with `skip_unknown` a skipped judgement."""
    report = ImportReport()
    problems = _Problems("queries")
    texts: dict[str, tuple[int, dict[str, Any]]] = {}
    for number, record in _json_lines(_text_of(queries, "queries"), "queries", problems):
        query_id, text = record.get("_id"), record.get("text")
        if not isinstance(query_id, str | int) or isinstance(query_id, bool) or not str(query_id).strip():
            problems.add(f"queries line {number}: `_id` is missing")
        elif not isinstance(text, str) or not text.strip():
            problems.add(f"queries line {number}: `text` is missing or empty")
        elif str(query_id) in texts:
            problems.add(f"queries line {number}: `_id` {str(query_id)[:40]!r} was already given on line "
                         f"{texts[str(query_id)][0]}")  # fmt: skip
        else:
            texts[str(query_id)] = (number, record)
    problems.raise_any()

    problems = _Problems("qrels")
    known = document_names(collection)
    judged: dict[str, list[str]] = {}
    for number, line in enumerate(_text_of(qrels, "qrels").splitlines(), start=1):
        if not line.strip() or (number == 1 and line.lower().startswith("query-id")):
            continue
        columns = line.split("\t")
        if len(columns) == 4 and columns[1] in ("0", "Q0"):
            columns = [columns[0], columns[2], columns[3]]  # TREC's four columns
        if len(columns) != 3:
            problems.add(f"qrels line {number}: expected 3 tab-separated columns (query-id, corpus-id, score), "
                         f"found {len(columns)}")  # fmt: skip
            continue
        query_id, corpus_id, score = (c.strip() for c in columns)
        try:
            relevant = int(score) > 0
        except ValueError:
            problems.add(f"qrels line {number}: score {score[:20]!r} is not a whole number")
            continue
        if query_id not in texts:
            problems.add(f"qrels line {number}: query-id {query_id[:40]!r} is not in queries")
            continue
        if not relevant:
            continue
        found = known.resolve(corpus_id)
        if isinstance(found, set):
            problems.add(f"qrels line {number}: corpus-id {corpus_id[:60]!r} names {len(found)} documents")
        elif found is None and skip_unknown:
            report.skipped.append(f"qrels line {number}: corpus-id {corpus_id[:60]!r} names no document")
        elif found is None:
            problems.add(f"qrels line {number}: corpus-id {corpus_id[:60]!r} names no document of this collection "
                         "(matched by id, file name, file name without extension or source)")  # fmt: skip
        else:
            judged.setdefault(query_id, []).append(found)
    problems.raise_any()

    problems = _Problems("queries")
    values = []
    for query_id, (number, record) in texts.items():
        given = record.get("metadata")
        metadata: dict[str, Any] = given if isinstance(given, dict) else {}
        ours: dict[str, Any] = {
            name: metadata[name] for name in ("markers", "paragraphs", "control", "note") if name in metadata
        }
        if query_id not in judged and not any(ours.get(n) for n in ("markers", "paragraphs", "control")):
            report.skipped.append(f"queries line {number}: no judgement")
            continue
        record = {"question": record["text"], "documents": judged.get(query_id, []), **ours}
        cleaned = _clean(collection, record, known, problems, where=f"queries line {number}")
        if cleaned is not None:
            values.append(cleaned)
    problems.raise_any()
    return _write(collection, values, report)


# --- shared -------------------------------------------------------------------------------------------------


def _clean(
    collection: Collection, record: dict[str, Any], known: DocumentNames, problems: _Problems, *, where: str
) -> dict[str, Any] | None:
    unknown = sorted(set(record) - set(FIELDS))
    if unknown:
        problems.add(f"{where}: unknown field {unknown[0]!r} (fields: {', '.join(FIELDS)})")
        return None
    record = {"markers": [], "documents": [], "paragraphs": [], "control": False, "note": "", **record}
    if "question" not in record:
        problems.add(f"{where}: `question` is missing")
        return None
    try:
        # Documents' names are read once for the whole file (`known`), not once per line.
        return golden_question_clean(collection=collection, values=record, known=known)
    except InvalidGolden as exc:
        problems.add(f"{where}: {exc.field + ': ' if exc.field else ''}{exc}")
        return None


def _write(collection: Collection, values: list[dict[str, Any]], report: ImportReport) -> ImportReport:
    with transaction.atomic():
        held = {g.question: g for g in GoldenQuestion.objects.select_for_update().filter(collection=collection)}
        new = [v for v in values if v["question"] not in held]
        if len(held) + len({v["question"] for v in new}) > MAX_QUESTIONS:
            raise InvalidGolden(f"a collection holds at most {MAX_QUESTIONS} golden questions; nothing imported")
        for cleaned in values:
            golden = held.get(cleaned["question"])
            if golden is None:
                golden = GoldenQuestion(tenant_id=collection.tenant_id, collection=collection, **cleaned)
                golden.save()
                held[golden.question] = golden
                report.created += 1
            else:
                for name, value in cleaned.items():
                    setattr(golden, name, value)
                golden.save()
                report.updated += 1
    return report
