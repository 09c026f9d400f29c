from __future__ import annotations

import hashlib
import logging
import pickle
import tempfile
import time
import uuid
from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from io import BytesIO
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import connection, transaction
from django.utils import timezone
from psycopg.types.json import Jsonb

from collections_app.ingestion import (
    ChunkDraft,
    ChunkingSettings,
    NothingReadable,
    UnsupportedFile,
    check_upload,
    chunk_blocks,
    detect_language,
    extension_of,
    iter_chunk_blocks,
    iter_text_blocks,
    parse_document,
)
from collections_app.ingestion.blocks import Attachment, Block
from collections_app.ingestion.chunking import StrategyNotBuilt
from collections_app.ingestion.formats import family_of
from collections_app.ingestion.parsing import ParserUnavailable
from collections_app.models import Chunk, Collection, Document, DocumentStatus
from collections_app.services.builds import build_record
from collections_app.services.labels import (
    LabelsDiffer,
    collection_labels_check,
    document_labels_for_publish,
    labels_clean,
)
from collections_app.services.languages import document_language_for_publish
from collections_app.services.metadata_schema import document_records_declare
from collections_app.services.recovery import document_recover
from collections_app.sql import advisory_key, advisory_xact_lock, keyword_vector
from retrieval.embedding import get_embedder, get_model

logger = logging.getLogger(__name__)
_T = TypeVar("_T")


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
            DocumentStatus.PARSING,
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


def document_queue_ingest(*, document: Document, reingest: bool = False) -> None:
    """Queue the document's ingestion once the transaction commits.

    `reingest=True` (an editor's re-ingest) shows it `queued` at once, until its task starts reading it; its
    paragraphs stay searchable meanwhile. The task is named after the file, with the document's id for the
    recovery (services/recovery.py finds a document's tasks by "ingest document <id>").
    """
    from django_q.tasks import async_task

    document_id = str(document.pk)
    if reingest:
        document.status, document.progress, document.error = DocumentStatus.QUEUED, 0, ""
        Document.objects.filter(pk=document.pk).update(
            status=DocumentStatus.QUEUED, progress=0, error="", updated_at=timezone.now()
        )
    shown = document.filename if len(document.filename) <= 44 else document.filename[:43] + "…"
    options: dict[str, str] = {}
    large_queue = settings.KB_LARGE_DOCUMENT_QUEUE
    if large_queue and document.size > settings.KB_LARGE_DOCUMENT_BYTES:
        # A large document is read by a cluster of its own (django-q2's named clusters: Q_CLUSTER_NAME), so
        # hours of embedding never hold up the small documents behind it. Off unless that cluster is set up.
        options["cluster"] = large_queue
    transaction.on_commit(
        lambda: async_task(
            "collections_app.tasks.ingest_document",
            document_id,
            task_name=f"{shown} (ingest document {document_id})",
            group="ingestion",
            **options,
        )
    )


