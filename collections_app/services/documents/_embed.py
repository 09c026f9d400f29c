"""Embedding the staged paragraphs, one batch at a time, with progress the admin and the API can show."""

from __future__ import annotations

from django.conf import settings

from collections_app.models import Collection, Document
from collections_app.selectors import breadcrumb_title
from collections_app.services.documents._chunk import windows
from collections_app.services.documents._staging import Staging
from collections_app.services.documents._watch import Watch
from embedding import get_embedder


def document_embed(document: Document, collection: Collection, staging: Staging, watch: Watch | None = None) -> None:
    """Embed the staged paragraphs batch by batch; `watch` stops it between two batches if the document is deleted."""
    embedder = get_embedder(collection.embedding_alias)
    batch = settings.KB_EMBED_BATCH
    title = breadcrumb_title(document).text  # the file's name only when it reads as words
    done = 0
    # Parent sections (hierarchical) are never embedded: only paragraphs are matched.
    for part in windows(staging.drafts(), batch):
        if watch is not None:
            watch.check()
        embedded = [d for d in part if d.kind == "paragraph"]
        staging.add_vectors(embedder.embed_passages([d.embedding_text(title) for d in embedded]))
        done += len(part)
        # Embedding is the slow step: report progress between 10 % and 95 %, committed at once (no
        # transaction is open here) so the admin and the API show it while a large document is read.
        Document.objects.filter(pk=document.pk).update(progress=10 + int(85 * done / staging.count))
