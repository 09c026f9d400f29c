"""Export: a collection's live paragraphs as one SQLite file in the collection format (_schema.py).

What it writes, and why:

- every paragraph searches read (`Chunk.objects.live().paragraphs()`: a hidden paragraph is never exported), in
  document order (documents by creation, then ordinal): the same build exports to the same bytes;
- `agent_id`: the *name* of each agent whose scope holds the collection, one copy of every row per agent (the
  answering side knows its agents by name; this installation's ids mean nothing there), or null when no agent
  is scoped;
- one `collection_built` row per agent from the serving build: the model searches embed questions with (its
  identity, never the alias alone), the dims of the rows, `method` of the latest build, `built_from` = the
  collection's description or else its name (for a person), the paragraphs written, `built_at` of the latest
  build, and `refused` as the latest collection-wide build (a zip, a folder sync, an import) recorded it, else
  the latest build's, three-valued. A collection never built gets no row;
- what a reader may ignore: the ranking settings (store_meta `kbsite.settings`) and each document's language,
  labels and title-bearing metadata (`kb_documents`), so an import answers the same questions in the same order;
  and the tables other apps register (collections_app/hooks.py): the collection's golden questions
  (`kb_golden_questions`, retrieval's), their answers named by document number and ordinal.

Never a server path, a storage name, a key, an id of this installation or a searched question (the audit's): the
file names documents by their file name only. Read in one REPEATABLE READ transaction (a cutover meanwhile is not
half-seen) through a server-side cursor, written in batches: a 100,000-paragraph collection is never held in memory.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings
from django.core.files import File
from django.core.files.storage import default_storage
from django.db import connection, transaction
from django.db.models import BinaryField, F, Func, QuerySet
from django.utils import timezone

from accounts.models import Agent
from collections_app.hooks import collection_file_tables
from collections_app.models import (
    Build,
    Chunk,
    Collection,
    CollectionFile,
    CollectionFileKind,
    CollectionFilePhase,
    CollectionFileStatus,
    Document,
)
from collections_app.services.collection_file._jobs import (
    JobProgress,
    collection_file_lease,
    collection_file_pending,
    collection_file_queue,
    collection_file_store,
)
from collections_app.services.collection_file._schema import INDEX_SQL, SCHEMA_SQL, SCHEMA_VERSION, SETTINGS_KEY
from collections_app.services.documents import DOCUMENT_METADATA_KEYS
from embedding import EmbeddingUnavailable, get_embedder, get_model

# The collection's settings that change what a search answers, carried to an import (floor, fusion, windows,
# languages, readers), and the chunking settings a later re-index of the import would cut with.
RANKING_SETTINGS = (
    "embedding_alias", "rerank_top_k", "rerank_top_n", "hybrid_weight", "score_threshold", "min_score", "around",
    "window_max_chars", "languages", "per_reader", "metadata_schema", "parent_return", "merge_threshold", "step_back",
    "chunk_strategy", "chunk_size", "chunk_overlap", "chunk_size_unit", "parent_size",
)  # fmt: skip

BATCH = 1000

logger = logging.getLogger(__name__)

Progress = Callable[[int, int], None]


def collection_export(*, collection: Collection, path: Path, progress: Progress | None = None) -> int:
    """Write the collection file of `collection` at `path` (a new file). Returns the paragraphs written."""
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if outermost:  # inside a caller's transaction (a test's), that one's snapshot is the one read
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        collection = Collection.objects.get(pk=collection.pk)  # as the snapshot holds it
        agents: list[str | None] = list(
            Agent.objects.filter(tenant_id=collection.tenant_id, collections=collection)
            .order_by("name", "id")
            .values_list("name", flat=True)
        ) or [None]
        store = sqlite3.connect(path)
        try:
            store.execute("PRAGMA journal_mode = OFF")
            store.execute("PRAGMA synchronous = OFF")
            store.executescript(SCHEMA_SQL)
            meta = {
                "schema_version": SCHEMA_VERSION,
                "vector": "float32 little-endian",
                SETTINGS_KEY: _settings(collection),
            }
            store.executemany("INSERT INTO store_meta VALUES (?, ?)", sorted(meta.items()))
            seqs = _write_documents(store, collection)
            written, dims = _write_paragraphs(store, collection, agents[0], seqs, progress)
            for table in collection_file_tables():  # e.g. the golden questions (retrieval's, hooks.py)
                table.write(collection, store, seqs)
            for agent in agents[1:]:
                # The same rows for every other agent, copied inside the file (no second read of the database).
                store.execute(
                    """INSERT INTO agents_chunks (agent_id, collection, document, ordinal, text, vector, dims, language,
                           page, section, metadata, labels, continues, document_seq)
                       SELECT ?, collection, document, ordinal, text, vector, dims, language, page, section, metadata,
                           labels, continues, document_seq
                       FROM agents_chunks WHERE agent_id IS ? ORDER BY id""",
                    (agent, agents[0]),
                )
            store.execute(INDEX_SQL)
            built = _built_row(collection, written, dims)
            if built is not None:
                store.executemany(
                    "INSERT INTO collection_built VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [(collection.name, agent, *built) for agent in agents],
                )
            store.commit()
        finally:
            store.close()
    return written


def _settings(collection: Collection) -> str:
    values: dict[str, Any] = {field: getattr(collection, field) for field in RANKING_SETTINGS}
    values["embedding_alias"] = collection.served_alias  # the model the rows were embedded with
    values["description"] = collection.description
    return json.dumps(values, sort_keys=True, ensure_ascii=False)


def _live(collection: Collection) -> QuerySet[Chunk]:
    # A paragraph without a vector (none is written so today) would be no row a reader can rank: not exported.
    return Chunk.objects.live().paragraphs().filter(collection=collection, embedding__isnull=False)


def _write_documents(store: sqlite3.Connection, collection: Collection) -> dict[Any, int]:
    """kb_documents: the documents with live paragraphs, numbered in export order. Returns id → number."""
    documents = (
        Document.objects.filter(collection=collection, pk__in=_live(collection).values("document_id"))
        .order_by("created_at", "id")
        .values_list("pk", "filename", "language", "labels", "metadata")
    )
    seqs: dict[Any, int] = {}
    rows = []
    for seq, (pk, filename, language, labels, metadata) in enumerate(documents.iterator(chunk_size=BATCH), start=1):
        seqs[pk] = seq
        # The title (the breadcrumb an import re-embeds with) and the document facts its paragraphs carry; not
        # whatever else a parser put there.
        kept = {k: v for k, v in (metadata or {}).items() if k == "title" or k in DOCUMENT_METADATA_KEYS}
        rows.append((seq, collection.name, filename, language, _json(sorted(labels)), _json(kept)))
    store.executemany("INSERT INTO kb_documents VALUES (?, ?, ?, ?, ?, ?)", rows)
    return seqs


def _write_paragraphs(
    store: sqlite3.Connection,
    collection: Collection,
    agent: str | None,
    seqs: dict[Any, int],
    progress: Progress | None,
) -> tuple[int, int | None]:
    total = _live(collection).count()
    rows = (
        _live(collection)
        # pgvector's binary form (int16 dims, int16 unused, big-endian float32s): read as bytes, not parsed from
        # the text form into Python floats (which made a 100,000-paragraph export several times slower).
        .annotate(wire=Func(F("embedding"), function="vector_send", output_field=BinaryField()))
        .order_by("document__created_at", "document_id", "position__ordinal")
        .values_list(
            "document_id", "document__filename", "position__ordinal", "text", "wire", "embedding_dims", "language",
            "page", "section", "metadata", "labels", "continues",
        )
    )  # fmt: skip
    written = 0
    dims: int | None = None
    batch: list[tuple[Any, ...]] = []
    for (
        document_id,
        filename,
        ordinal,
        text,
        embedding,
        width,
        language,
        page,
        section,
        metadata,
        labels,
        cont,
    ) in rows.iterator(chunk_size=BATCH):
        vector = np.frombuffer(bytes(embedding), dtype=">f4", offset=4).astype("<f4")
        dims = dims or width
        batch.append(
            (
                agent, collection.name, filename, ordinal, text, vector.tobytes(), len(vector), language, page,
                _json(section), _json(metadata), _json(sorted(labels)), None if cont is None else int(cont),
                seqs[document_id],
            )
        )  # fmt: skip
        if len(batch) == BATCH:
            written += _insert(store, batch)
            if progress is not None:
                progress(written, total)
    written += _insert(store, batch)
    if progress is not None:
        progress(written, total)
    return written, dims


def _insert(store: sqlite3.Connection, batch: list[tuple[Any, ...]]) -> int:
    store.executemany(
        """INSERT INTO agents_chunks (agent_id, collection, document, ordinal, text, vector, dims, language, page,
               section, metadata, labels, continues, document_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        batch,
    )
    count = len(batch)
    batch.clear()
    return count


