"""The large-document lane: at most KB_LARGE_DOCUMENT_LANES large ingestions run at a time (default 1), so
large documents never take every worker and small ones always have one.

A document is large when it is over KB_LARGE_DOCUMENT_BYTES; when its extent, read before it is parsed, has
more than KB_LARGE_DOCUMENT_PAGES pages (a page to read by OCR counts OCR_PAGE_WEIGHT) or more than
KB_LARGE_DOCUMENT_PARAGRAPHS rows; or when, once cut, it has more than KB_LARGE_DOCUMENT_PARAGRAPHS paragraphs
(embedding is the slow step). A queued ingestion of a large document takes a lane before its slow work: a
PostgreSQL session advisory lock on a connection of its own, held until the document is published or failed,
and dropped by the server if the worker dies.

When every lane is taken the ingestion does not wait for one: waiting would hold its worker, and two waiting
would hold both, which is the very thing the lane prevents. It goes back to the queue instead: the document
shows `queued`, and a one-off django-q2 schedule queues it again in LANE_RETRY, marked large, so the next try
asks for a lane before doing anything (its parser output, when parsed, is kept: it is not parsed again).
Meanwhile small documents go ahead on the other workers. The recovery leaves such a document alone: nothing
holds its lease and no task of its is dead (services/recovery.py).

Ingestions outside the queue (a folder sync reads its files one by one in its own task) take no lane.
"""

from __future__ import annotations

import datetime as dt
import logging

from django.conf import settings
from django.utils import timezone

from collections_app.models import Document, DocumentStatus
from collections_app.services.documents._queue import INGEST_FUNC, ingest_task_options
from infra.locks import advisory_try_lock, own_session
from ingestion import Extent

logger = logging.getLogger(__name__)

# Reading a page by OCR costs about ten times what reading a page of text and embedding its paragraphs does
# (3-5 s a page at 300 dpi on one core of a 2-core machine).
OCR_PAGE_WEIGHT = 10
# django-q2's scheduler looks at its schedules every 30 s: a retry sooner than that would wait anyway.
LANE_RETRY = dt.timedelta(seconds=30)


class LaneBusy(Exception):
    """Every large-document lane is taken: this document goes back to the queue."""


def document_is_large(document: Document, extent: Extent | None) -> bool:
    if document.size > settings.KB_LARGE_DOCUMENT_BYTES:
        return True
    if extent is None:
        return False
    pages = (extent.pages or 0) + (OCR_PAGE_WEIGHT - 1) * (extent.ocr_pages or 0)
    return pages > settings.KB_LARGE_DOCUMENT_PAGES or (extent.rows or 0) > settings.KB_LARGE_DOCUMENT_PARAGRAPHS


def paragraphs_are_many(paragraphs: int) -> bool:
    return paragraphs > settings.KB_LARGE_DOCUMENT_PARAGRAPHS


def lane_key(number: int) -> str:
    return f"kbsite-large-lane:{number}"


class Lane:
    """One ingestion's hold on a lane, taken at most once (`take`) and let go on exit."""

    def __init__(self) -> None:
        self._connection = None
        self.number: int | None = None

    def __enter__(self) -> Lane:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._connection is not None:
            self._connection.close()  # closing the session releases the lock
            self._connection = None

    def take(self) -> None:
        """Hold a free lane from now on, or raise LaneBusy. Does nothing when one is held, or lanes are off."""
        lanes = settings.KB_LARGE_DOCUMENT_LANES
        if self._connection is not None or lanes <= 0:
            return
        raw = own_session()
        try:
            with raw.cursor() as cursor:
                for number in range(lanes):
                    if advisory_try_lock(cursor, lane_key(number)):
                        self._connection, self.number = raw, number
                        return
        except BaseException:
            raw.close()
            raise
        raw.close()
        raise LaneBusy(f"all {lanes} large-document lane(s) are taken")


def document_queue_later(*, document: Document) -> None:
    """Back to the queue: `queued` now, and queued again in LANE_RETRY, marked large (see the module's docstring)."""
    from django_q.models import Schedule
    from django_q.tasks import schedule

    Document.objects.filter(pk=document.pk).update(status=DocumentStatus.QUEUED, progress=0, updated_at=timezone.now())
    options = ingest_task_options(document)
    name = f"ingest document {document.pk} (waiting for a lane)"
    if Schedule.objects.filter(name=name).exists():
        return  # already waiting (a re-upload requeued it meanwhile): one retry is enough
    schedule(
        INGEST_FUNC, str(document.pk), True,
        name=name,
        schedule_type=Schedule.ONCE, next_run=timezone.now() + LANE_RETRY,
        cluster=options.pop("cluster", None), q_options=options,
    )  # fmt: skip
    logger.info("document %s is large and every lane is taken: queued again in %s", document.pk, LANE_RETRY)
