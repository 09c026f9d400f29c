"""Chunk preview: a document's stored parser output cut with some chunking settings, writing nothing.

An editor compares the collection's settings with others before changing them (admin: the document's
"Preview chunking" page). The parser output kept on the document (`Document.blocks`) is what a re-chunk
would read, so the preview never re-parses and never embeds.

A preview cuts at most the first `PREVIEW_MAX_BLOCKS` blocks: a large document's parser output (tens of
thousands of blocks, megabytes of JSON) is sliced in the database and only its beginning is read, cut and
counted, so a page load never chunks and tokenizes a whole book. The answer says how many blocks it cut of
how many (`blocks_previewed` of `blocks_total`); for any ordinary document that is all of them.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass

from django.db.models import F, Func, IntegerField, JSONField
from django.db.models.expressions import RawSQL

from collections_app.models import Collection, Document, SizeUnit
from embedding import get_embedder
from infra.errors import Invalid
from ingestion import ChunkDraft, ChunkingSettings, chunk_blocks
from ingestion.blocks import Block


class PreviewUnavailable(Invalid):
    """The document has no stored parser output to cut (not parsed yet, failed, or read as a stream)."""


# The blocks a preview cuts at most: all of an ordinary document's (a 100-page report has about this many), the
# beginning of a large one's. Counting the paragraphs' tokens is most of a preview's time, ~3 ms a paragraph on
# a busy two-core machine: 1,000 blocks of prose are ~350 paragraphs, about a second (bench/large_document_pages.py).
PREVIEW_MAX_BLOCKS = 1000


@dataclass(frozen=True)
class PreviewBlocks:
    """The first blocks of a document's stored parser output, and how many it holds in all."""

    blocks: list[Block]
    total: int

    @property
    def complete(self) -> bool:
        return len(self.blocks) >= self.total


@dataclass(frozen=True)
class ChunkPreview:
    settings: ChunkingSettings
    chunks: list[ChunkDraft]
    source: PreviewBlocks

    @property
    def count(self) -> int:
        return len(self.chunks)


def document_preview_blocks(*, document: Document, limit: int | None = None) -> PreviewBlocks:
    """The first `limit` (PREVIEW_MAX_BLOCKS) blocks of the document's stored parser output, sliced by
    PostgreSQL: the rest of a large document's blocks never leave the database. Raises PreviewUnavailable
    without parser output."""
    limit = PREVIEW_MAX_BLOCKS if limit is None else limit
    row = (
        Document.objects.filter(pk=document.pk, blocks__isnull=False)
        .annotate(
            total=Func(F("blocks"), function="jsonb_array_length", output_field=IntegerField()),
            head=RawSQL("jsonb_path_query_array(blocks, %s::jsonpath)", [f"$[0 to {limit - 1}]"], JSONField()),
        )
        .values_list("total", "head")
        .first()
    )
    if row is None:
        raise PreviewUnavailable(
            f"{document.filename} has no stored parser output to preview: it is not parsed yet, its reading "
            "failed, or it is a large text file read as a stream"
        )
    total, head = row
    return PreviewBlocks([Block.from_json(b) for b in head], total)


def document_chunk_preview(
    *, document: Document, settings: ChunkingSettings, source: PreviewBlocks | None = None
) -> ChunkPreview:
    """The paragraphs `settings` would cut from the document's stored parser output — its first
    `PREVIEW_MAX_BLOCKS` blocks (`source`, read here unless given: two previews of one page share it).
    Writes nothing. `settings`: the collection's own, or checked by services/collections.py:
    collection_chunking_with.

    Raises PreviewUnavailable without parser output, StrategyNotBuilt for a strategy not built yet.
    """
    if source is None:
        source = document_preview_blocks(document=document)
    measure = _measure(document.collection, settings.unit)
    return ChunkPreview(settings, chunk_blocks(source.blocks, settings, measure), source)


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
    blocks_previewed: int  # the first blocks cut (every number above is of them)
    blocks_total: int  # the document's blocks in all


def chunk_preview_numbers(*, document: Document, preview: ChunkPreview) -> PreviewNumbers:
    """Count `preview`'s paragraphs, their tokens by the collection's embedding model (whatever the unit),
    the short ones and the ones that are nothing but headings. Writes nothing."""
    count = get_embedder(document.collection.embedding_alias).token_count
    headings = {" ".join(b.text.split()) for b in preview.source.blocks if b.kind == "heading"}
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
        blocks_previewed=len(preview.source.blocks),
        blocks_total=preview.source.total,
    )


@dataclass(frozen=True)
class ParagraphNumbers:
    """The preview's numbers for the paragraphs a document has now (its editors' edits included, hidden ones
    not: no reader gets them), shown on its paragraphs page."""

    paragraphs: int
    tokens: int
    share_under_50_tokens: float
    hidden: int
    edited: int


def document_paragraph_numbers(*, document: Document, paragraphs: list[tuple[str, bool, bool]]) -> ParagraphNumbers:
    """`paragraphs`: (text, hidden, edited) of each of the document's live paragraphs. Tokens are the collection's
    embedding model's, as the preview counts them. Writes nothing."""
    count = get_embedder(document.collection.embedding_alias).token_count
    shown = [count(text) for text, hidden, _ in paragraphs if not hidden]
    short = sum(tokens < SHORT_TOKENS for tokens in shown)
    return ParagraphNumbers(
        paragraphs=len(shown),
        tokens=sum(shown),
        share_under_50_tokens=round(short / len(shown), 4) if shown else 0.0,
        hidden=sum(hidden for _, hidden, _ in paragraphs),
        edited=sum(edited for _, _, edited in paragraphs),
    )
