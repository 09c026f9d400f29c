"""Golden questions: checked, written, found by the names editors know their documents by."""

from __future__ import annotations

import re
import uuid
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import QuerySet

from collections_app.models import Chunk, ChunkKind, Collection, Document
from infra.errors import Conflict, Invalid
from infra.validation import text_problem
from retrieval.models import GoldenQuestion

MAX_QUESTION_CHARS = 4000  # what a search takes
MAX_NOTE_CHARS = 4000
MAX_MARKER_CHARS = 1000
MAX_ANSWERS = 100  # markers, documents or paragraphs of one question
MAX_QUESTIONS = 10_000  # per collection: an evaluation runs every one of them
FIELDS = ("question", "markers", "documents", "paragraphs", "control", "note")


class InvalidGolden(Invalid):
    pass


class GoldenQuestionTaken(Conflict):
    field = "question"


def golden_questions_for(collection: Collection) -> QuerySet[GoldenQuestion]:
    return GoldenQuestion.objects.filter(collection=collection).order_by("created_at", "id")


def golden_question_create(*, collection: Collection, **values: Any) -> GoldenQuestion:
    cleaned = golden_question_clean(collection=collection, values=values)
    if GoldenQuestion.objects.filter(collection=collection).count() >= MAX_QUESTIONS:
        raise InvalidGolden(f"a collection holds at most {MAX_QUESTIONS} golden questions")
    golden = GoldenQuestion(tenant_id=collection.tenant_id, collection=collection, **cleaned)
    _save(golden)
    return golden


MARKER_WORDS = 8  # a phrase long enough to be the paragraph's own, short enough to survive most rechunkings
_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+|\n+")


def golden_question_from_search(
    *, collection: Collection, question: str, paragraph_id: Any = None, note: str = ""
) -> GoldenQuestion:
    """A question asked on "Try a search", kept as a golden question: answered by the result's paragraph and a
    marker taken from its text (`paragraph_id`), or, without one, a control nothing should answer."""
    if paragraph_id is None:
        return golden_question_create(collection=collection, question=question, control=True, note=note)
    found = _uuid(paragraph_id)
    chunk = (
        Chunk.objects.filter(collection=collection, kind=ChunkKind.PARAGRAPH, pk=found).only("pk", "text").first()
        if found
        else None
    )
    if chunk is None:
        raise InvalidGolden(
            f"{str(paragraph_id)[:60]!r} is not a paragraph of this collection (ids come from a search's chunk_id)",
            field="paragraphs",
        )
    marker = marker_from(chunk)
    return golden_question_create(
        collection=collection,
        question=question,
        paragraphs=[str(chunk.pk)],
        markers=[marker] if marker else [],
        note=note,
    )


def marker_from(paragraph: Chunk) -> str:
    """A short phrase of the paragraph that no other live paragraph of its collection holds: the first
    MARKER_WORDS words of its first sentence that is its own (a heading line or a sentence shared word for word
    with another paragraph is skipped); its first such phrase when none is its own; "" for an empty paragraph.
    A marker is judged on the text handed back (case and whitespace ignored), so it outlives a re-index."""
    candidates = []
    for sentence in _SENTENCE_END.split(paragraph.text):
        words = sentence.split()
        if len(words) >= 3:
            candidates.append(" ".join(words[:MARKER_WORDS]).rstrip(".,;:!?"))
    if not candidates:
        return " ".join(paragraph.text.split()[:MARKER_WORDS])[:MAX_MARKER_CHARS]
    others = Chunk.objects.live().paragraphs().filter(collection_id=paragraph.collection_id).exclude(pk=paragraph.pk)
    for candidate in candidates[:4]:  # a query each; the first sentence is nearly always its own
        if not others.filter(text__icontains=candidate).exists():
            return candidate[:MAX_MARKER_CHARS]
    return candidates[0][:MAX_MARKER_CHARS]


