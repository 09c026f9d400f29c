"""Cutting a document into paragraphs with the collection's settings, each labelled with its language; a large
text file as a stream, window by window, straight into the staging files."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

from django.conf import settings

from collections_app.models import Collection, Document
from collections_app.services.documents._edits import document_edits_replay
from collections_app.services.documents._staging import Staging
from collections_app.services.documents._watch import Watch
from embedding import get_embedder
from ingestion import (
    BlockBudget,
    ChunkDraft,
    ChunkingSettings,
    NothingReadable,
    chunk_blocks,
    detect_language,
    extension_of,
    iter_chunk_blocks,
    iter_text_blocks,
)
from ingestion.blocks import Block

_T = TypeVar("_T")


def document_chunk(
    document: Document, collection: Collection, blocks: list[Block], watch: Watch | None = None
) -> list[ChunkDraft]:
    method = collection_chunking(collection=collection)
    measure = _token_counter(collection) if method.unit == "tokens" else len
    drafts = chunk_blocks(blocks, method, measure)
    if not any(d.kind == "paragraph" for d in drafts):
        raise NothingReadable("no text could be read from this file (only headings were found)")
    document_language = detect_language(_sample(drafts, 5000))
    for draft in drafts:
        if watch is not None:
            watch.check()  # asks the database once a second at most: labelling 100,000 rows takes minutes
        draft.language = detect_language(draft.text, default=document_language)
    document.language = document_language
    # Editors' edits of its paragraphs, replayed on the new cut while their anchors match (issue 20).
    return document_edits_replay(document=document, drafts=drafts)


def collection_chunking(*, collection: Collection) -> ChunkingSettings:
    """The chunking settings a collection's next ingestion (and a preview of it) uses."""
    return ChunkingSettings(
        strategy=collection.chunk_strategy,
        size=collection.chunk_size,
        overlap=collection.chunk_overlap,
        unit=collection.chunk_size_unit,
        parent_size=collection.parent_size,
    )


def _token_counter(collection: Collection) -> Callable[[str], int]:
    # The embedding model's own tokenizer, through the embedder's public method.
    return get_embedder(collection.embedding_alias).token_count


def _sample(drafts: Iterable[ChunkDraft], chars: int) -> str:
    """The first `chars` characters of the drafts' text, without joining them all."""
    taken: list[str] = []
    total = 0
    for draft in drafts:
        taken.append(draft.text)
        total += len(draft.text) + 1
        if total >= chars:
            break
    return " ".join(taken)[:chars]


# A streamed document's paragraphs are labelled by window: langdetect costs ~4 ms a paragraph (60,000 of them
# in a 60 MB file would take 4 minutes), so each run of _LANGUAGE_WINDOW paragraphs (~64 KB of text) gets the
# language of a sample drawn from all of them (_LANGUAGE_SAMPLE characters, ~8 ms).
_LANGUAGE_WINDOW = 64
_LANGUAGE_SAMPLE = 1000


def document_stage_stream(
    document: Document, collection: Collection, staging: Staging, watch: Watch | None = None
) -> None:
    """Read a large text file as a stream: blocks → paragraphs → languages → staging, memory bounded by a window.

    Its blocks are held to the block budget like any parser's (KB_MAX_BLOCK_CHARS; ingestion/budgets.py).
    """
    # A stream is cut by `structure` whatever the collection says: the other strategies need the whole document.
    method = replace(collection_chunking(collection=collection), strategy="structure")
    measure = _token_counter(collection) if method.unit == "tokens" else len
    budget = BlockBudget(settings.KB_MAX_BLOCK_CHARS)
    blocks = iter_text_blocks(Path(document.file.path), extension_of(document.filename), budget.block_chars)
    drafts = iter_chunk_blocks(budget.apply(blocks), method, measure)
    document_language = ""
    for window in windows(drafts, _LANGUAGE_WINDOW):
        if watch is not None:
            watch.check()
        if staging.count == 0:
            document_language = detect_language(_sample(window, 5000))
        share = max(1, _LANGUAGE_SAMPLE // len(window))
        language = detect_language(" ".join(d.text[:share] for d in window), default=document_language)
        for draft in window:
            draft.language = language
        staging.add_all(window)
    if staging.count == 0:
        raise NothingReadable("no text could be read from this file (only headings were found)")
    document.language = document_language
    kind = (
        "Markdown headings, lists and code kept" if document.filename.lower().endswith(".md") else "no titles guessed"
    )
    streamed = f"large text file read as a stream, paragraph by paragraph ({kind})"
    document.warnings, document.metadata = [streamed, *budget.warnings()], {}
    Document.objects.filter(pk=document.pk).update(blocks=None, warnings=document.warnings, metadata={}, progress=10)


def windows(items: Iterable[_T], size: int) -> Iterator[list[_T]]:
    window: list[_T] = []
    for item in items:
        window.append(item)
        if len(window) == size:
            yield window
            window = []
    if window:
        yield window