def document_ingest(*, document_id: str) -> None:
    """Parse, chunk, label, embed and publish one document's paragraphs.

    Old paragraphs stay searchable until the new set replaces them in one
    transaction; a failure leaves them as they were and the document in
    `error` with a reason a person can act on.

    Paragraphs and their vectors wait in a staging area on disk (_Staging) between the steps, so memory
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
    with _Staging() as staging:
        try:
            if document_streams(document):
                _stage_streamed(document, collection, staging)
            else:
                staging.add_all(_chunk(document, collection, _blocks_of(document)))
            _embed(document, collection, staging)
        except (NothingReadable, UnsupportedFile, StrategyNotBuilt, ParserUnavailable) as exc:
            _fail(document, str(exc))
            return
        except Exception as exc:  # a parser or model failure: say what, never where
            logger.exception("ingestion of document %s failed", document.pk)
            _fail(document, f"{document.filename} could not be read ({type(exc).__name__}); the file may be corrupt")
            return
        _publish(document, collection, staging)
    logger.info("document %s ingested: %d chunks in %.1fs", document.pk, staging.count, time.monotonic() - started)


# Text files above KB_STREAM_TEXT_ABOVE bytes are read and chunked as a stream instead of through unstructured
# (which holds the whole file and its elements in memory). Below it, unstructured's title detection is worth its cost.
_STREAMED_EXTENSIONS = (".txt", ".md")


def document_streams(document: Document) -> bool:
    """Whether this document is read as a stream (large .txt/.md), with bounded memory."""
    return extension_of(document.filename) in _STREAMED_EXTENSIONS and document.size > settings.KB_STREAM_TEXT_ABOVE


def _blocks_of(document: Document) -> list[Block]:
    # Parser output is kept so that re-chunking never re-parses.
    if document.blocks is not None:
        return [Block.from_json(b) for b in document.blocks]
    result = parse_document(Path(document.file.path), document.filename, document.ingest_options)
    if result.columns is not None:
        # Records (spreadsheets, JSON/YAML arrays): declare the metadata columns in the collection's schema,
        # drop values that do not fit it (warned by row and column), and store the column roles on the
        # document so they can be edited. See services/metadata_schema.py.
        result.warnings += document_records_declare(document=document, result=result)
    warnings = [*result.warnings, *document_attachments_create(parent=document, attachments=result.attachments)]
    document.warnings, document.metadata = warnings, result.metadata
    Document.objects.filter(pk=document.pk).update(
        blocks=[b.to_json() for b in result.blocks], warnings=warnings, metadata=result.metadata, progress=10
    )
    return result.blocks


def document_attachments_create(*, parent: Document, attachments: list[Attachment]) -> list[str]:
    """Each attachment becomes a document of its own, linked to its message. Returns warnings for the parent."""
    warnings = []
    for attachment in attachments:
        if family_of(attachment.filename) == "archive":
            warnings.append(f"attachment {attachment.filename} skipped: a zip attached to a message is not unpacked")
            continue
        try:
            document_create(
                collection=parent.collection,
                filename=attachment.filename,
                content=BytesIO(attachment.content),
                source_uri=f"{parent.source_uri}#attachment={attachment.filename}",
                uploaded_by=parent.uploaded_by,
                parent=parent,
                # Whoever may not read the message may not read what came with it.
                labels=list(parent.labels) or None,
            )
        except (UnsupportedFile, FileTooLarge) as exc:
            warnings.append(f"attachment {attachment.filename} skipped: {exc}")
        except LabelsDiffer:
            warnings.append(
                f"attachment {attachment.filename} is already held with other reader labels; "
                "they were left as they are (change them on that document)"
            )
    return warnings


def _chunk(document: Document, collection: Collection, blocks: list[Block]) -> list[ChunkDraft]:
    method = collection_chunking(collection=collection)
    measure = _token_counter(collection) if method.unit == "tokens" else len
    drafts = chunk_blocks(blocks, method, measure)
    if not any(d.kind == "paragraph" for d in drafts):
        raise NothingReadable("no text could be read from this file (only headings were found)")
    document_language = detect_language(_sample(drafts, 5000))
    for draft in drafts:
        draft.language = detect_language(draft.text, default=document_language)
    document.language = document_language
    return drafts


def collection_chunking(*, collection: Collection) -> ChunkingSettings:
    """The chunking settings a collection's next ingestion (and a preview of it) uses."""
    return ChunkingSettings(
        strategy=collection.chunk_strategy,
        size=collection.chunk_size,
        overlap=collection.chunk_overlap,
        unit=collection.chunk_size_unit,
        parent_size=collection.parent_size,
    )


def _token_counter(collection: Collection) -> Callable[[str], int]:
    # The embedding model's own tokenizer, through the embedder's public method.
    return get_embedder(collection.embedding_alias).token_count


def document_title(document: Document) -> str:
    """The first part of every paragraph's breadcrumb: the title the parser found, else the file's name."""
    title = document.metadata.get("title") if isinstance(document.metadata, dict) else None
    return str(title) if title else Path(document.filename).stem