def golden_question_update(*, golden: GoldenQuestion, **changes: Any) -> GoldenQuestion:
    cleaned = golden_question_clean(collection=golden.collection, values=changes, current=golden)
    for name, value in cleaned.items():
        setattr(golden, name, value)
    _save(golden, update_fields=[*cleaned, "updated_at"])
    return golden


def golden_question_delete(*, golden: GoldenQuestion) -> None:
    golden.delete()  # past evaluations keep the question's row as it was asked


def golden_question_clean(
    *,
    collection: Collection,
    values: dict[str, Any],
    current: GoldenQuestion | None = None,
    known: DocumentNames | None = None,
) -> dict[str, Any]:
    """The values as stored, or InvalidGolden naming the field and what to send instead."""
    unknown = sorted(set(values) - set(FIELDS))
    if unknown:
        raise InvalidGolden(f"unknown field {unknown[0]!r}: send {', '.join(FIELDS)}", field=unknown[0])
    cleaned: dict[str, Any] = {}
    if "question" in values:
        cleaned["question"] = _text(values["question"], "question", MAX_QUESTION_CHARS, blank=False)
    if "note" in values:
        cleaned["note"] = _text(values["note"] if values["note"] is not None else "", "note", MAX_NOTE_CHARS)
    if "control" in values:
        if not isinstance(values["control"], bool):
            raise InvalidGolden("control must be true or false", field="control")
        cleaned["control"] = values["control"]
    if "markers" in values:
        markers = [_text(m, "markers", MAX_MARKER_CHARS, blank=False) for m in _list(values["markers"], "markers")]
        cleaned["markers"] = list(dict.fromkeys(markers))
    if "documents" in values:
        cleaned["documents"] = documents_resolve(
            collection=collection, names=_list(values["documents"], "documents"), known=known
        )
    if "paragraphs" in values:
        cleaned["paragraphs"] = _paragraphs(collection, _list(values["paragraphs"], "paragraphs"))
    merged = {name: cleaned.get(name, getattr(current, name, None)) for name in ("markers", "documents", "paragraphs")}
    has_answer = any(merged.values())
    control = cleaned.get("control", current.control if current else False)
    if control and has_answer:
        raise InvalidGolden(
            "a control is a question nothing should answer: leave markers, documents and paragraphs empty, "
            "or set control to false",
            field="control",
        )
    if not control and not has_answer:
        raise InvalidGolden(
            "say what counts as the answer (markers, documents or paragraphs), or set control to true",
            field="markers",
        )
    if current is None and "question" not in cleaned:
        raise InvalidGolden("question is required", field="question")
    return cleaned


def _text(value: Any, name: str, limit: int, *, blank: bool = True) -> str:
    if not isinstance(value, str):
        raise InvalidGolden(f"{name} must be text", field=name)
    value = value.strip()
    problem = text_problem(value)
    if problem:
        raise InvalidGolden(f"{name} {problem}", field=name)
    if not value and not blank:
        raise InvalidGolden(f"{name} must not be empty", field=name)
    if len(value) > limit:
        raise InvalidGolden(f"{name} may be at most {limit} characters (it has {len(value)})", field=name)
    return value


