"""Vectors taken again instead of embedded again: same model, same embedding text, same vector.

A build (a re-index, a measure's design) cuts a document anew; most of its paragraphs often read exactly as rows
already stored for that document (a variant that changes only the floor or the window changes none of them).
Such a paragraph is given the stored row's vector instead of asking the model again.

A paragraph is matched by the exact text the embedder would receive (`ChunkDraft.embedding_text`: the breadcrumb
title and section trail, then the text), never by its position: a re-chunk that shifts every paragraph by one
still finds each. Matched only when the stored rows were embedded by the model the build embeds with: the same
alias, whose identity is the one the collection's last build recorded (a remote server that swapped models under
one alias since is not reused), and the same width.

Rows are looked up one document at a time (the keys of its rows, 32 bytes each; the vectors of one batch), so a
document of 100,000 paragraphs holds no 100,000 vectors in memory.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from django.conf import settings

from collections_app.models import Build, Chunk, Collection, Document
from collections_app.selectors import breadcrumb_title
from embedding import EmbeddingUnavailable, get_embedder, get_model
from ingestion import ChunkDraft


@dataclass(frozen=True)
class VectorSource:
    """The rows a build may take vectors from: one collection's generation, embedded by `alias` at `dims`."""

    collection_id: object
    generation: int
    alias: str
    dims: int

    def for_document(self, document: Document) -> DocumentVectors:
        return DocumentVectors(self, document)


def vector_source(*, collection: Collection, alias: str) -> VectorSource | None:
    """The readable rows of `collection` as a source for a build embedding with `alias`; None when they were
    embedded by another model (or reuse is turned off, KB_EMBED_REUSE=0)."""
    if not settings.KB_EMBED_REUSE or collection.served_alias != alias:
        return None
    last = Build.objects.filter(collection=collection).order_by("-built_at").values_list("model", "alias").first()
    if last is None:
        return None  # nobody recorded which model made these rows
    try:
        identity = get_embedder(alias).model_identity()
    except EmbeddingUnavailable:
        return None
    model, recorded_alias = last
    # Builds recorded before identities were (alias empty) hold the alias in `model`.
    if (model if recorded_alias else _identity(model)) != identity:
        return None
    return VectorSource(collection.pk, collection.active_generation, alias, get_model(alias).dims)


def _identity(alias: str) -> str:
    try:
        return get_embedder(alias).model_identity()
    except EmbeddingUnavailable:
        return alias


def _key(text: str) -> bytes:
    return hashlib.sha256(text.encode()).digest()


class DocumentVectors:
    """The vectors of one document's stored paragraphs, found by the text each was embedded from."""

    def __init__(self, source: VectorSource, document: Document) -> None:
        # The title the stored rows were embedded with is the document's (a copy in a measure's design has the
        # same name and parser metadata, hence the same title).
        title = breadcrumb_title(document).text
        rows = Chunk.objects.filter(
            document_id=document.pk, generation=source.generation, kind="paragraph",
            embedding_dims=source.dims, embedding__isnull=False,
        ).values_list("pk", "section", "text")  # fmt: skip
        self._rows = {
            _key(ChunkDraft(text=text, section=list(section), page=None).embedding_text(title)): pk
            for pk, section, text in rows.iterator(chunk_size=2000)
        }

    def take(self, texts: list[str]) -> list[list[float] | None]:
        """Each text's stored vector, or None where it must be embedded."""
        wanted = [self._rows.get(_key(text)) for text in texts]
        found = {pk for pk in wanted if pk is not None}
        # pgvector hands each back as the float32 values stored, which the staging file stores unchanged.
        stored = Chunk.objects.filter(pk__in=found).values_list("pk", "embedding")
        vectors = {pk: list(v) for pk, v in stored if v is not None}
        return [vectors.get(pk) if pk is not None else None for pk in wanted]
