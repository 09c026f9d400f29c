"""Editors' paragraph edits, re-applied to a rebuild's paragraphs: the anchor an edit keeps, and the replay.

An edit (models.ParagraphEdit) is anchored to what the chunker cut from the stored parser output, never to a
paragraph id (every build writes new ids): the hash of the paragraph's text as it stood when the edit was made,
which of the document's paragraphs with that text it was (`occurrence`: a boilerplate footer repeats), and for a
merge the next paragraph's hash too. A rebuild (rechunk, re-index, model change, a new version) cuts the
document again and replays its edits in the order they were made, each on the paragraphs the earlier ones left:
an edit whose anchor is found is applied, one whose anchor is gone (the file's paragraph changed, or a new
chunking cut it otherwise) is marked stale — not applied, not dropped; the document's page lists it.

The same functions anchor a live edit (services/paragraph_edits.py), so a live edit and its replay agree.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from collections_app.models import Document, EditOperation, EditStatus, ParagraphEdit
from ingestion import ChunkDraft, detect_language

# Edits a rebuild replays: applied ones and stale ones (a later version may match their anchor again).
_REPLAYED = (EditStatus.APPLIED, EditStatus.STALE)


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def merged_text(first: str, second: str, *, continues: bool | None, separator: str | None = None) -> str:
    """Two neighbours as one paragraph. With `separator` (what a split took out between them, or what a recorded
    merge joined them with): exactly that, so a merge undoes a split. Otherwise rejoined with a space when the
    second was cut inside the first's block, with a paragraph break when not (the windows' rule: no glued words, no
    heading glued to a sentence)."""
    if separator is not None:
        return f"{first}{separator}{second}"
    return f"{first} {second}" if continues else f"{first}\n\n{second}"


def split_parts(text: str, at: int) -> tuple[str, str, str] | None:
    """A split at character `at` as (head, separator, tail): the halves with their edges' whitespace trimmed, and
    the whitespace trimmed between them, so that head + separator + tail is the text again. None if a half would be
    empty."""
    head, tail = text[:at].rstrip(), text[at:].lstrip()
    if not (0 < at < len(text) and head and tail):
        return None
    return head, text[len(head) : len(text) - len(tail)], tail


def split_texts(text: str, at: int) -> tuple[str, str] | None:
    """The two halves of a split at character `at`, their edges' whitespace trimmed; None if one would be empty."""
    parts = split_parts(text, at)
    return None if parts is None else (parts[0], parts[2])


def split_continues(separator: str) -> bool:
    """Whether the second half of a split goes on the first's line (cut inside a sentence) or starts a new one
    (cut at a line break: a heading and its text, two paragraphs of one block): windows stitch them so."""
    return "\n" not in separator


def document_edits_replay(*, document: Document, drafts: list[ChunkDraft]) -> list[ChunkDraft]:
    """The document's edits applied to a rebuild's drafts (labelled with their languages), in their order.

    Records which edits apply (applied) and which no longer do (stale). `document.language` is the language
    detected for the document (a re-edited paragraph's own language falls back on it; a pinned language is
    given to every row when they are written, as for any paragraph)."""
    edits = list(
        ParagraphEdit.objects.filter(document=document, status__in=_REPLAYED)
        .exclude(operation=EditOperation.REVERT)
        .order_by("created_at", "id")
    )
    if not edits:
        return drafts
    applied: list[Any] = []
    stale: list[Any] = []
    for edit in edits:
        (applied if _replay(edit, drafts, document.language) else stale).append(edit.pk)
    ParagraphEdit.objects.filter(pk__in=applied).exclude(status=EditStatus.APPLIED).update(status=EditStatus.APPLIED)
    ParagraphEdit.objects.filter(pk__in=stale).exclude(status=EditStatus.STALE).update(status=EditStatus.STALE)
    return drafts


def anchor_position(texts: Sequence[str], anchor: dict[str, Any]) -> int | None:
    """Which of `texts` (a document's paragraphs in order) an anchor names, or None when none does any more."""
    seen = 0
    for position, text in enumerate(texts):
        if text_hash(text) == anchor.get("hash"):
            if seen == anchor.get("occurrence", 0):
                return position
            seen += 1
    return None


def _replay(edit: ParagraphEdit, drafts: list[ChunkDraft], language: str) -> bool:
    positions = [i for i, d in enumerate(drafts) if d.kind == "paragraph"]
    found = anchor_position([drafts[i].text for i in positions], edit.anchor)
    if found is None:
        return False
    index = positions[found]
    draft = drafts[index]
    operation = edit.operation
    if operation == EditOperation.HIDE:
        draft.hidden = True
    elif operation == EditOperation.UNHIDE:
        draft.hidden = False
    elif operation == EditOperation.EDIT:
        _retext(draft, edit.after[0]["text"], language)
    elif operation == EditOperation.SPLIT:
        parts = split_parts(draft.text, int(edit.params.get("at", 0)))
        if parts is None:
            return False
        head, separator, tail = parts
        second = replace(
            draft, metadata=dict(draft.metadata), section=list(draft.section), continues=split_continues(separator)
        )
        _retext(draft, head, language)
        _retext(second, tail, language)
        _insert(drafts, index + 1, second)
    elif operation == EditOperation.MERGE_NEXT:
        if found + 1 >= len(positions):
            return False
        following = positions[found + 1]
        other = drafts[following]
        if text_hash(other.text) != edit.anchor.get("next_hash"):
            return False
        if other.section != draft.section and not edit.params.get("across_sections"):
            return False
        if other.hidden != draft.hidden:
            return False
        # A merge recorded what it joined with (`separator`); older merges joined by the continues rule.
        joined = merged_text(draft.text, other.text, continues=other.continues, separator=edit.params.get("separator"))
        _retext(draft, joined, language)
        _remove(drafts, following)
    else:
        return False
    return True


def _retext(draft: ChunkDraft, text: str, language: str) -> None:
    draft.text = text
    draft.edited = True
    draft.language = detect_language(text, default=language)


def _insert(drafts: list[ChunkDraft], index: int, draft: ChunkDraft) -> None:
    # A child names its parent by its index in the list (hierarchical): indices at or after the new one move on.
    for other in drafts:
        if other.parent is not None and other.parent >= index:
            other.parent += 1
    if draft.parent is not None and draft.parent >= index:
        draft.parent += 1
    drafts.insert(index, draft)


def _remove(drafts: list[ChunkDraft], index: int) -> None:
    del drafts[index]  # a paragraph: nobody names it as a parent
    for other in drafts:
        if other.parent is not None and other.parent > index:
            other.parent -= 1