def _sample(drafts: Iterable[ChunkDraft], chars: int) -> str:
    """The first `chars` characters of the drafts' text, without joining them all."""
    taken: list[str] = []
    total = 0
    for draft in drafts:
        taken.append(draft.text)
        total += len(draft.text) + 1
        if total >= chars:
            break
    return " ".join(taken)[:chars]


# A streamed document's paragraphs are labelled by window: langdetect costs ~4 ms a paragraph (60,000 of them
# in a 60 MB file would take 4 minutes), so each run of _LANGUAGE_WINDOW paragraphs (~64 KB of text) gets the
# language of a sample drawn from all of them (_LANGUAGE_SAMPLE characters, ~8 ms).
_LANGUAGE_WINDOW = 64
_LANGUAGE_SAMPLE = 1000


def _stage_streamed(document: Document, collection: Collection, staging: _Staging) -> None:
    """Read a large text file as a stream: blocks → paragraphs → languages → staging, memory bounded by a window."""
    # A stream is cut by `structure` whatever the collection says: the other strategies need the whole document.
    method = replace(collection_chunking(collection=collection), strategy="structure")
    measure = _token_counter(collection) if method.unit == "tokens" else len
    drafts = iter_chunk_blocks(
        iter_text_blocks(Path(document.file.path), extension_of(document.filename)), method, measure
    )
    document_language = ""
    for window in _windows(drafts, _LANGUAGE_WINDOW):
        if staging.count == 0:
            document_language = detect_language(_sample(window, 5000))
        share = max(1, _LANGUAGE_SAMPLE // len(window))
        language = detect_language(" ".join(d.text[:share] for d in window), default=document_language)
        for draft in window:
            draft.language = language
        staging.add_all(window)
    if staging.count == 0:
        raise NothingReadable("no text could be read from this file (only headings were found)")
    document.language = document_language
    kind = (
        "Markdown headings, lists and code kept" if document.filename.lower().endswith(".md") else "no titles guessed"
    )
    document.warnings, document.metadata = [f"large text file read as a stream, paragraph by paragraph ({kind})"], {}
    Document.objects.filter(pk=document.pk).update(blocks=None, warnings=document.warnings, metadata={}, progress=10)


def _windows(items: Iterable[_T], size: int) -> Iterator[list[_T]]:
    window: list[_T] = []
    for item in items:
        window.append(item)
        if len(window) == size:
            yield window
            window = []
    if window:
        yield window


class _Staging:
    """A document's new paragraphs and their vectors, waiting on disk until they are published.

    Two nameless temporary files (O_TMPFILE where the system has it): they vanish when closed or when the
    process dies, even by kill -9, so staging never leaves anything behind. Paragraphs are pickled one after
    the other; vectors are float32 (what pgvector stores), one batch appended at a time.
    """

    def __init__(self) -> None:
        directory = settings.KB_STAGING_DIR or None  # "": the system's temporary directory
        self._drafts = tempfile.TemporaryFile(dir=directory)  # noqa: SIM115 - closed by __exit__
        self._vectors = tempfile.TemporaryFile(dir=directory)  # noqa: SIM115 - closed by __exit__
        self.count = 0
        self.vectors_count = 0
        self.dims = 0

    def __enter__(self) -> _Staging:
        return self

    def __exit__(self, *exc: object) -> None:
        self._drafts.close()
        self._vectors.close()

    def add_all(self, drafts: Iterable[ChunkDraft]) -> None:
        self._drafts.seek(0, 2)
        for draft in drafts:
            pickle.dump(draft, self._drafts, protocol=pickle.HIGHEST_PROTOCOL)
            self.count += 1

    def drafts(self) -> Iterator[ChunkDraft]:
        self._drafts.seek(0)
        # Not a file anybody else can write: the pickles are our own, written just above.
        unpickler = pickle.Unpickler(self._drafts)
        for _ in range(self.count):
            yield unpickler.load()

    def add_vectors(self, vectors: list[list[float]]) -> None:
        if vectors and not self.dims:
            self.dims = len(vectors[0])
        packed = array("f")
        for vector in vectors:
            if len(vector) != self.dims:
                raise ValueError(f"the model answered vectors of {len(vector)} and {self.dims} dimensions")
            packed.extend(vector)
        self._vectors.seek(0, 2)
        packed.tofile(self._vectors)
        self.vectors_count += len(vectors)

    def vectors(self, batch: int = 256) -> Iterator[list[float]]:
        self._vectors.seek(0)
        left = self.vectors_count
        while left:
            packed = array("f")
            packed.fromfile(self._vectors, min(batch, left) * self.dims)
            for start in range(0, len(packed), self.dims):
                yield packed[start : start + self.dims].tolist()
            left -= len(packed) // self.dims


def _embed(document: Document, collection: Collection, staging: _Staging) -> None:
    embedder = get_embedder(collection.embedding_alias)
    batch = settings.KB_EMBED_BATCH
    title = document_title(document)
    done = 0
    # Parent sections (hierarchical) are never embedded: only paragraphs are matched.
    for part in _windows(staging.drafts(), batch):
        embedded = [d for d in part if d.kind == "paragraph"]
        staging.add_vectors(embedder.embed_passages([d.embedding_text(title) for d in embedded]))
        done += len(part)
        # Embedding is the slow step: report progress between 10 % and 95 %, committed at once (no
        # transaction is open here) so the admin and the API show it while a large document is read.
        Document.objects.filter(pk=document.pk).update(progress=10 + int(85 * done / staging.count))


# The paragraph columns publishing writes (search_vector is filled afterwards, by _index_keywords).
_CHUNK_COLUMNS = (
    "id", "tenant_id", "collection_id", "document_id", "ordinal", "text", "section", "page", "language", "labels",
    "metadata", "embedding", "embedding_dims", "kind", "parent_id", "generation", "language_detected",
)  # fmt: skip


def _publish(document: Document, collection: Collection, staging: _Staging) -> None:
    """Replace the document's paragraphs with the staged set, in one transaction.

    Rows go in with PostgreSQL's COPY, streamed from the staging files: INSERTs through bulk_create made
    the worker's memory grow ~2 KB per paragraph (libc keeps the freed SQL buffers), ~170 MB for a 60 MB
    text file, and took twice as long. Model logic is not bypassed: Chunk has no save() or signals, and
    bulk_create sends none either.
    """
    model = get_model(collection.embedding_alias)
    # One transaction: readers see the old paragraphs until the whole new set replaces them (ARCHITECTURE,
    # contract 1), however long writing them takes.
    with transaction.atomic():
        # The generation searches read; locked so a re-index's cutover (services/reindex.py) cannot switch
        # generations between this read and the commit. A re-index carries these rows over at its cutover.
        locked = Collection.objects.select_for_update().get(pk=collection.pk)
        generation = locked.active_generation
        labels = document_labels_for_publish(document)  # as they stand now, not when the task started
        pinned = document_language_for_publish(document)  # an editor's language wins over detection
        waiting = locked.served_alias != collection.embedding_alias
        if waiting:
            # A model change waits for its re-index: these vectors are the new model's and must not join the
            # old model's ranking. They wait in the re-index's generation and go live at its cutover.
            if locked.reindex_generation is None:
                Collection.objects.filter(pk=locked.pk).update(reindex_generation=locked.active_generation + 1)
            generation = locked.reindex_generation or locked.active_generation + 1
        Chunk.objects.filter(document=document).delete()
        published = document_rows_write(
            document=document, staging=staging, generation=generation, labels=labels, language=pinned
        )
        if not waiting:
            _index_keywords(document)
        Document.objects.filter(pk=document.pk).update(
            status=DocumentStatus.DONE,
            error="",
            progress=100,
            language=pinned or document.language,
            language_detected=document.language,
            stale=False,
            updated_at=timezone.now(),
        )
        build_record(
            collection=collection,
            document=document,
            model=model.alias,  # build_record looks up the identity the provider reports
            dims=staging.dims,
            passages=published,
            refused=[],
            built_from=built_from_upload(document),
            unlabelled=0 if labels else published,
        )


def document_rows_write(
    *, document: Document, staging: _Staging, generation: int, labels: list[str], language: str = ""
) -> int:
    """Write the staged paragraphs (and parent sections) of one document as rows of `generation`. Returns
    the paragraphs written (parents not counted). The caller holds the transaction and removes what they replace.
    `language`: the document's pinned language, given to every row ("": each row its detected label, which is
    kept in language_detected either way).
    """
    collection = document.collection
    dims = staging.dims
    # Document-level facts every paragraph answers to: the platform keys (author, created) and
    # an email's subject, recipients and conversation thread.
    platform_metadata = {k: v for k, v in document.metadata.items() if k in DOCUMENT_METADATA_KEYS}
    # Ids decided up front: a child names its parent, which is written after it (the foreign key is checked
    # at commit).
    ids = [uuid.uuid4() for _ in range(staging.count)]
    vectors = staging.vectors()
    published = 0
    copy_rows = f"COPY {Chunk._meta.db_table} ({', '.join(_CHUNK_COLUMNS)}) FROM STDIN"
    with connection.cursor() as cursor, cursor.cursor.copy(copy_rows) as copy:
        for ordinal, draft in enumerate(staging.drafts()):
            vector = next(vectors) if draft.kind == "paragraph" else None
            copy.write_row(
                (
                    ids[ordinal],
                    document.tenant_id,
                    collection.pk,
                    document.pk,
                    ordinal,
                    draft.text,
                    draft.section,
                    draft.page,
                    language or draft.language,
                    labels,
                    Jsonb({**platform_metadata, **draft.metadata}),
                    None if vector is None else "[" + ",".join(map(repr, vector)) + "]",  # pgvector's text form
                    None if vector is None else dims,
                    draft.kind,
                    None if draft.parent is None else ids[draft.parent],
                    generation,
                    draft.language,
                )
            )
            published += draft.kind == "paragraph"
    return published


def _index_keywords(document: Document) -> None:
    # All of the document's paragraphs at once: they were just written.
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            UPDATE {Chunk._meta.db_table} SET search_vector = {keyword_vector()}
            WHERE document_id = %s AND kind = 'paragraph'
            """,
            [document.pk],
        )


# Document-level metadata copied onto each of its paragraphs (see ingestion/email.py for the email keys).
DOCUMENT_METADATA_KEYS = ("author", "created", "subject", "recipients", "thread")


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


def document_delete(*, document: Document) -> None:
    """Remove a document, its paragraphs and its attachments; stored originals go once the deletion commits."""
    documents = [document, *_attachments_of(document)]
    storage = Document._meta.get_field("file").storage
    files = [d.file.name for d in documents if d.file and d.file.name]

    def remove_files() -> None:
        for name in files:
            storage.delete(name)

    with transaction.atomic():
        document.delete()  # paragraphs and attachments cascade; builds keep their record (document set to null)
        transaction.on_commit(remove_files)


def _attachments_of(document: Document) -> list[Document]:
    found: list[Document] = []
    level = list(Document.objects.filter(parent=document))
    while level:
        found += level
        level = list(Document.objects.filter(parent__in=level))
    return found


def built_from_upload(document: Document) -> str:
    # For a person, never a path: who uploaded it, or which folder source it came from.
    if document.source_uri.startswith("folder://"):
        name = document.collection.name
        if document.source_uri.startswith(f"folder://{name}/"):
            return f"folder source {name}"  # a collection name may itself hold a slash
        return "folder source " + document.source_uri.removeprefix("folder://").split("/", 1)[0]
    return f"upload by {document.uploaded_by}" if document.uploaded_by else "upload"
