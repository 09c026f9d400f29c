"""Uploads: an original stored under a safe name, its row, and its ingestion queued (or found already held)."""

from __future__ import annotations

import dataclasses
import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import connection, transaction

from collections_app.models import Collection, Document, DocumentStatus, DocumentVersion
from collections_app.services.documents._queue import document_queue_ingest
from collections_app.services.documents._versions import (
    document_version_first,
    document_version_next,
    document_version_of,
)
from collections_app.services.labels import LabelsDiffer, collection_labels_check, labels_clean
from collections_app.services.metadata_schema import collection_upload_metadata_declare, upload_metadata_check
from collections_app.services.recovery import document_recover
from infra.errors import Conflict, DomainError
from infra.locks import advisory_key, advisory_xact_lock
from ingestion import UnsupportedFile, check_upload

logger = logging.getLogger(__name__)


class FileTooLarge(DomainError, ValueError):
    """The file is over KB_MAX_UPLOAD_BYTES; the message names it and the limit."""

    meaning = "too_large"


class MetadataDiffers(Conflict):
    """The same content is held with other upload metadata: an upload never changes a held document's metadata."""


@dataclass(frozen=True)
class UploadResult:
    document: Document
    created: bool
    # The same content was held but had failed: it is read again (202, like a new upload).
    requeued: bool = False
    # A changed file under a document's name (or source): the document's next version, queued (202).
    versioned: bool = False
    # The document's version this upload is (the one holding this content, when it was held already).
    version: int = 1

    @property
    def accepted(self) -> bool:
        return self.created or self.requeued or self.versioned


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
    replace: bool = False,
    metadata: dict[str, Any] | None = None,
) -> UploadResult:
    """Store an upload and queue its ingestion; the same content again returns the document already held.

    `replace=True` (an editor's upload, a folder sync): new content under the name (or the source) of a document
    of the collection is that document's next version (_versions.py): the document keeps its id and its paragraphs
    answer until the new version's are published. False: a document of its own (a zip's members, attachments).

    `labels`: reader labels of a per-reader collection (None: none given). The same content already held with
    other labels is a conflict: an upload never changes who may read a document (`document_labels_set` does).

    `queue=False` leaves ingestion to the caller (a folder sync ingests in its own run).

    `metadata`: values for the collection's metadata columns (services/metadata_schema.py), checked and declared
    here, stored as the `metadata` ingest option and merged into every paragraph's metadata at publish. None: none
    given (a new version keeps its document's); InvalidMetadata when one does not fit, before anything is stored.

    Identical uploads at the same moment: a transaction-scoped advisory lock on (collection, content hash)
    lets one of them in at a time, so the first creates the document and the others, once it has committed,
    find it (200) instead of colliding on the unique constraint (a 500). Two versions of one document at the
    same moment: the document's row is locked, and the second finds the first being read (409).

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
    given_source = source_uri
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
                _check_held_metadata(existing, collection, metadata)
                return _upload_again(existing, queue=queue)
            if metadata is not None:
                # After the look-up (content already held declares nothing), under the collection's lock.
                metadata = collection_upload_metadata_declare(collection_id=collection.pk, metadata=metadata)
                ingest_options = {**(ingest_options or {}), "metadata": metadata} if metadata else ingest_options
            source_uri = source_uri or f"upload://{filename}"
            if replace and parent is None:
                _lock_name(collection, filename)
                held = document_version_of(collection_id=collection.pk, filename=filename, source_uri=given_source)
                if held is not None:
                    number = _version_store(
                        held,
                        filename,
                        data,
                        content_hash,
                        uploaded_by,
                        ingest_options,
                        labels,
                        stored,
                        metadata,
                        queue=queue,
                    )
                    if queue:
                        document_queue_ingest(document=held)
                    return UploadResult(held, created=False, versioned=True, version=number)
            document = Document(
                tenant_id=collection.tenant_id,
                collection=collection,
                content_hash=content_hash,
                filename=filename,
                source_uri=source_uri,
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
            document_version_first(document=document)
            if queue:
                document_queue_ingest(document=document)
    except BaseException:
        stored_files_remove(stored)
        raise
    return UploadResult(document, created=True)


def _check_held_metadata(existing: Document, collection: Collection, metadata: dict[str, Any] | None) -> None:
    if metadata is None:
        return
    given = upload_metadata_check(schema=collection.metadata_schema or {}, metadata=metadata)
    held = existing.ingest_options.get("metadata") or {}
    if given != held:
        raise MetadataDiffers(
            f"this content is already held as {existing.filename} (document {existing.pk}) with metadata {held}; "
            "metadata given at upload applies to a new document or a new version only"
        )


def _upload_again(existing: Document, *, queue: bool) -> UploadResult:
    result = _upload_again_read(existing, queue=queue)
    number = (
        DocumentVersion.objects.filter(document=existing, content_hash=existing.content_hash)
        .order_by("-number")
        .values_list("number", flat=True)
        .first()
    )
    return dataclasses.replace(result, version=number or existing.version or 1)


def _upload_again_read(existing: Document, *, queue: bool) -> UploadResult:
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


def _version_store(
    held: Document,
    filename: str,
    data: bytes,
    content_hash: str,
    uploaded_by: str,
    ingest_options: dict[str, Any] | None,
    labels: list[str] | None,
    stored: list[str],
    metadata: dict[str, Any] | None = None,
    *,
    queue: bool = True,
) -> int:
    """The locked document takes the new file as its next version; its paragraphs stay until that one is published.

    Who may read it and its pinned language are the document's and stay; its ingest options stay unless new ones
    are given, and so do the metadata given at its upload unless new ones are (`{}` clears them); its parser
    output is dropped, so the new file is parsed. Queued, it says `queued` until a worker takes it, as a new
    document does (not "parsing 0 %")."""
    if labels is not None and labels != held.labels:
        raise LabelsDiffer(
            f"{held.filename} (document {held.pk}) has labels {held.labels}; a new version keeps them: change "
            f"them with PATCH .../documents/{held.pk}/labels"
        )
    held.content_hash, held.filename, held.size = content_hash, filename, len(data)
    held.file.save(_stored_name(filename), ContentFile(data), save=False)  # beside the older versions' files
    if held.file.name:
        stored.append(held.file.name)
    held.uploaded_by = uploaded_by or held.uploaded_by
    options = dict(ingest_options or held.ingest_options)
    kept = metadata if metadata is not None else held.ingest_options.get("metadata")
    options.pop("metadata", None)
    held.ingest_options = {**options, "metadata": kept} if kept else options
    status = DocumentStatus.QUEUED if queue else DocumentStatus.PARSING
    held.status, held.progress, held.error, held.blocks = status, 0, "", None
    held.save(
        update_fields=[
            "content_hash", "filename", "size", "file", "uploaded_by", "ingest_options",
            "status", "progress", "error", "blocks", "updated_at",
        ]
    )  # fmt: skip
    return document_version_next(document=held).number


def _lock_name(collection: Collection, filename: str) -> None:
    # Two new files of one name at once: the second waits, then finds the first as the document it is a version of.
    with connection.cursor() as cursor:
        advisory_xact_lock(cursor, advisory_key(f"document-name:{collection.pk}:{filename}"))


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
    """The name a document is shown by: the last path part without unprintable characters (a line break, an
    escape), refused if unreadable, shortened if too long.

    A NUL byte or a lone surrogate (half of a UTF-16 pair, which no file system or database can store) is an
    UnsupportedFile, like a wrong extension: the uploader can rename the file.
    """
    name = Path(filename.replace("\\", "/")).name
    if "\x00" in name or any("\ud800" <= ch <= "\udfff" for ch in name):
        raise UnsupportedFile(
            "the file name holds a NUL byte or an invalid character (a lone surrogate); "
            "rename the file and upload it again"
        )
    # What Django's upload parser does to every name a browser or client sends (MultiPartParser.sanitize_file_name),
    # done here too for names that arrive otherwise (a zip's members, a folder, a mail, a collection file): a name
    # shows the same whichever way its document came in.
    name = "".join(char for char in name if char.isprintable())
    return _shorten(name, lambda text: len(text), _MAX_FILENAME_CHARS)


def _stored_name(filename: str) -> str:
    return _shorten(filename, lambda text: len(text.encode("utf-8")), _MAX_STORED_NAME_BYTES)


def _shorten(name: str, measure: Callable[[str], int], limit: int) -> str:
    """Cut the stem (never the extension) at a character boundary until `measure(name) <= limit`."""
    if measure(name) <= limit:
        return name
    path = Path(name)
    suffix = path.suffix if 0 < len(path.suffix) <= _MAX_EXTENSION_CHARS else ""
    stem = name[: len(name) - len(suffix)] if suffix else name
    while stem and measure(stem + suffix) > limit:
        stem = stem[: -max(1, (measure(stem + suffix) - limit) // 4)]  # at most 4 bytes a character
    return (stem or "file") + suffix
