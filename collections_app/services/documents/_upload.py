"""Uploads: an original stored under a safe name, its row, and its ingestion queued (or found already held)."""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import connection, transaction

from collections_app.ingestion import UnsupportedFile, check_upload
from collections_app.models import Collection, Document, DocumentStatus
from collections_app.services.documents._queue import document_queue_ingest
from collections_app.services.labels import LabelsDiffer, collection_labels_check, labels_clean
from collections_app.services.recovery import document_recover
from collections_app.sql import advisory_key, advisory_xact_lock

logger = logging.getLogger(__name__)


class FileTooLarge(ValueError):
    pass


@dataclass(frozen=True)
class UploadResult:
    document: Document
    created: bool
    # The same content was held but had failed: it is read again (202, like a new upload).
    requeued: bool = False

    @property
    def accepted(self) -> bool:
        return self.created or self.requeued


def document_create(
    *,
    collection: Collection,
    filename: str,
    content: BinaryIO,
    source_uri: str = "",
    uploaded_by: str = "",
    ingest_options: dict[str, Any] | None = None,
    parent: Document | None = None,
    queue: bool = True,
    labels: list[str] | None = None,
) -> UploadResult:
    """Store an upload and queue its ingestion; the same content again returns the document already held.

    `labels`: reader labels of a per-reader collection (None: none given). The same content already held with
    other labels is a conflict: an upload never changes who may read a document (`document_labels_set` does).

    `queue=False` leaves ingestion to the caller (a folder sync ingests in its own run).

    Identical uploads at the same moment: a transaction-scoped advisory lock on (collection, content hash)
    lets one of them in at a time, so the first creates the document and the others, once it has committed,
    find it (200) instead of colliding on the unique constraint (a 500).

    The stored file and the row: the file is written inside the transaction, after the lock and the look-up
    (so a duplicate never writes one), and removed again if anything in this function fails (the row is rolled
    back with it). Writing the file only on commit would be worse: a crash between the commit and the write
    would leave a committed document with no file, which nothing can read or repair. What remains: a caller that
    wraps this in a larger transaction of its own removes the files if that transaction rolls back (a zip import
    does: services/archives.py), and a process killed between the write and the commit leaves a file no row
    names — `manage.py storage_cleanup` finds and removes those.
    """
    filename = upload_filename(filename)
    data = content.read(settings.KB_MAX_UPLOAD_BYTES + 1)
    if len(data) > settings.KB_MAX_UPLOAD_BYTES:
        raise FileTooLarge(f"{filename} is larger than the upload limit of {settings.KB_MAX_UPLOAD_BYTES} bytes")
    check_upload(filename, data)
    if labels is not None:
        labels = labels_clean(labels)
        collection_labels_check(collection=collection, labels=labels)
    content_hash = hashlib.sha256(data).hexdigest()
    stored: list[str] = []
    try:
        with transaction.atomic():
            _lock_content(collection, content_hash)
            existing = Document.objects.filter(collection=collection, content_hash=content_hash).first()
            if existing is not None:
                if labels is not None and labels != existing.labels:
                    raise LabelsDiffer(
                        f"this content is already held as {existing.filename} (document {existing.pk}) with labels "
                        f"{existing.labels}; change them with PATCH .../documents/{existing.pk}/labels"
                    )
                return _upload_again(existing, queue=queue)
            document = Document(
                tenant_id=collection.tenant_id,
                collection=collection,
                content_hash=content_hash,
                filename=filename,
                source_uri=source_uri or f"upload://{filename}",
                size=len(data),
                uploaded_by=uploaded_by,
                ingest_options=ingest_options or {},
                parent=parent,
                labels=labels or [],
                # Waiting for a worker until its task starts (which sets `parsing`); read at once by a caller
                # that ingests it itself (queue=False, a folder sync).
                status=DocumentStatus.QUEUED if queue else DocumentStatus.PARSING,
            )
            document.file.save(_stored_name(filename), ContentFile(data), save=False)
            if document.file.name:  # always set by save(); the check is for the type checker
                stored.append(document.file.name)
            document.save()
            if queue:
                document_queue_ingest(document=document)
    except BaseException:
        stored_files_remove(stored)
        raise
    return UploadResult(document, created=True)


def _upload_again(existing: Document, *, queue: bool) -> UploadResult:
    if existing.status == DocumentStatus.ERROR and queue:
        # Uploading a failed file again is how a person retries it (after
        # installing Tesseract, say): read it again instead of answering "done".
        existing.status, existing.error, existing.progress, existing.blocks = (
            DocumentStatus.QUEUED,
            "",
            0,
            None,
        )
        existing.save(update_fields=["status", "error", "progress", "blocks", "updated_at"])
        document_queue_ingest(document=existing)
        return UploadResult(existing, created=False, requeued=True)
    # Stuck mid-ingest (its worker died): uploading it again reads it again, unless a task is alive.
    if (
        existing.status in (DocumentStatus.PARSING, DocumentStatus.QUEUED)
        and queue
        and document_recover(document=existing)
    ):
        return UploadResult(existing, created=False, requeued=True)
    return UploadResult(existing, created=False)


def _lock_content(collection: Collection, content_hash: str) -> None:
    # One upload of this content into this collection at a time, until the transaction ends. The key is 64 bits
    # of a hash, so two different contents share a lock only by a 1-in-2^64 chance (and then merely wait).
    with connection.cursor() as cursor:
        advisory_xact_lock(cursor, advisory_key(f"document-content:{collection.pk}:{content_hash}"))


def stored_files_remove(names: list[str]) -> None:
    """Remove stored originals whose rows did not (or will not) commit."""
    storage = Document._meta.get_field("file").storage
    for name in names:
        try:
            storage.delete(name)
        except OSError:
            logger.warning("a stored file could not be removed; storage_cleanup will find it")


# Document.filename is a varchar(255) (characters); the stored file's own name must fit the file system's
# 255 *bytes* per name (ext4, XFS, APFS) with room for the suffix storage adds when a name is taken (`_` + 7).
_MAX_FILENAME_CHARS = 255
_MAX_STORED_NAME_BYTES = 200
_MAX_EXTENSION_CHARS = 16


def upload_filename(filename: str) -> str:
    """The name a document is shown by: the last path part, refused if unreadable, shortened if too long.

    A NUL byte or a lone surrogate (half of a UTF-16 pair, which no file system or database can store) is an
    UnsupportedFile, like a wrong extension: the uploader can rename the file.
    """
    name = Path(filename.replace("\\", "/")).name
    if "\x00" in name or any("\ud800" <= ch <= "\udfff" for ch in name):
        raise UnsupportedFile(
            "the file name holds a NUL byte or an invalid character (a lone surrogate); "
            "rename the file and upload it again"
        )
    return _shorten(name, lambda text: len(text), _MAX_FILENAME_CHARS)


def _stored_name(filename: str) -> str:
    return _shorten(filename, lambda text: len(text.encode("utf-8")), _MAX_STORED_NAME_BYTES)


def _shorten(name: str, measure, limit: int) -> str:  # type: ignore[no-untyped-def]
    """Cut the stem (never the extension) at a character boundary until `measure(name) <= limit`."""
    if measure(name) <= limit:
        return name
    path = Path(name)
    suffix = path.suffix if 0 < len(path.suffix) <= _MAX_EXTENSION_CHARS else ""
    stem = name[: len(name) - len(suffix)] if suffix else name
    while stem and measure(stem + suffix) > limit:
        stem = stem[: -max(1, (measure(stem + suffix) - limit) // 4)]  # at most 4 bytes a character
    return (stem or "file") + suffix
