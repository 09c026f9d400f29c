"""Editors fix paragraphs by hand: edit, split, merge with the next, hide and unhide, revert (issue 20).

Each operation is one transaction on the live generation's rows of one document: a search sees the paragraphs
before it or after it, never half (neighbours' ordinals included; a search reads one snapshot,
retrieval/selectors/search/_pipeline.py). Only the paragraphs whose text changed are embedded again (with the model the
rows were built with, `served_alias`) and their keyword index recomputed (the BM25 statistics follow through
their triggers); nothing is parsed. Reader labels, page, section and metadata carry over; the language is
detected again unless the document's is pinned.

Every operation is a ParagraphEdit row (who, when, what, the text before and after) anchored to the parser
output (services/documents/_edits.py), so every rebuild replays it while its anchor matches, and reports it
stale when a new version of the file changed the paragraph. A stale edit is re-applied to a paragraph an editor
chooses, or discarded.

Long edits leave the request (issue 39): embedding is what an operation costs (a 100,000-character paragraph is
~60 windows of the model, 35-100 s on two busy cores, and a revert embeds the old text again), so an operation whose
texts to embed exceed EMBED_IN_REQUEST_CHARS stops before it writes anything, is recorded as a `pending` edit and
answers at once (EditPending: the API's 202). A task (paragraph_edit_finish) runs the same operation twice: first to
learn what it embeds (rolled back), then, with the vectors computed outside any transaction, for real in one short
transaction that turns the pending row into the applied edit. Until then searches read the paragraph as it was; an
operation that no longer applies by then (the paragraph changed, a re-index began) ends `failed` with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from collections_app.models import (
    Chunk,
    ChunkKind,
    ChunkPosition,
    Collection,
    Document,
    DocumentStatus,
    EditOperation,
    EditStatus,
    ParagraphEdit,
)
from collections_app.selectors import breadcrumb_title
from collections_app.services.documents import merged_text, split_continues, split_parts, text_hash
from collections_app.sql import keyword_vector
from embedding import get_embedder
from infra.errors import Conflict, DomainError, Invalid
from infra.validation import MAX_PARAGRAPH_CHARS, paragraph_text_problem, text_problem
from ingestion import ChunkDraft, detect_language

# The most text (the paragraphs with their breadcrumbs) an operation embeds inside a request: two or three of the
# model's windows, about a second on two busy cores. A paragraph the chunker cut (chunk_size 1,000 characters by
# default) is far below it; a longer edit is finished by a task.
EMBED_IN_REQUEST_CHARS = 4_000


REINDEX_PENDING = (
    "a re-index of this collection is being built (or waits for a model change): edit its paragraphs once it is "
    "done, so the edit is not lost at its cutover"
)
EDIT_PENDING = "an edit of this document is being embedded (pending); try again in a moment"


PARAGRAPH_CHANGED = (
    "this paragraph has changed since you read it (edited, split or merged by someone else): read it again and "
    "make your change on what it says now"
)


class ParagraphNotFound(DomainError):
    meaning = "not_found"


def _as_seen(paragraph: Chunk, seen: str | None) -> None:
    """A change made on what the editor read, or none: `seen` is text_hash() of the text they changed (None: not
    checked). Without it, a save from a page opened before a split put the split-off half back in twice."""
    if seen is not None and text_hash(paragraph.text) != seen:
        raise Conflict(PARAGRAPH_CHANGED)


class EditPending(Exception):
    """The operation embeds too much to wait for: recorded as `edit` (pending), finished by a task."""

    def __init__(self, edit: ParagraphEdit) -> None:
        super().__init__("the edit is being embedded")
        self.edit = edit


class _LongEmbedding(Exception):
    pass


class _Planned(Exception):
    """What the operation would embed, and with which model: raised where it would embed, before it writes."""

    def __init__(self, texts: list[str], alias: str) -> None:
        super().__init__("planned")
        self.texts, self.alias = texts, alias


# How this thread's operation embeds: "request" (at once unless long, then deferred), "plan" (stop and say what),
# "ready" (the task's vectors, else at once).
_mode: ContextVar[str] = ContextVar("kb_edit_embedding", default="request")
_vectors: ContextVar[dict[str, list[float]]] = ContextVar("kb_edit_vectors", default={})  # noqa: B039 - read only
# How long a pending edit may hold its document: a task that has not finished it by then never will.
PENDING_EDIT_BOUND = timedelta(minutes=15)
# The pending edit a task finishes: the operation records itself on that row instead of a new one.
_finishing: ContextVar[ParagraphEdit | None] = ContextVar("kb_edit_finishing", default=None)


@contextmanager
def _embedding(mode: str, vectors: dict[str, list[float]] | None = None, finishing: ParagraphEdit | None = None
               ) -> Iterator[None]:  # fmt: skip
    tokens = (_mode.set(mode), _vectors.set(vectors or {}), _finishing.set(finishing))
    try:
        yield
    finally:
        _finishing.reset(tokens[2])
        _vectors.reset(tokens[1])
        _mode.reset(tokens[0])


@dataclass
class _Scope:
    """The locked rows an operation works on."""

    collection: Collection
    document: Document
    paragraph: Chunk


# --- the operations ----------------------------------------------------------------------------------------


def paragraph_edit(
    *, document: Document, paragraph_id: Any, text: str, by: str, seen: str | None = None
) -> list[Chunk]:
    """Give a paragraph new text (its breadcrumb stays derived). Embeds that one paragraph again; a long text is
    embedded by a task (EditPending). `seen`: text_hash() of the text the editor changed (Conflict if it changed)."""
    text = _checked_text(text)
    return _unless_long(
        lambda: _edit(document, paragraph_id, text, by, seen),
        document=document, operation=EditOperation.EDIT, by=by, paragraph_id=paragraph_id, after=[{"text": text}],
    )  # fmt: skip


def _edit(document: Document, paragraph_id: Any, text: str, by: str, seen: str | None = None) -> list[Chunk]:
    with transaction.atomic():
        scope = _lock(document, paragraph_id)
        paragraph = scope.paragraph
        _as_seen(paragraph, seen)
        if paragraph.text == text:
            return [paragraph]  # nothing changed: no edit recorded, nothing embedded
        anchor = _anchor(paragraph)
        before = [_shape(paragraph)]
        _set_text(scope, paragraph, text)
        _record(scope, EditOperation.EDIT, anchor, before, [_shape(paragraph)], {}, by)
        return [paragraph]


def paragraph_split(*, document: Document, paragraph_id: Any, at: int, by: str, seen: str | None = None) -> list[Chunk]:
    """Cut a paragraph at character `at` into two, both with its page, section and labels. Embeds the two (a long
    paragraph's by a task: EditPending). `seen`: text_hash() of the text `at` counts in (Conflict if it changed)."""
    return _unless_long(
        lambda: _split(document, paragraph_id, at, by, seen),
        document=document, operation=EditOperation.SPLIT, by=by, paragraph_id=paragraph_id, params={"at": at},
    )  # fmt: skip


def _split(document: Document, paragraph_id: Any, at: int, by: str, seen: str | None = None) -> list[Chunk]:
    with transaction.atomic():
        scope = _lock(document, paragraph_id)
        paragraph = scope.paragraph
        _as_seen(paragraph, seen)
        parts = split_parts(paragraph.text, at)
        if parts is None:
            raise Invalid(
                f"character {at} leaves no text on one side: split at a character between 1 and "
                f"{len(paragraph.text) - 1} that leaves text on both sides",
                field="at",
            )
        head, separator, tail = parts
        anchor = _anchor(paragraph)
        before = [_shape(paragraph)]
        second = _split_row(scope, paragraph, head, tail, tail_continues=split_continues(separator))
        # What the split took out between the halves: a merge of the two joins them with exactly that again.
        params = {"at": at, "separator": separator}
        _record(scope, EditOperation.SPLIT, anchor, before, [_shape(paragraph), _shape(second)], params, by)
        return [paragraph, second]


def paragraph_merge_next(
    *, document: Document, paragraph_id: Any, by: str, across_sections: bool = False
) -> list[Chunk]:
    """Merge a paragraph with the next of the same document (never across documents; across a section boundary
    only when asked, taking the first one's section). Embeds the merged paragraph (a long one by a task)."""
    return _unless_long(
        lambda: _merge_next(document, paragraph_id, by, across_sections),
        document=document, operation=EditOperation.MERGE_NEXT, by=by, paragraph_id=paragraph_id,
        params={"across_sections": across_sections},
    )  # fmt: skip


def _merge_next(document: Document, paragraph_id: Any, by: str, across_sections: bool) -> list[Chunk]:
    with transaction.atomic():
        scope = _lock(document, paragraph_id)
        paragraph = scope.paragraph
        following = _next(paragraph)
        if following is None:
            raise Invalid("this is the document's last paragraph: there is no next one to merge with")
        if following.section != paragraph.section and not across_sections:
            raise Invalid(
                "the next paragraph is in another section; ask to merge across sections to merge them "
                "(the merged paragraph takes this one's section)",
                field="across_sections",
            )
        if following.hidden != paragraph.hidden:
            raise Conflict("one of the two paragraphs is hidden: unhide it (or hide the other) before merging")
        labels = _merged_labels(scope.collection, paragraph, following)
        anchor = {**_anchor(paragraph), "next_hash": text_hash(following.text)}
        before = [_shape(paragraph), _shape(following)]
        separator = _joint(paragraph, following)
        text = merged_text(paragraph.text, following.text, continues=following.continues, separator=separator)
        if len(text) > MAX_PARAGRAPH_CHARS:
            # An import refuses a longer row: a merge past it would export a file nothing imports again.
            raise Invalid(
                f"the merged paragraph would hold {len(text):,} characters: a paragraph holds at most "
                f"{MAX_PARAGRAPH_CHARS:,} (split one of the two first)"
            )
        _merge_rows(scope, paragraph, following, text, labels)
        # Recorded so a rebuild's replay joins them the same way (services/documents/_edits.py).
        params = {"across_sections": across_sections, "separator": separator}
        _record(scope, EditOperation.MERGE_NEXT, anchor, before, [_shape(paragraph)], params, by)
        return [paragraph]


def paragraph_hide(*, document: Document, paragraph_id: Any, hidden: bool, by: str) -> list[Chunk]:
    """Hide a paragraph from every reader (search, windows, parents, the corpus map, export), or show it again.
    Nothing is embedded: a hidden paragraph keeps its vector and loses its keyword index until it is shown."""
    with transaction.atomic():
        scope = _lock(document, paragraph_id)
        paragraph = scope.paragraph
        if paragraph.hidden == hidden:
            return [paragraph]
        anchor = _anchor(paragraph)
        shape = [_shape(paragraph)]
        _set_hidden(paragraph, hidden)
        operation = EditOperation.HIDE if hidden else EditOperation.UNHIDE
        _record(scope, operation, anchor, shape, shape, {}, by)
        return [paragraph]


def paragraph_edit_revert(*, edit: ParagraphEdit, by: str) -> list[Chunk]:
    """Undo an applied edit on the paragraphs it left, recorded as an edit of its own; neither is replayed by a
    rebuild. A later edit made on the paragraphs it left must be reverted first."""
    if edit.operation == EditOperation.REVERT:
        raise Invalid("a revert cannot be reverted: make the edit again")
    return _unless_long(
        lambda: _revert(edit, by), document=edit.document, operation=EditOperation.REVERT, by=by, reverts=edit
    )


def _revert(edit: ParagraphEdit, by: str) -> list[Chunk]:
    with transaction.atomic():
        edit = ParagraphEdit.objects.select_for_update().get(pk=edit.pk)
        if edit.status != EditStatus.APPLIED:
            raise Conflict(f"this edit is {edit.get_status_display()}: only an applied edit can be reverted")
        results = {text_hash(shape["text"]) for shape in edit.after}
        later = ParagraphEdit.objects.filter(
            document_id=edit.document_id, status=EditStatus.APPLIED, created_at__gt=edit.created_at
        ).exclude(operation=EditOperation.REVERT)
        if any(e.anchor.get("hash") in results or e.anchor.get("next_hash") in results for e in later):
            raise Conflict("a later edit changed the paragraphs this edit left: revert that one first")
        scope = _lock(edit.document, None, edit=edit)
        paragraph = scope.paragraph
        anchor = _anchor(paragraph)
        changed = _undo(scope, edit)
        undone = ParagraphEdit.objects.filter(pk=edit.pk)
        undone.update(status=EditStatus.REVERTED)
        _record(scope, EditOperation.REVERT, anchor, edit.after, [_shape(c) for c in changed], {}, by, reverts=edit)
        return changed


def paragraph_edit_reapply(*, edit: ParagraphEdit, paragraph_id: Any, by: str) -> list[Chunk]:
    """Apply a stale edit (its paragraph changed in a new version of the file) to the paragraph an editor
    chose, as a new edit; the stale one is marked re-applied. A long one is a pending edit (EditPending) that marks
    the stale one re-applied when its task applies it."""
    if edit.status != EditStatus.STALE:
        raise Conflict("only an edit that no longer applies can be re-applied to another paragraph")
    deferred = None
    with transaction.atomic():
        try:
            changed = _reapply(edit, paragraph_id, by)
        except EditPending as pending:
            # Caught inside the transaction, so the pending row (its own savepoint) commits with it.
            deferred = pending.edit
            deferred.params = {**deferred.params, "reapplies": str(edit.pk)}
            ParagraphEdit.objects.filter(pk=deferred.pk).update(params=deferred.params)
        else:
            ParagraphEdit.objects.filter(pk=edit.pk).update(status=EditStatus.REAPPLIED)
    if deferred is not None:
        raise EditPending(deferred)
    return changed


def _reapply(edit: ParagraphEdit, paragraph_id: Any, by: str) -> list[Chunk]:
    document = edit.document
    operation = edit.operation
    if operation == EditOperation.EDIT:
        changed = paragraph_edit(document=document, paragraph_id=paragraph_id, text=edit.after[0]["text"], by=by)
    elif operation in (EditOperation.HIDE, EditOperation.UNHIDE):
        hidden = operation == EditOperation.HIDE
        changed = paragraph_hide(document=document, paragraph_id=paragraph_id, hidden=hidden, by=by)
    elif operation == EditOperation.SPLIT:
        at = int(edit.params.get("at", 0))
        changed = paragraph_split(document=document, paragraph_id=paragraph_id, at=at, by=by)
    elif operation == EditOperation.MERGE_NEXT:
        across = bool(edit.params.get("across_sections"))
        changed = paragraph_merge_next(document=document, paragraph_id=paragraph_id, by=by, across_sections=across)
    else:
        raise Invalid("this edit cannot be re-applied")
    return changed


def paragraph_edit_discard(*, edit: ParagraphEdit) -> None:
    """Let a stale edit go: it stays in the history, discarded, and no rebuild tries it again."""
    if edit.status != EditStatus.STALE:
        raise Conflict("only an edit that no longer applies can be discarded; revert an applied one")
    ParagraphEdit.objects.filter(pk=edit.pk, status=EditStatus.STALE).update(status=EditStatus.DISCARDED)


def paragraph_edit_finish(*, edit_id: Any) -> None:
    """Finish a pending edit (the task's one service; nothing to do if it is no longer pending): learn what its
    operation embeds, embed it with no transaction open, then run the operation with those vectors in one short
    transaction. An operation that no longer applies ends the edit `failed`, its reason kept in `params`."""
    edit = ParagraphEdit.objects.select_related("document", "reverts").filter(pk=edit_id).first()
    if edit is None or edit.status != EditStatus.PENDING:
        return
    run = _operation_of(edit)
    reapplies = edit.params.get("reapplies")  # a stale edit re-applied through this one
    try:
        with _embedding("plan", finishing=edit):
            try:
                with transaction.atomic():
                    run()  # nothing to embed: done (the pending row became the edit)
                return
            except _Planned as planned:
                texts, alias = planned.texts, planned.alias
        vectors = dict(zip(texts, get_embedder(alias).embed_passages(texts), strict=True))
        with _embedding("ready", vectors, finishing=edit), transaction.atomic():
            run()
            if reapplies:
                ParagraphEdit.objects.filter(pk=reapplies, status=EditStatus.STALE).update(status=EditStatus.REAPPLIED)
    except DomainError as exc:
        _failed(edit, str(exc))
    except Exception:
        _failed(edit, "the edit could not be finished (a server error): make it again")
        raise  # django-q2 lists the task among its failures, with the traceback, for the operator


def _failed(edit: ParagraphEdit, why: str) -> None:
    failed = {**edit.params, "error": why}
    ParagraphEdit.objects.filter(pk=edit.pk, status=EditStatus.PENDING).update(status=EditStatus.FAILED, params=failed)


# --- the steps ---------------------------------------------------------------------------------------------


def _unless_long(
    run: Callable[[], list[Chunk]],
    *,
    document: Document,
    operation: str,
    by: str,
    paragraph_id: Any = None,
    reverts: ParagraphEdit | None = None,
    after: list[dict[str, Any]] | None = None,
    params: dict[str, Any] | None = None,
) -> list[Chunk]:
    """Run an operation; if it would embed more than a request may, it stopped before writing (its transaction
    rolled back): record it as a pending edit for a task, and raise EditPending."""
    if _mode.get() != "request":
        return run()
    try:
        return run()
    except _LongEmbedding:
        pass
    edit = _pending_record(document, operation, by, paragraph_id, reverts, after or [], params or {})
    raise EditPending(edit)


def _pending_record(
    document: Document, operation: str, by: str, paragraph_id: Any, reverts: ParagraphEdit | None,
    after: list[dict[str, Any]], params: dict[str, Any],
) -> ParagraphEdit:  # fmt: skip
    """The pending edit (which paragraph, as it is now; what was asked) and its task, queued once it commits."""
    from django_q.tasks import async_task

    with transaction.atomic():
        scope = _lock(document, paragraph_id, edit=reverts)
        paragraph = scope.paragraph
        edit = ParagraphEdit.objects.create(
            tenant_id=document.tenant_id, collection=scope.collection, document=scope.document, operation=operation,
            status=EditStatus.PENDING, anchor=_anchor(paragraph), before=[_shape(paragraph)], after=after,
            params={**params, "paragraph": str(paragraph.pk)}, reverts=reverts, by=by[:200],
        )  # fmt: skip
        edit_id = str(edit.pk)
        transaction.on_commit(
            lambda: async_task(
                "collections_app.tasks.finish_paragraph_edit",
                edit_id,
                task_name=f"paragraph edit {edit_id}",
                group="paragraph edits",
            )
        )
    return edit


def _operation_of(edit: ParagraphEdit) -> Callable[[], list[Chunk]]:
    """The operation a pending edit asked for, to run again as it was asked."""
    document, by, params = edit.document, edit.by, edit.params
    paragraph_id = params.get("paragraph")
    if edit.operation == EditOperation.EDIT:
        return lambda: _edit(document, paragraph_id, edit.after[0]["text"], by)
    if edit.operation == EditOperation.SPLIT:
        return lambda: _split(document, paragraph_id, int(params.get("at", 0)), by)
    if edit.operation == EditOperation.MERGE_NEXT:
        return lambda: _merge_next(document, paragraph_id, by, bool(params.get("across_sections")))
    if edit.operation == EditOperation.REVERT and edit.reverts is not None:
        reverted = edit.reverts
        return lambda: _revert(reverted, by)
    raise Invalid("this edit cannot be finished")


def paragraph_edits_refusal(*, document: Document) -> str | None:
    """Why any edit of the document's paragraphs would be refused now (the same reasons `_lock` refuses with), or
    None: the paragraphs page offers no action that cannot run, and says this instead. Reads only."""
    collection = Collection.objects.only("reindex_generation").get(pk=document.collection_id)
    if collection.reindex_generation is not None:
        return REINDEX_PENDING
    status = Document.objects.filter(pk=document.pk).values_list("status", flat=True).first()
    if status != DocumentStatus.DONE:
        return f"{document.filename} is being read (or could not be): edit its paragraphs once it is done"
    pending = ParagraphEdit.objects.filter(
        document=document, status=EditStatus.PENDING, created_at__gte=timezone.now() - PENDING_EDIT_BOUND
    )
    if pending.exists():
        return EDIT_PENDING
    return None


def _checked_text(text: str) -> str:
    problem = text_problem(text)
    if problem:
        raise Invalid(problem, field="text")
    # A browser's form sends its line breaks as CRLF: stored as the chunker stores them.
    text = text.replace("\r\n", "\n").replace("\r", "\n").strip()
    problem = paragraph_text_problem(text)  # the same check an import makes of each row (collection_file)
    if problem:
        raise Invalid(f"the text {problem}", field="text")
    return text


def _lock(document: Document, paragraph_id: Any, *, edit: ParagraphEdit | None = None) -> _Scope:
    """The collection and the document locked (in the order publishing locks them: no deadlock with a build),
    and the paragraph of the generation searches read."""
    collection = Collection.objects.select_for_update().get(pk=document.collection_id)
    if collection.reindex_generation is not None:
        raise Conflict(REINDEX_PENDING)
    locked = Document.objects.select_for_update().defer("blocks").get(pk=document.pk)
    if locked.status != DocumentStatus.DONE:
        raise Conflict(f"{locked.filename} is being read (or could not be): edit its paragraphs once it is done")
    _refuse_while_pending(locked)
    rows = Chunk.objects.filter(document=locked, generation=collection.active_generation, kind=ChunkKind.PARAGRAPH)
    paragraph = _located(rows, edit) if edit is not None else rows.filter(pk=paragraph_id).first()
    if paragraph is None:
        raise ParagraphNotFound("no such paragraph in this document")
    return _Scope(collection, locked, paragraph)


def _refuse_while_pending(document: Document) -> None:
    """One pending edit of a document at a time, and nothing else meanwhile: its task re-runs the operation on the
    paragraphs as they are then, so an edit, split or merge made in between would be overwritten (merges and
    splits shift neighbours: the whole document waits). A pending edit whose task has not finished within
    PENDING_EDIT_BOUND never will: it ends failed, and no longer holds the document. Called with the document
    locked; the task finishing an edit passes (it is that edit)."""
    finishing = _finishing.get()
    pending = ParagraphEdit.objects.filter(document=document, status=EditStatus.PENDING)
    if finishing is not None:
        pending = pending.exclude(pk=finishing.pk)
    for edit in pending.filter(created_at__lt=timezone.now() - PENDING_EDIT_BOUND):
        _failed(edit, "its embedding never finished")
    if pending.exists():
        raise Conflict(EDIT_PENDING)


def _located(rows: Any, edit: ParagraphEdit) -> Chunk | None:
    """The first paragraph an applied edit left, nearest to where it was made (its text may repeat)."""
    result = edit.after[0]["text"]
    hidden = edit.operation == EditOperation.HIDE
    candidates = list(rows.filter(text=result).order_by("position__ordinal"))
    if edit.operation in (EditOperation.HIDE, EditOperation.UNHIDE):
        candidates = [c for c in candidates if c.hidden == hidden]
    if edit.operation == EditOperation.SPLIT:
        candidates = [c for c in candidates if (n := _next(c)) is not None and n.text == edit.after[1]["text"]]
    if not candidates:
        return None
    ordinal = int(edit.anchor.get("ordinal", 0))
    return min(candidates, key=lambda c: abs(c.ordinal - ordinal))


def _next(paragraph: Chunk) -> Chunk | None:
    return (
        Chunk.objects.filter(
            document_id=paragraph.document_id,
            generation=paragraph.generation,
            kind=ChunkKind.PARAGRAPH,
            position__ordinal__gt=paragraph.ordinal,
        )
        .order_by("position__ordinal")
        .first()
    )


def _anchor(paragraph: Chunk) -> dict[str, Any]:
    """Where the paragraph is in what the chunker cut (and the earlier edits left): its text's hash, and which
    of the document's paragraphs with that text it is. The same rule finds it again in a rebuild's cut."""
    occurrence = Chunk.objects.filter(
        document_id=paragraph.document_id,
        generation=paragraph.generation,
        kind=ChunkKind.PARAGRAPH,
        position__ordinal__lt=paragraph.ordinal,
        text=paragraph.text,
    ).count()
    return {
        "hash": text_hash(paragraph.text),
        "occurrence": occurrence,
        "ordinal": paragraph.ordinal,
        "version": Document.objects.filter(pk=paragraph.document_id).values_list("version", flat=True).first(),
    }


def _shape(paragraph: Chunk) -> dict[str, Any]:
    return {
        "text": paragraph.text,
        "section": list(paragraph.section),
        "page": paragraph.page,
        "continues": paragraph.continues,
    }


def _joint(paragraph: Chunk, following: Chunk) -> str:
    """What a merge joins two neighbours with. Two halves a split left (and nothing changed since): what that split
    took out between them, so the merge gives the paragraph back exactly. Otherwise a space when the second was cut
    inside the first's block, a paragraph break when not, and always after a heading standing alone (a heading
    keeps its own line)."""
    separator = _split_separator(paragraph, following)
    if separator is not None:
        return separator
    heading = bool(paragraph.section) and paragraph.text.strip() == str(paragraph.section[-1]).strip()
    return " " if following.continues and not heading else "\n\n"


def _split_separator(paragraph: Chunk, following: Chunk) -> str | None:
    """The separator of the latest applied split of the document that left exactly these two texts, or None."""
    splits = ParagraphEdit.objects.filter(
        document_id=paragraph.document_id, operation=EditOperation.SPLIT, status=EditStatus.APPLIED
    ).order_by("-created_at", "-id")
    for split in splits.only("before", "after", "params")[:50]:
        after = [shape.get("text") for shape in split.after]
        if after != [paragraph.text, following.text]:
            continue
        if "separator" in split.params:
            return str(split.params["separator"])
        # A split made before the separator was recorded: it is what lies between the halves in the text it cut.
        whole = str(split.before[0].get("text", "")) if split.before else ""
        head, tail = paragraph.text, following.text
        if whole.startswith(head) and whole.endswith(tail) and len(whole) >= len(head) + len(tail):
            return whole[len(head) : len(whole) - len(tail)]
    return None


def _merged_labels(collection: Collection, first: Chunk, second: Chunk) -> list[str]:
    """Labels of a merged paragraph that no reader of it could not read both halves: never wider than either."""
    if not collection.per_reader or first.labels == second.labels:
        return list(first.labels)
    if not first.labels or not second.labels:
        return list(first.labels or second.labels)  # unlabelled is anybody's: the other one's labels hold
    shared = sorted(set(first.labels) & set(second.labels))
    if not shared:
        raise Conflict("the two paragraphs share no reader label: merging them would let readers of one read both")
    return shared


def _language(scope: _Scope, text: str) -> tuple[str, str]:
    """(the language given to the row, the label detection gave): an editor's pinned language wins."""
    detected = detect_language(text, default=scope.document.language_detected or scope.document.language)
    return scope.document.language_pinned or detected, detected


def _embed(scope: _Scope, paragraphs: list[tuple[str, list[str], int | None]]) -> list[list[float]]:
    """Vectors of paragraphs as ingestion embeds them (breadcrumb and text), by the model the rows were built with.

    Every operation calls it before it writes a vector, so stopping here (a long text in a request, a task's
    planning run) leaves nothing written that its transaction's rollback would not take back."""
    title = breadcrumb_title(scope.document).text
    texts = [ChunkDraft(text=t, section=list(s), page=p).embedding_text(title) for t, s, p in paragraphs]
    mode = _mode.get()
    if mode == "plan":
        raise _Planned(texts, scope.collection.served_alias)
    if mode == "request" and sum(map(len, texts)) > EMBED_IN_REQUEST_CHARS:
        raise _LongEmbedding
    ready = _vectors.get()
    missing = [t for t in texts if t not in ready]
    fresh = get_embedder(scope.collection.served_alias).embed_passages(missing) if missing else []
    computed = dict(zip(missing, fresh, strict=True))
    return [ready[t] if t in ready else computed[t] for t in texts]


def _vector(vector: list[float]) -> str:
    return "[" + ",".join(map(repr, vector)) + "]"


def _write(paragraph: Chunk, vector: list[float]) -> None:
    """The row's text, language, vector and (unless hidden) keyword index, from the instance's fields."""
    index = "NULL" if paragraph.hidden else keyword_vector("%(language)s", "%(text)s")
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            UPDATE {Chunk._meta.db_table}
            SET text = %(text)s, language = %(language)s, language_detected = %(detected)s, edited = true,
                section = %(section)s, page = %(page)s, labels = %(labels)s::varchar[],
                embedding = %(vector)s::vector, embedding_dims = %(dims)s, search_vector = {index}
            WHERE id = %(id)s
            """,
            {
                "text": paragraph.text,
                "language": paragraph.language,
                "detected": paragraph.language_detected,
                "section": list(paragraph.section),
                "page": paragraph.page,
                "labels": list(paragraph.labels),
                "vector": _vector(vector),
                "dims": len(vector),
                "id": paragraph.pk,
            },
        )
    paragraph.edited = True
    paragraph.embedding_dims = len(vector)


def _set_text(scope: _Scope, paragraph: Chunk, text: str) -> None:
    # Embedding first: a long text stops there, before language detection reads all of it (a second on 100,000
    # characters) inside the request.
    (vector,) = _embed(scope, [(text, paragraph.section, paragraph.page)])
    paragraph.text = text
    paragraph.language, paragraph.language_detected = _language(scope, text)
    _write(paragraph, vector)


def _shift(paragraph: Chunk, after: int, by: int) -> None:
    """Move every place of the document's generation past ordinal `after` by `by`, in one statement: the unique
    (document, generation, ordinal) constraint is deferrable, checked when the statement ends.

    Only the narrow ChunkPosition rows move (issue 42): the later paragraphs' own rows, their vectors and keyword
    index are not rewritten (a moved chunk row was a new tuple in every index, HNSW's included: 765 ms for a split
    near the start of 2,000 paragraphs; bench/paragraph_edit.py)."""
    ChunkPosition.objects.filter(
        document_id=paragraph.document_id, generation=paragraph.generation, ordinal__gt=after
    ).update(ordinal=F("ordinal") + by)


def _split_row(
    scope: _Scope,
    paragraph: Chunk,
    head: str,
    tail: str,
    *,
    tail_section: list[str] | None = None,
    tail_page: int | None = None,
    tail_continues: bool | None = True,
) -> Chunk:
    """`paragraph` keeps `head`; a new row right after it holds `tail` (its page and section, unless given)."""
    _shift(paragraph, paragraph.ordinal, 1)
    section = list(paragraph.section) if tail_section is None else list(tail_section)
    page = paragraph.page if tail_section is None else tail_page
    head_vector, tail_vector = _embed(scope, [(head, paragraph.section, paragraph.page), (tail, section, page)])
    paragraph.text = head
    paragraph.language, paragraph.language_detected = _language(scope, head)
    _write(paragraph, head_vector)
    language, detected = _language(scope, tail)
    second = Chunk.objects.create_at(
        ordinal=paragraph.ordinal + 1,
        tenant_id=paragraph.tenant_id,
        collection_id=paragraph.collection_id,
        document_id=paragraph.document_id,
        text=tail,
        section=section,
        page=page,
        language=language,
        language_detected=detected,
        labels=list(paragraph.labels),
        metadata=dict(paragraph.metadata),
        kind=ChunkKind.PARAGRAPH,
        parent_id=paragraph.parent_id,
        generation=paragraph.generation,
        continues=tail_continues,
        hidden=paragraph.hidden,
        edited=True,
    )
    _write(second, tail_vector)
    return second


def _merge_rows(scope: _Scope, paragraph: Chunk, following: Chunk, text: str, labels: list[str]) -> None:
    gone = following.ordinal
    following.delete()  # its keyword postings and the BM25 statistics follow through the triggers
    _shift(paragraph, gone, -1)
    paragraph.labels = labels
    _set_text(scope, paragraph, text)


def _set_hidden(paragraph: Chunk, hidden: bool) -> None:
    index = "NULL" if hidden else keyword_vector()
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {Chunk._meta.db_table} SET hidden = %s, search_vector = {index} WHERE id = %s",
            [hidden, paragraph.pk],
        )
    paragraph.hidden = hidden


def _undo(scope: _Scope, edit: ParagraphEdit) -> list[Chunk]:
    paragraph = scope.paragraph
    before = edit.before
    if edit.operation in (EditOperation.HIDE, EditOperation.UNHIDE):
        _set_hidden(paragraph, edit.operation == EditOperation.UNHIDE)
        return [paragraph]
    if edit.operation == EditOperation.EDIT:
        _set_text(scope, paragraph, before[0]["text"])
        return [paragraph]
    if edit.operation == EditOperation.SPLIT:
        following = _next(paragraph)
        assert following is not None  # _located found it
        _merge_rows(scope, paragraph, following, before[0]["text"], list(paragraph.labels))
        return [paragraph]
    if edit.operation == EditOperation.MERGE_NEXT:
        first, second = before
        if first["section"] != list(paragraph.section):  # pragma: no cover - a merge keeps the first's section
            raise Conflict("this paragraph changed since it was merged: split it by hand")
        tail = _split_row(
            scope, paragraph, first["text"], second["text"], tail_section=second["section"],
            tail_page=second["page"], tail_continues=second.get("continues"),
        )  # fmt: skip
        return [paragraph, tail]
    raise Invalid("this edit cannot be reverted")


def _record(
    scope: _Scope,
    operation: str,
    anchor: dict[str, Any],
    before: list[dict[str, Any]],
    after: list[dict[str, Any]],
    params: dict[str, Any],
    by: str,
    reverts: ParagraphEdit | None = None,
) -> ParagraphEdit:
    pending = _finishing.get()
    if pending is not None:
        # A task finishing a pending edit: that row becomes the edit, dated now (replays run in this order).
        fields = {"status": EditStatus.APPLIED, "anchor": anchor, "before": before, "after": after, "params": params,
                  "reverts": reverts, "by": by[:200], "created_at": timezone.now()}  # fmt: skip
        ParagraphEdit.objects.filter(pk=pending.pk).update(**fields)
        pending.refresh_from_db()
        return pending
    return ParagraphEdit.objects.create(
        tenant_id=scope.document.tenant_id,
        collection=scope.collection,
        document=scope.document,
        operation=operation,
        status=EditStatus.APPLIED,
        anchor=anchor,
        before=before,
        after=after,
        params=params,
        reverts=reverts,
        by=by[:200],
    )
