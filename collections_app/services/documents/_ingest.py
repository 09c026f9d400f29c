"""Ingestion: read, chunk, embed and publish one document, the job a queued task runs."""

from __future__ import annotations

import logging
import time

from django.db import transaction
from django.utils import timezone

from collections_app.models import Collection, Document, DocumentStatus, DocumentVersion
from collections_app.services.builds import build_record
from collections_app.services.documents._chunk import document_chunk, document_stage_stream
from collections_app.services.documents._embed import document_embed
from collections_app.services.documents._lane import (
    Lane,
    LaneBusy,
    document_is_large,
    document_queue_later,
    paragraphs_are_many,
)
from collections_app.services.documents._publish import built_from_upload, document_publish
from collections_app.services.documents._read import (
    OriginalMissing,
    document_extent,
    document_original_check,
    document_parse,
    document_stored_blocks,
    document_streams,
)
from collections_app.services.documents._staging import Staging
from collections_app.services.documents._versions import document_version_fail
from collections_app.services.documents._watch import DocumentGone, Watch
from embedding import UnsearchableVector, get_model
from ingestion import NothingReadable, OverBudget, UnsupportedFile
from ingestion.chunking import StrategyNotBuilt
from ingestion.errors import ParserUnavailable

logger = logging.getLogger(__name__)

# Failures a person can act on: their message is the document's error, as it is.
_REFUSALS = (
    NothingReadable, UnsupportedFile, StrategyNotBuilt, ParserUnavailable, OverBudget, OriginalMissing,
    UnsearchableVector,  # the model answered a vector with no length: said as it is, not "the file may be corrupt"
)  # fmt: skip


def document_ingest(*, document_id: str, queued: bool = False, large: bool = False) -> None:
    """Parse, chunk, label, embed and publish one document's paragraphs.

    Old paragraphs stay searchable until the new set replaces them in one
    transaction; a failure leaves them as they were and the document in
    `error` with a reason a person can act on.

    Paragraphs and their vectors wait in a staging area on disk (Staging) between the steps, so memory
    holds one embedding batch, not a large document's every vector; a text file over
    `KB_STREAM_TEXT_ABOVE` bytes is also read and chunked as a stream (ingestion/_text.py).

    The document budgets hold (ingestion/budgets.py): over its pages or rows it ends in `error` before it is
    parsed, and its parser runs in a child process bounded in memory and time. `queued=True` (the queue's task):
    a large document takes the large-document lane first, or goes back to the queue when every lane is taken
    (`large=True`: it is known to be large, so the lane is asked for before anything else; _lane.py). Deleted
    while it is read, it stops within seconds and leaves nothing behind (_watch.py).
    """
    document = Document.objects.select_related("collection").filter(pk=document_id).first()
    if document is None:
        return  # deleted while queued: nothing to do
    if queued and document.status not in (DocumentStatus.QUEUED, DocumentStatus.PARSING):
        # Done or failed since this task was queued: a second delivery (a recovery requeued it while another
        # cluster still had it, on the Redis broker) reads nothing again, so no document is built twice. The
        # task holds the document's lease here, so no other worker is between this look and the work.
        return
    if document.status == DocumentStatus.QUEUED:  # a re-ingest's task has started: it is being read now
        document.status = DocumentStatus.PARSING
        Document.objects.filter(pk=document.pk).update(status=DocumentStatus.PARSING, updated_at=timezone.now())
    collection = document.collection
    watch = Watch(str(document.pk))
    started = time.monotonic()
    try:
        with Lane() as lane, Staging() as staging:
            if not _read(document, collection, staging, watch, lane if queued else None, large):
                return
            document_publish(document, collection, staging)
    except LaneBusy:
        document_queue_later(document=document)
        return
    except DocumentGone:
        logger.info(
            "document %s was deleted while it was read: its ingestion stopped after %.1fs",
            document.pk,
            time.monotonic() - started,
        )
        return
    logger.info("document %s ingested: %d chunks in %.1fs", document.pk, staging.count, time.monotonic() - started)


def _read(
    document: Document, collection: Collection, staging: Staging, watch: Watch, lane: Lane | None, large: bool
) -> bool:
    """Stage and embed the document's paragraphs; False (and the document in `error`) when it cannot be read."""
    try:
        if lane is not None and large:
            lane.take()  # known to be large (it was sent back for a lane): before any work
        _stage(document, collection, staging, watch, lane)
        if lane is not None and paragraphs_are_many(staging.count):
            lane.take()  # embedding is the slow step
        document_embed(document, collection, staging, watch)
    except (LaneBusy, DocumentGone):
        raise
    except _REFUSALS as exc:
        _fail(document, str(exc))
        return False
    except Exception as exc:  # a parser or model failure: say what, never where
        if not watch.still_wanted(now=True):
            raise DocumentGone(f"document {document.pk} was deleted while it was read") from exc  # its file went
        logger.exception("ingestion of document %s failed", document.pk)
        kind = getattr(exc, "kind", type(exc).__name__)  # a parser's own error, sent back from its child process
        _fail(document, f"{document.filename} could not be read ({kind}); the file may be corrupt")
        return False
    return True


def _stage(document: Document, collection: Collection, staging: Staging, watch: Watch, lane: Lane | None) -> None:
    """The document's paragraphs into staging: streamed, cut from its stored parser output, or parsed first."""
    blocks = document_stored_blocks(document)
    if blocks is None or document_streams(document):
        try:
            document_original_check(document)
        except OriginalMissing:
            if not watch.still_wanted(now=True):  # deleted meanwhile (its file went with it), not a missing original
                raise DocumentGone(f"document {document.pk} was deleted before it was read") from None
            raise
    if document_streams(document):
        if lane is not None and document_is_large(document, None):
            lane.take()
        document_stage_stream(document, collection, staging, watch)
        return
    if blocks is None:
        extent = document_extent(document, watch)  # over its pages or rows: refused here, before parsing
        if lane is not None and document_is_large(document, extent):
            lane.take()
        blocks = document_parse(document, watch)
    elif lane is not None and document_is_large(document, None):
        lane.take()
    staging.add_all(document_chunk(document, collection, blocks, watch))


def _fail(document: Document, reason: str) -> None:
    with transaction.atomic():
        # A new version that cannot be read: it says so, and the version before still answers (_versions.py).
        reason = document_version_fail(document=document, reason=reason)
        failed = Document.objects.filter(pk=document.pk).update(
            status=DocumentStatus.ERROR,
            error=reason,
            progress=100,
            updated_at=timezone.now(),
        )
        if not failed:
            return  # deleted meanwhile: nothing to record
        collection = document.collection
        model = get_model(collection.embedding_alias)
        build_record(
            collection=collection, document=document, model=model.model_id, alias=model.alias, dims=model.dims,
            passages=0, refused=[document.filename], built_from=built_from_upload(document),
            version=_version_read(document),
        )  # fmt: skip


def _version_read(document: Document) -> int | None:
    return (
        DocumentVersion.objects.filter(document=document, content_hash=document.content_hash)
        .order_by("-number")
        .values_list("number", flat=True)
        .first()
    )
