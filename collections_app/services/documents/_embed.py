"""Embedding the staged paragraphs, one batch at a time, with progress the admin and the API can show."""

from __future__ import annotations

from typing import NamedTuple

from django.conf import settings

from collections_app.models import Collection, Document
from collections_app.selectors import breadcrumb_title
from collections_app.services.documents._chunk import windows
from collections_app.services.documents._reuse import DocumentVectors
from collections_app.services.documents._staging import Staging
from collections_app.services.documents._watch import Watch
from embedding import get_embedder


class Embedded(NamedTuple):
    """How a document's paragraphs got their vectors: asked of the model, or taken from stored rows."""

    embedded: int
    reused: int


def document_embed(
    document: Document,
    collection: Collection,
    staging: Staging,
    watch: Watch | None = None,
    reuse: DocumentVectors | None = None,
) -> Embedded:
    """Embed the staged paragraphs batch by batch; `watch` stops it between two batches if the document is deleted.
    `reuse`: stored rows whose vector a paragraph with the same embedding text takes instead (services/documents/
    _reuse.py); only the others are sent to the model."""
    embedder = get_embedder(collection.embedding_alias)
    batch = settings.KB_EMBED_BATCH
    title = breadcrumb_title(document).text  # the file's name only when it reads as words
    done = embedded = reused = 0
    # Parent sections (hierarchical) are never embedded: only paragraphs are matched.
    for part in windows(staging.drafts(), batch):
        if watch is not None:
            watch.check()
        texts = [d.embedding_text(title) for d in part if d.kind == "paragraph"]
        found = reuse.take(texts) if reuse is not None else [None] * len(texts)
        missing = [text for text, vector in zip(texts, found, strict=True) if vector is None]
        fresh = iter(embedder.embed_passages(missing) if missing else [])
        staging.add_vectors([vector if vector is not None else next(fresh) for vector in found])
        embedded += len(missing)
        reused += len(texts) - len(missing)
        done += len(part)
        # Embedding is the slow step: report progress between 10 % and 95 %, committed at once (no
        # transaction is open here) so the admin and the API show it while a large document is read.
        Document.objects.filter(pk=document.pk).update(progress=10 + int(85 * done / staging.count))
    return Embedded(embedded, reused)
