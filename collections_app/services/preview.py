"""Chunk preview: a document's stored parser output cut with some chunking settings, writing nothing.

An editor compares the collection's settings with others before changing them (admin: the document's
"Preview chunking" page). The parser output kept on the document (`Document.blocks`) is what a re-chunk
would read, so the preview never re-parses and never embeds.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass

from collections_app.exceptions import Invalid
from collections_app.ingestion import ChunkDraft, ChunkingSettings, chunk_blocks
from collections_app.ingestion.blocks import Block
from collections_app.models import Collection, Document, SizeUnit
from embedding import get_embedder


class PreviewUnavailable(Invalid):
    """The document has no stored parser output to cut (not parsed yet, failed, or read as a stream)."""


@dataclass(frozen=True)
class ChunkPreview:
    settings: ChunkingSettings
    chunks: list[ChunkDraft]

    @property
    def count(self) -> int:
        return len(self.chunks)


def document_chunk_preview(*, document: Document, settings: ChunkingSettings) -> ChunkPreview:
    """The paragraphs `settings` would cut from the document's stored parser output. Writes nothing.

    `settings`: the collection's own, or checked by services/collections.py: collection_chunking_with.
    Raises PreviewUnavailable without parser output, StrategyNotBuilt for a strategy not built yet.
    """
    if document.blocks is None:
        raise PreviewUnavailable(
            f"{document.filename} has no stored parser output to preview: it is not parsed yet, its reading "
            "failed, or it is a large text file read as a stream"
        )
    blocks = [Block.from_json(b) for b in document.blocks]
    return ChunkPreview(settings, chunk_blocks(blocks, settings, _measure(document.collection, settings.unit)))


def _measure(collection: Collection, unit: str) -> Callable[[str], int]:
    # Tokens are the collection's embedding model's own (what ingestion counts with), words without one.
    if unit != SizeUnit.TOKENS:
        return len
    embedder = get_embedder(collection.embedding_alias)
    counter = getattr(embedder, "token_count", None)
    if callable(counter):
        return lambda text: int(counter(text))
    engine = getattr(embedder, "_get_engine", None)
    if engine is None:
        return lambda text: len(text.split())
    e5 = engine()
    return lambda text: int(e5.token_count(text))


# A paragraph under this many tokens rarely answers a question on its own (a caption, a stray line).
SHORT_TOKENS = 50


@dataclass(frozen=True)
class PreviewChunk:
    text: str
    page: int | None
    section: list[str]
    tokens: int
    kind: str


@dataclass(frozen=True)
class PreviewNumbers:
    """What an editor weighs before changing settings: the paragraphs (and parents) with their sizes in the
    model's tokens, and the numbers that tell a good cut from a bad one."""

    chunks: list[PreviewChunk]
    chunk_count: int
    share_under_50_tokens: float
    heading_only_count: int
    parent_count: int | None  # hierarchical only
    median_parent_tokens: float | None  # hierarchical only


def chunk_preview_numbers(*, document: Document, preview: ChunkPreview) -> PreviewNumbers:
    """Count `preview`'s paragraphs, their tokens by the collection's embedding model (whatever the unit),
    the short ones and the ones that are nothing but headings. Writes nothing."""
    count = get_embedder(document.collection.embedding_alias).token_count
    headings = {" ".join(b["text"].split()) for b in document.blocks or [] if b.get("kind") == "heading"}
    chunks = [PreviewChunk(d.text, d.page, list(d.section), count(d.text), d.kind) for d in preview.chunks]
    paragraphs = [c for c in chunks if c.kind == "paragraph"]
    parents = [c for c in chunks if c.kind == "parent"]
    hierarchical = preview.settings.strategy == "hierarchical"
    short = sum(c.tokens < SHORT_TOKENS for c in paragraphs)
    return PreviewNumbers(
        chunks=chunks,
        chunk_count=len(paragraphs),
        share_under_50_tokens=round(short / len(paragraphs), 4) if paragraphs else 0.0,
        heading_only_count=sum(
            all(" ".join(part.split()) in headings for part in c.text.split("\n\n")) for c in paragraphs
        ),
        parent_count=len(parents) if hierarchical else None,
        median_parent_tokens=float(statistics.median(c.tokens for c in parents)) if hierarchical and parents else None,
    )
