"""Chunk preview: a document's stored parser output cut with some chunking settings, writing nothing.

An editor compares the collection's settings with others before changing them (admin: the document's
"Preview chunking" page). The parser output kept on the document (`Document.blocks`) is what a re-chunk
would read, so the preview never re-parses and never embeds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from collections_app.exceptions import Invalid
from collections_app.ingestion import ChunkDraft, ChunkingSettings, chunk_blocks
from collections_app.ingestion.blocks import Block
from collections_app.models import Collection, Document, SizeUnit
from retrieval.embedding import get_embedder


class PreviewUnavailable(Invalid):
    """The document has no stored parser output to cut (not parsed yet, failed, or read as a stream)."""


@dataclass(frozen=True)
class ChunkPreview:
    settings: ChunkingSettings
    chunks: list[ChunkDraft]

    @property
    def count(self) -> int:
        return len(self.chunks)


def collection_chunking(*, collection: Collection) -> ChunkingSettings:
    """The chunking settings a collection's next ingestion uses."""
    return ChunkingSettings(
        strategy=collection.chunk_strategy,
        size=collection.chunk_size,
        overlap=collection.chunk_overlap,
        unit=collection.chunk_size_unit,
    )


def document_chunk_preview(*, document: Document, settings: ChunkingSettings) -> ChunkPreview:
    """The paragraphs `settings` would cut from the document's stored parser output. Writes nothing.

    Raises PreviewUnavailable without parser output, StrategyNotBuilt for a strategy not built yet.
    """
    if document.blocks is None:
        raise PreviewUnavailable(
            f"{document.filename} has no stored parser output to preview: it is not parsed yet, its reading "
            "failed, or it is a large text file read as a stream"
        )
    if settings.overlap >= settings.size:
        raise Invalid("the overlap must be smaller than the size", field="overlap")
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