def _built_row(collection: Collection, written: int, dims: int | None) -> tuple[Any, ...] | None:
    builds = Build.objects.filter(collection=collection).order_by("-built_at", "-id")
    latest = builds.first()
    if latest is None:
        return None  # never built: no row, a third answer
    wide = builds.filter(document=None).first() or latest
    try:
        model = get_embedder(collection.served_alias).model_identity()
        dims = dims or get_model(collection.served_alias).dims
    except EmbeddingUnavailable:
        model = latest.model  # no longer offered here: what the build recorded
    return (
        model,
        dims or latest.dims,
        _json(latest.method),
        collection.description or collection.name,
        written,
        latest.built_at.isoformat(),
        None if wide.refused is None else _json(list(wide.refused)),
    )


def _json(value: object) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def collection_export_start(*, collection: Collection, created_by: str = "") -> CollectionFile:
    """Queue the export of `collection` in the background (the admin's action): its progress on a CollectionFile,
    the file kept under a storage name of its own until it is downloaded."""
    with transaction.atomic():
        record = CollectionFile.objects.create(
            tenant_id=collection.tenant_id,
            collection=collection,
            kind=CollectionFileKind.EXPORT,
            total=_live(collection).count(),
            created_by=created_by,
        )
        collection_file_queue(record)
    return record


