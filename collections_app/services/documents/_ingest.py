"""Ingestion: read, chunk, embed and publish one document, the job a queued task runs."""

from __future__ import annotations

import logging
import time

from django.db import transaction
from django.utils import timezone

from collections_app.ingestion import NothingReadable, UnsupportedFile
from collections_app.ingestion.chunking import StrategyNotBuilt
from collections_app.ingestion.errors import ParserUnavailable
from collections_app.models import Document, DocumentStatus
from collections_app.services.builds import build_record
from collections_app.services.documents._chunk import document_chunk, document_stage_stream
from collections_app.services.documents._embed import document_embed
from collections_app.services.documents._publish import built_from_upload, document_publish
from collections_app.services.documents._read import document_blocks, document_streams
from collections_app.services.documents._staging import Staging
from embedding import get_model

logger = logging.getLogger(__name__)


def document_ingest(*, document_id: str) -> None:
    """Parse, chunk, label, embed and publish one document's paragraphs.

    Old paragraphs stay searchable until the new set replaces them in one
    transaction; a failure leaves them as they were and the document in
    `error` with a reason a person can act on.

    Paragraphs and their vectors wait in a staging area on disk (Staging) between the steps, so memory
    holds one embedding batch, not a large document's every vector; a text file over
    `KB_STREAM_TEXT_ABOVE` bytes is also read and chunked as a stream (ingestion/_text.py).
    """
    document = Document.objects.select_related("collection").filter(pk=document_id).first()
    if document is None:
        return  # deleted while queued: nothing to do
    if document.status == DocumentStatus.QUEUED:  # a re-ingest's task has started: it is being read now
        document.status = DocumentStatus.PARSING
        Document.objects.filter(pk=document.pk).update(status=DocumentStatus.PARSING, updated_at=timezone.now())
    collection = document.collection
    started = time.monotonic()
    with Staging() as staging:
        try:
            if document_streams(document):
                document_stage_stream(document, collection, staging)
            else:
                staging.add_all(document_chunk(document, collection, document_blocks(document)))
            document_embed(document, collection, staging)
        except (NothingReadable, UnsupportedFile, StrategyNotBuilt, ParserUnavailable) as exc:
            _fail(document, str(exc))
            return
        except Exception as exc:  # a parser or model failure: say what, never where
            logger.exception("ingestion of document %s failed", document.pk)
            _fail(document, f"{document.filename} could not be read ({type(exc).__name__}); the file may be corrupt")
            return
        document_publish(document, collection, staging)
    logger.info("document %s ingested: %d chunks in %.1fs", document.pk, staging.count, time.monotonic() - started)


def _fail(document: Document, reason: str) -> None:
    with transaction.atomic():
        Document.objects.filter(pk=document.pk).update(
            status=DocumentStatus.ERROR,
            error=reason,
            progress=100,
            updated_at=timezone.now(),
        )
        collection = document.collection
        model = get_model(collection.embedding_alias)
        build_record(
            collection=collection, document=document, model=model.model_id, alias=model.alias, dims=model.dims,
            passages=0, refused=[document.filename], built_from=built_from_upload(document),
        )  # fmt: skip