def _list(value: Any, name: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise InvalidGolden(f"{name} must be a list", field=name)
    if len(value) > MAX_ANSWERS:
        raise InvalidGolden(f"{name} may hold at most {MAX_ANSWERS} entries", field=name)
    return value


def _uuid(value: Any) -> str | None:
    try:
        return str(uuid.UUID(str(value)))
    except ValueError:
        return None


def _paragraphs(collection: Collection, values: list[Any]) -> list[uuid.UUID]:
    parsed = [_uuid(v) for v in values]
    if None in parsed:
        bad = values[parsed.index(None)]
        raise InvalidGolden(f"{str(bad)[:60]!r} is not a paragraph id", field="paragraphs")
    ids = list(dict.fromkeys(i for i in parsed if i))
    found = {
        str(pk)
        for pk in Chunk.objects.filter(collection=collection, kind=ChunkKind.PARAGRAPH, pk__in=ids).values_list(
            "pk", flat=True
        )
    }
    missing = [i for i in ids if i not in found]
    if missing:
        # The same words whether the id is another collection's, another tenant's or nobody's.
        raise InvalidGolden(
            f"{missing[0]} is not a paragraph of this collection (ids come from a search's chunk_id)",
            field="paragraphs",
        )
    return [uuid.UUID(i) for i in ids]


# --- documents by the names editors know them by ----------------------------------------------------------


NAME_KINDS = ("file name", "file name without extension", "source", "source's last part")


@dataclass
class DocumentNames:
    """A collection's documents by id and by the names a person (or a BEIR corpus id) knows them by, checked in
    NAME_KINDS order: a file name is the most specific, a source's last part the least."""

    by_kind: dict[str, dict[str, set[str]]] = field(default_factory=dict)
    names_of: dict[str, str] = field(default_factory=dict)  # document id -> the name an export writes

    def resolve(self, name: str) -> str | set[str] | None:
        """The document id; the ids when several documents have that name; None when none has."""
        as_id = _uuid(name)
        if as_id is not None and as_id in self.names_of:
            return as_id
        for kind in NAME_KINDS:
            found = self.by_kind.get(kind, {}).get(name)
            if found:
                return next(iter(found)) if len(found) == 1 else found
        return None


def document_names(collection: Collection) -> DocumentNames:
    names = DocumentNames(by_kind={kind: defaultdict(set) for kind in NAME_KINDS})
    rows = list(Document.objects.filter(collection=collection).values_list("pk", "filename", "source_uri"))
    for pk, filename, source in rows:
        values = (filename, _stem(filename), source, source.rstrip("/").rsplit("/", 1)[-1] if "/" in source else "")
        for kind, value in zip(NAME_KINDS, values, strict=True):
            if value:
                names.by_kind[kind][value].add(str(pk))
    stems = names.by_kind["file name without extension"]
    for pk, filename, _ in rows:
        # An export names a document by its file name without extension when no other document shares it.
        # and no document is called exactly that (an import reads a file name first).
        stem = _stem(filename)
        unique = stem and len(stems[stem]) == 1 and stem not in names.by_kind["file name"]
        names.names_of[str(pk)] = stem if unique else filename
    return names


def _stem(filename: str) -> str:
    return PurePosixPath(filename).stem if "." in filename.lstrip(".") else ""


def documents_resolve(
    *, collection: Collection, names: Iterable[Any], known: DocumentNames | None = None
) -> list[uuid.UUID]:
    """Document ids from ids or names (file name, without extension, source): InvalidGolden names the first
    that names no document of this collection, or more than one."""
    known = known or document_names(collection)
    ids: list[uuid.UUID] = []
    for name in names:
        name = str(name) if isinstance(name, uuid.UUID) else name
        if not isinstance(name, str) or not name.strip():
            raise InvalidGolden("documents are named by id, file name or source", field="documents")
        found = known.resolve(name.strip())
        if found is None:
            raise InvalidGolden(
                f"{name.strip()[:80]!r} names no document of this collection (give its id, file name, file name "
                "without extension, or source)",
                field="documents",
            )
        if isinstance(found, set):
            raise InvalidGolden(
                f"{name.strip()[:80]!r} names {len(found)} documents of this collection: give the document's id",
                field="documents",
            )
        ids.append(uuid.UUID(found))
    return list(dict.fromkeys(ids))


def _save(golden: GoldenQuestion, update_fields: list[str] | None = None) -> None:
    try:
        with transaction.atomic():
            golden.save(update_fields=update_fields)
    except IntegrityError as exc:
        if "golden_question_unique_per_collection" in str(exc):
            raise GoldenQuestionTaken("this collection already has that golden question") from exc
        raise