def collection_export_run(*, collection_file_id: str) -> None:
    """The task's work: write the file, then keep it. Safe to run twice (a finished export is left alone)."""
    record = collection_file_pending(collection_file_id, CollectionFileKind.EXPORT)
    if record is None:
        return
    with collection_file_lease(record.pk) as taken:
        if taken:  # else a live worker runs it already
            _export_leased(record)


def _export_leased(record: CollectionFile) -> None:
    CollectionFile.objects.filter(pk=record.pk).update(status=CollectionFileStatus.RUNNING)
    try:
        # Progress on a connection of its own: the export reads in one READ ONLY transaction (_jobs.py).
        with (
            JobProgress(record) as progress,
            tempfile.TemporaryDirectory(dir=settings.KB_STAGING_DIR or None) as directory,
        ):
            progress(0, record.total, phase=CollectionFilePhase.WRITE)
            path = Path(directory) / "collection.db"
            written = collection_export(collection=record.collection, path=path, progress=progress)
            with path.open("rb") as file:
                stored = collection_file_store(File(file), tenant_id=record.tenant_id)
            size = path.stat().st_size
    except Exception as exc:
        logger.warning("export of collection file %s stopped: %s", record.pk, type(exc).__name__)
        CollectionFile.objects.filter(pk=record.pk).update(
            status=CollectionFileStatus.ERROR,
            phase="",
            error=f"the export stopped ({type(exc).__name__})",
            finished_at=timezone.now(),
        )
        return
    CollectionFile.objects.filter(pk=record.pk).update(
        status=CollectionFileStatus.DONE, phase="", done=written, total=written, stored=stored, size=size,
        finished_at=timezone.now(),
    )  # fmt: skip


def collection_file_remove(*, record: CollectionFile) -> None:
    """Forget an export (or a finished import) and its stored file."""
    stored = record.stored
    record.delete()
    if stored:
        transaction.on_commit(lambda: default_storage.delete(stored))
