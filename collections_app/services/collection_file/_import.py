"""Import: a new collection from a collection file, searchable only once all of it is in.

1. `collection_file_check` reads the whole file once, as untrusted input (_schema.py): every row of the
   collection it imports is checked (names, text, vectors against their dims, JSON) before anything is stored;
   the first problem is a BadCollectionFile (400) naming it.
2. `collection_import` creates the collection with the file's ranking settings (through collection_create, so a
   hostile setting is refused as any other), keeps the file under a storage name of its own, and queues the run.
3. `collection_import_run` (the task): when the file's model identity is one this installation serves, its vectors
   are used as they are; otherwise every paragraph is embedded again with the collection's model (the same
   breadcrumb an upload embeds), with progress, into a nameless staging file. Then one transaction reads the
   file once more, checking each row as it writes it (a bad one rolls everything back), and writes the
   paragraphs (COPY into a staging table, then moved with their keyword index in batches: each row written
   once, the keyword index filled in one pass at the end), the documents and the build record: a search sees
   nothing of the import until it sees all of it (contract 1).

Tables other apps register (collections_app/hooks.py: the golden questions) are checked with the file and
read back in the same transaction, linked to the new documents by their number in the file.

A file holding several agents' copies of one collection imports one copy (the first row's agent): which agents
reach the new collection is this tenant's admins' call. Parent sections are not in the format: a hierarchical
collection imports as its paragraphs.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import sqlite3
import tempfile
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings
from django.core.files import File
from django.core.files.storage import default_storage
from django.db import connection, transaction
from django.utils import timezone
from psycopg.types.json import Jsonb

from accounts.models import Tenant
from collections_app.hooks import collection_file_tables
from collections_app.models import (
    Chunk,
    ChunkPosition,
    Collection,
    CollectionFile,
    CollectionFileKind,
    CollectionFilePhase,
    CollectionFileStatus,
    Document,
    DocumentStatus,
)
from collections_app.selectors import breadcrumb_title
from collections_app.services.builds import build_record
from collections_app.services.collection_file._export import RANKING_SETTINGS
from collections_app.services.collection_file._jobs import (
    JobProgress,
    collection_file_lease,
    collection_file_pending,
    collection_file_queue,
    collection_file_store,
)
from collections_app.services.collection_file._schema import (
    MAX_DIMS,
    MAX_JSON_CHARS,
    MAX_NAME_CHARS,
    MAX_SECTION_PART_CHARS,
    MAX_SECTION_PARTS,
    MAX_TEXT_CHARS,
    SETTINGS_KEY,
    BadCollectionFile,
    check_json,
    check_name,
    check_text,
    check_vector,
    store_open,
    store_shape,
)
from collections_app.services.collections import (
    CollectionNameTaken,
    InvalidSettings,
    collection_create,
    collection_settings_check,
)
from collections_app.services.documents import upload_filename
from collections_app.services.keyword_index import keyword_index_deferred
from collections_app.sql import keyword_vector
from embedding import EmbeddingUnavailable, available_models, get_embedder, get_model, searchable_vectors
from infra.errors import DomainError
from ingestion import ChunkDraft

logger = logging.getLogger(__name__)

MAX_INT = 2**31 - 1
BATCH = 256


@dataclass
class FileDocument:
    name: str
    language: str = ""
    labels: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    paragraphs: int = 0
    digest: Any = field(default_factory=hashlib.sha256)
    given: str = ""  # the name as the file gives it, before its folders are taken off


@dataclass
class FileSummary:
    """What a checked file holds for the collection it imports."""

    collection: str
    agent: str | None
    paragraphs: int
    dims: int
    model: str | None  # None: no collection_built row (never built where it came from)
    built: dict[str, Any] | None
    settings: dict[str, Any]
    documents: dict[Any, FileDocument]


def collection_file_check(
    *,
    path: Path,
    source: str | None = None,
    progress: Callable[[int], None] | None = None,
    rows_up_to: int | None = None,
) -> FileSummary:
    """Check the whole file; the summary of collection `source` (or the file's only collection). `progress`:
    told the paragraphs checked so far, as they are (an import's task shows it). `rows_up_to`: check the rows only
    when there are at most this many, else only the file's shape, build record, settings and counts (the web
    request's check of a big file; its task checks every row)."""
    with _file_read(path, source, rows_up_to=rows_up_to) as checked:
        if checked.quick:
            checked.summary.paragraphs = checked.total
            return checked.summary
        for _ in checked.paragraphs():
            if progress is not None:
                progress(checked.summary.paragraphs)
        return checked.finished()


class _CheckedFile:
    """A collection file read once as untrusted input: `paragraphs()` yields each row of the collection it
    imports once it is checked (building the summary as it goes), `finished()` checks what only the whole file
    tells (not empty, document names distinct, other apps' tables). An import writes as it reads: a bad row
    found half-way rolls its transaction back, so the file is read once in the task, not checked then written.
    `quick`: more rows than `rows_up_to`, so its kb_documents are not read here (the summary has none)."""

    def __init__(self, store: sqlite3.Connection, source: str | None, rows_up_to: int | None) -> None:
        self._store = store
        self._shape = shape = store_shape(store)
        name, agent = _which(store, source)
        keyed = shape.has_documents and "document_seq" in shape.chunk_columns
        self.total, rows = _counts_check(store, name, agent, keyed=keyed)
        self.quick = rows_up_to is not None and rows > rows_up_to
        built = _built(store, shape.built_columns, name, agent)
        self.summary = FileSummary(
            collection=name,
            agent=agent,
            paragraphs=0,
            dims=built["dimensions"] if built else 0,
            model=built["model"] if built else None,
            built=built,
            settings=_file_settings(shape.meta),
            documents=_documents(store, name) if keyed and not self.quick else {},
        )

    def paragraphs(self) -> Iterator[tuple[Any, dict[str, Any]]]:
        """(the document's key in the file, the checked row) for every paragraph, in the file's order."""
        summary = self.summary
        keyed = bool(summary.documents)
        ordinals: dict[Any, set[int]] = {}
        for row in _rows(self._store, self._shape.chunk_columns, summary.collection, summary.agent):
            where = f"paragraph {row['id']}"
            key = row["document_seq"] if keyed else row["document"]
            document = summary.documents.get(key)
            if document is None:
                if keyed:
                    raise BadCollectionFile(f"{where} names document {key!r}, which kb_documents does not hold")
                if len(summary.documents) >= settings.KB_MAX_IMPORT_DOCUMENTS:
                    raise _too_many("documents", f"more than {settings.KB_MAX_IMPORT_DOCUMENTS}")
                document = summary.documents[key] = FileDocument(
                    _document_name(row["document"], f"{where}: the document name"), given=row["document"]
                )
            _check_row(row, where, summary)
            seen = ordinals.setdefault(key, set())
            if row["ordinal"] in seen:
                raise BadCollectionFile(f"{where}: ordinal {row['ordinal']} appears twice in {document.name}")
            seen.add(row["ordinal"])
            document.paragraphs += 1
            document.digest.update(row["text"].encode() + b"\x00")
            summary.paragraphs += 1
            yield key, row

    def finished(self) -> FileSummary:
        """The summary, once every paragraph was read: what only the whole file tells checked."""
        summary = self.summary
        if not summary.paragraphs:
            raise BadCollectionFile(f"the file holds no paragraph of {summary.collection}: an import would be empty")
        _names_distinct(summary.documents.values())
        for table in collection_file_tables():  # other apps' tables (golden questions): checked as untrusted too
            table.check(self._store, summary.collection)
        return summary


@contextmanager
def _file_read(path: Path, source: str | None, *, rows_up_to: int | None = None) -> Iterator[_CheckedFile]:
    size = path.stat().st_size
    if size > settings.KB_MAX_COLLECTION_FILE_BYTES:
        raise BadCollectionFile(
            f"the file is {size} bytes, over the limit of {settings.KB_MAX_COLLECTION_FILE_BYTES} bytes "
            "(KB_MAX_COLLECTION_FILE_BYTES)"
        )
    with store_open(path) as store:
        yield _CheckedFile(store, source, rows_up_to)


def _counts_check(store: sqlite3.Connection, name: str, agent: str | None, *, keyed: bool) -> tuple[int, int]:
    """The paragraphs of the collection to import, and the rows a check reads (its kb_documents when more), refused
    over the limits before a row is read: the check keeps a little of every document and paragraph in memory (a
    2 GiB file of one-word paragraphs holds 40 million)."""
    where = "WHERE collection = ? AND agent_id IS ?"
    total = int(store.execute(f"SELECT count(*) FROM agents_chunks {where}", (name, agent)).fetchone()[0])
    if total > settings.KB_MAX_IMPORT_PARAGRAPHS:
        raise _too_many("paragraphs", f"{total}")
    documents = 0
    if keyed:
        documents = store.execute("SELECT count(*) FROM kb_documents WHERE collection = ?", (name,)).fetchone()[0]
        if documents > settings.KB_MAX_IMPORT_DOCUMENTS:
            raise _too_many("documents", f"{documents}")
        # Each value is read whole by _documents: one over what its column may hold is refused by its length.
        over = store.execute(
            "SELECT seq FROM kb_documents WHERE collection = ? AND (length(CAST(filename AS BLOB)) > ? OR "
            "length(CAST(language AS BLOB)) > ? OR length(CAST(labels AS BLOB)) > ? OR "
            "length(CAST(metadata AS BLOB)) > ?) LIMIT 1",
            (name, _BYTES_AT_MOST["document"], _BYTES_AT_MOST["language"], *[_BYTES_AT_MOST["labels"]] * 2),
        ).fetchone()
        if over is not None:
            raise BadCollectionFile(f"document {over[0]}: its name, language, labels or metadata is too long")
    return total, max(total, documents)


def _too_many(what: str, count: str) -> BadCollectionFile:
    setting = "KB_MAX_IMPORT_PARAGRAPHS" if what == "paragraphs" else "KB_MAX_IMPORT_DOCUMENTS"
    return BadCollectionFile(
        f"the file holds {count} {what}, over this installation's limit of {getattr(settings, setting)} ({setting}):"
        " split the collection into several files, or ask the operator to raise it"
    )


def _names_distinct(documents: Iterable[FileDocument]) -> None:
    """Refuse two documents that would have one name here ("a/x.md" and "b/x.md" are both "x.md"): a collection
    holds one document per name (a later upload of x.md would find two), and renaming one would invent a name
    its editor never gave, so the editor who made the file chooses."""
    seen: dict[str, FileDocument] = {}
    for document in documents:
        other = seen.setdefault(document.name, document)
        if other is not document:
            raise BadCollectionFile(
                f"documents {other.given[:100]!r} and {document.given[:100]!r} would both be named "
                f"{document.name!r} here (a name keeps no folders): rename one of them in the file"
            )


def _which(store: sqlite3.Connection, source: str | None) -> tuple[str, str | None]:
    # Every name is read (each is checked, and counted: a file of 60 collections holds 60), but only the first
    # few are kept for the message; `source` is looked up by binding it, however many there are.
    count, names = 0, list[str]()
    for (found,) in store.execute("SELECT DISTINCT collection FROM agents_chunks ORDER BY 1"):
        check_name(found, "a collection name in the file", max_chars=MAX_NAME_CHARS["collection"])
        count += 1
        if len(names) < 10:
            names.append(found)
    if source is not None:
        if store.execute("SELECT 1 FROM agents_chunks WHERE collection = ? LIMIT 1", (source,)).fetchone() is None:
            raise BadCollectionFile(f"the file holds no collection named {source!r}")
        name = source
    elif count == 1:
        name = names[0]
    elif not count:
        raise BadCollectionFile("the file holds no paragraph (agents_chunks is empty)")
    else:
        raise BadCollectionFile(
            f"the file holds {count} collections; name the one to import in `source`: "
            + ", ".join(names)
            + (", ..." if count > len(names) else "")
        )
    first = store.execute("SELECT agent_id FROM agents_chunks WHERE collection = ? ORDER BY id LIMIT 1", (name,))
    agent = first.fetchone()[0]
    if agent is not None:
        check_name(agent, "agent_id", max_chars=MAX_NAME_CHARS["agent_id"])
    return name, agent


def _built(store: sqlite3.Connection, columns: set[str], name: str, agent: str | None) -> dict[str, Any] | None:
    # `refused` is added when a store is opened, not part of the schema version: an older file may lack it (null).
    refused = "refused" if "refused" in columns else "NULL"
    row = store.execute(
        f"""SELECT model, dimensions, method, built_from, passages, built_at, {refused} FROM collection_built
            WHERE collection = ? AND agent_id IS ? LIMIT 1""",
        (name, agent),
    ).fetchone()
    if row is None:
        return None
    model, dims, method, built_from, passages, built_at, refused_json = row
    check_name(model, "collection_built.model", max_chars=200)
    if isinstance(dims, bool) or not isinstance(dims, int) or not 1 <= dims <= 16_000:
        raise BadCollectionFile("collection_built.dimensions must be a whole number from 1 to 16000")
    if not isinstance(built_from, str):
        raise BadCollectionFile("collection_built.built_from must be text")
    check_text(built_from, "collection_built.built_from", paragraph=False)
    refused_names = None
    if refused_json is not None:
        refused_names = check_json(refused_json, "collection_built.refused", kind=list)
        for item in refused_names:
            check_name(item, "a name in collection_built.refused", max_chars=500, control=False)
    try:
        at = dt.datetime.fromisoformat(built_at) if isinstance(built_at, str) else None
    except ValueError:
        at = None
    if at is None:
        raise BadCollectionFile("collection_built.built_at must be an ISO 8601 date and time")
    return {
        "model": model,
        "dimensions": dims,
        "method": check_json(method, "collection_built.method", kind=dict),
        "built_from": built_from,
        "passages": passages,
        "built_at": at.isoformat(),
        "refused": refused_names,
    }


def _file_settings(meta: dict[str, str]) -> dict[str, Any]:
    raw = meta.get(SETTINGS_KEY)
    if raw is None:
        return {}
    values = check_json(raw, f"store_meta {SETTINGS_KEY}", kind=dict)
    # Only the settings an export writes, each checked here as the API checks an editor's (collection_create
    # checks them again with the pairs). The model is not: one not served here means embedding again (_import).
    values = {k: v for k, v in values.items() if k in (*RANKING_SETTINGS, "description")}
    try:
        collection_settings_check({k: v for k, v in values.items() if k != "embedding_alias"})
    except InvalidSettings as exc:
        raise BadCollectionFile(f"store_meta {SETTINGS_KEY}: {exc}") from None
    return values


def _documents(store: sqlite3.Connection, name: str) -> dict[Any, FileDocument]:
    found: dict[Any, FileDocument] = {}
    for seq, filename, language, labels, metadata in store.execute(
        "SELECT seq, filename, language, labels, metadata FROM kb_documents WHERE collection = ? ORDER BY seq", (name,)
    ):
        where = f"document {seq}"
        found[seq] = FileDocument(
            name=_document_name(filename, f"{where}: its name"),
            given=filename,
            language=check_name(language, f"{where}: its language", max_chars=MAX_NAME_CHARS["language"], blank=True),
            labels=[
                check_name(label, f"{where}: a label", max_chars=MAX_NAME_CHARS["label"])
                for label in check_json(labels, f"{where}: its labels", kind=list)
            ],
            metadata=check_json(metadata, f"{where}: its metadata", kind=dict),
        )
    return found


def _document_name(value: object, what: str) -> str:
    """A document's name as an upload would show it: its last path part ("../../etc/passwd" is "passwd"), its
    unprintable characters taken out as Django takes them out of an uploaded file's name."""
    name = upload_filename(check_name(value, what, max_chars=MAX_NAME_CHARS["document"], control=False))
    if not name.strip(" ."):
        raise BadCollectionFile(f"{what} is no file name once its folders are taken off")
    return name


_COLUMNS = (
    "id", "document", "ordinal", "text", "vector", "dims", "language", "page", "section", "metadata", "labels",
    "continues", "document_seq",
)  # fmt: skip


# The most bytes each column's value may hold (4 a character, UTF-8's and UTF-16's widest): a value over it is
# refused by its length, never read (a batch of 256 rows of a 2 GiB file's huge texts took the web worker 2.5 GB).
# Under it, the value is read and checked as before (its characters counted exactly).
_BYTES_AT_MOST = {
    "document": 4 * MAX_NAME_CHARS["document"],
    "text": 4 * MAX_TEXT_CHARS,
    "vector": 4 * MAX_DIMS,
    "language": 4 * MAX_NAME_CHARS["language"],
    "section": 4 * MAX_JSON_CHARS,
    "metadata": 4 * MAX_JSON_CHARS,
    "labels": 4 * MAX_JSON_CHARS,
}


def _column(column: str, columns: set[str]) -> str:
    if column not in columns and column != "id":
        return f"NULL AS {column}"
    bound = _BYTES_AT_MOST.get(column)
    if bound is None:
        return column
    # length() of a blob counts bytes, NULs included (substr() and length() of a text stop at a NUL).
    return f"CASE WHEN length(CAST({column} AS BLOB)) > {bound} THEN NULL ELSE {column} END AS {column}"


def _over(columns: set[str]) -> str:
    """The first column whose value is over its bound, by name (NULL: none), as one more selected value."""
    tests = [
        f"WHEN length(CAST({column} AS BLOB)) > {bound} THEN '{column}'"
        for column, bound in _BYTES_AT_MOST.items()
        if column in columns
    ]
    return f"CASE {' '.join(tests)} END" if tests else "NULL"


def _rows(store: sqlite3.Connection, columns: set[str], name: str, agent: str | None) -> Iterator[dict[str, Any]]:
    # Optional columns a file from elsewhere may lack read as NULL; every name here is ours, never the file's.
    selected = ", ".join(_column(c, columns) for c in _COLUMNS)
    cursor = store.execute(
        f"SELECT {selected}, {_over(columns)} FROM agents_chunks WHERE collection = ? AND agent_id IS ? ORDER BY id",
        (name, agent),
    )
    while rows := cursor.fetchmany(BATCH):
        for *row, over in rows:
            if over is not None:
                raise BadCollectionFile(
                    f"paragraph {row[0]}: its {over} is too long (over {_BYTES_AT_MOST[over]} bytes)"
                    + (f": a paragraph holds at most {MAX_TEXT_CHARS} characters" if over == "text" else "")
                )
            yield dict(zip(_COLUMNS, row, strict=True))


def _check_row(row: dict[str, Any], where: str, summary: FileSummary) -> None:
    ordinal = row["ordinal"]
    if isinstance(ordinal, bool) or not isinstance(ordinal, int) or not 0 <= ordinal <= MAX_INT:
        raise BadCollectionFile(f"{where}: ordinal must be a whole number from 0")
    check_text(row["text"], where)
    row["vector"] = check_vector(row["vector"], row["dims"] if row["dims"] is not None else summary.dims, where)
    dims = len(row["vector"])
    if summary.dims and dims != summary.dims:
        raise BadCollectionFile(f"{where}: its vector has {dims} dimensions, the build record says {summary.dims}")
    summary.dims = dims
    row["language"] = check_name(
        row["language"] or "", f"{where}: its language", max_chars=MAX_NAME_CHARS["language"], blank=True
    )
    page = row["page"]
    if page is not None and (isinstance(page, bool) or not isinstance(page, int) or not 0 <= page <= MAX_INT):
        raise BadCollectionFile(f"{where}: page must be empty or a whole number from 0")
    section = check_json(row["section"], f"{where}: its section", kind=list)
    if len(section) > MAX_SECTION_PARTS:
        raise BadCollectionFile(f"{where}: its section trail is deeper than {MAX_SECTION_PARTS} headings")
    for part in section:
        if not isinstance(part, str) or len(part) > MAX_SECTION_PART_CHARS:
            raise BadCollectionFile(f"{where}: a heading of its section is not text of at most 2000 characters")
    row["section"] = section
    row["metadata"] = check_json(row["metadata"], f"{where}: its metadata", kind=dict)
    row["labels"] = [
        check_name(label, f"{where}: a label", max_chars=MAX_NAME_CHARS["label"])
        for label in check_json(row["labels"], f"{where}: its labels", kind=list)
    ]
    if row["continues"] not in (None, 0, 1):
        raise BadCollectionFile(f"{where}: continues must be empty, 0 or 1")


def served_alias_for(model: str | None, dims: int, preferred: str | None) -> str | None:
    """The alias of a model this installation serves whose identity is `model` (and width `dims`), or None."""
    if model is None:
        return None
    aliases = sorted(available_models())
    if preferred in aliases:
        aliases.remove(preferred)
        aliases.insert(0, preferred)
    for alias in aliases:
        try:
            served = get_model(alias)
            if served.dims not in (0, dims):
                continue
            if get_embedder(alias).model_identity() == model:
                return alias
        except EmbeddingUnavailable:
            continue
    return None


def collection_import(
    *, tenant: Tenant, name: str, content: File, created_by: str = "", source: str | None = None
) -> CollectionFile:
    """Check the file, create the collection `name` and queue the import; the collection answers once it is done."""
    if content.size is not None and content.size > settings.KB_MAX_COLLECTION_FILE_BYTES:
        raise BadCollectionFile(
            f"the file is {content.size} bytes, over the limit of {settings.KB_MAX_COLLECTION_FILE_BYTES} bytes "
            "(KB_MAX_COLLECTION_FILE_BYTES)"
        )
    collection_settings_check({"name": name})  # before the file is read: a bad name costs nothing
    if Collection.objects.filter(tenant=tenant, name=name).exists():
        raise CollectionNameTaken(f"a collection named {name!r} already exists")
    with _local_path(content) as path:
        return _import(tenant=tenant, name=name, path=path, created_by=created_by, source=source)


@contextmanager
def _local_path(content: File) -> Iterator[Path]:
    """SQLite reads a file by its name: an upload kept on disk already is read there, any other is copied once."""
    temporary = getattr(content, "temporary_file_path", None)
    if temporary is not None:
        yield Path(temporary())
        return
    with tempfile.TemporaryDirectory(dir=settings.KB_STAGING_DIR or None) as directory:
        path = Path(directory) / "upload.db"
        with path.open("wb") as out:
            for part in content.chunks():
                out.write(part)
        yield path


def _import(*, tenant: Tenant, name: str, path: Path, created_by: str, source: str | None) -> CollectionFile:
    # A big file's rows are checked by the task, with progress: never the web request held for minutes.
    summary = collection_file_check(path=path, source=source, rows_up_to=settings.KB_IMPORT_ROWS_CHECKED_IN_REQUEST)
    values = dict(summary.settings)
    wanted = values.pop("embedding_alias", None)
    alias = served_alias_for(summary.model, summary.dims, wanted)
    if alias is None:
        # Embedded again: with the model the file names when it is offered here at another width, else the default.
        alias = wanted if wanted in available_models() else None
    if alias is not None:
        values["embedding_alias"] = alias
    if not values.get("description") and summary.built:
        values["description"] = summary.built["built_from"]
    with path.open("rb") as file:
        stored = collection_file_store(File(file), tenant_id=tenant.pk)
    try:
        with transaction.atomic():
            collection = collection_create(tenant=tenant, name=name, **values)
            record = CollectionFile.objects.create(
                tenant=tenant,
                collection=collection,
                kind=CollectionFileKind.IMPORT,
                total=summary.paragraphs,
                stored=stored,
                source=source or "",
                size=path.stat().st_size,
                created_by=created_by,
            )
            collection_file_queue(record)
    except BaseException:
        default_storage.delete(stored)
        raise
    return record


def collection_import_run(*, collection_file_id: str) -> None:
    """The task's work. Safe to run twice: a finished import is left alone, and the write is one transaction."""
    record = collection_file_pending(collection_file_id, CollectionFileKind.IMPORT)
    if record is None:
        return
    with collection_file_lease(record.pk) as taken:
        if taken:  # else a live worker runs it already
            _run_leased(record)


def _run_leased(record: CollectionFile) -> None:
    unfinished = CollectionFile.objects.filter(pk=record.pk).exclude(status=CollectionFileStatus.DONE)
    unfinished.update(status=CollectionFileStatus.RUNNING)
    try:
        with JobProgress(record) as progress:
            _run(record, progress)
    except Exception as exc:
        # A domain error says what is wrong for a person; anything else is named by its kind only (an OS error
        # can carry a path).
        reason = str(exc) if isinstance(exc, DomainError) else f"the import stopped ({type(exc).__name__})"
        logger.warning("import of collection file %s stopped: %s", record.pk, type(exc).__name__)
        # A second delivery of the task that lost the race never marks a finished import as failed.
        unfinished.update(status=CollectionFileStatus.ERROR, phase="", error=reason[:500], finished_at=timezone.now())
    finally:
        if record.stored:
            default_storage.delete(record.stored)
            CollectionFile.objects.filter(pk=record.pk).update(stored="")


def _run(record: CollectionFile, progress: JobProgress) -> None:
    collection = record.collection
    path = Path(default_storage.path(record.stored))
    source = record.source or None
    model = get_model(collection.embedding_alias)
    embedder = get_embedder(collection.embedding_alias)
    identity = embedder.model_identity()
    directory = settings.KB_STAGING_DIR or None
    with tempfile.TemporaryFile(dir=directory) as vectors, _file_read(path, source) as checked:
        head = checked.summary  # the build record and the documents: what the rows are read with
        same = head.model is not None and head.model == identity and head.dims == (model.dims or head.dims)
        dims = head.dims
        if not same:
            progress(0, record.total, phase=CollectionFilePhase.CHECK)
            summary = collection_file_check(path=path, source=source, progress=progress)
            dims = _embed_again(path, source, summary, embedder, vectors, progress)
        with transaction.atomic():
            # The collection's lock serializes two deliveries of this task; the record is read after it, not
            # locked, so the progress of this transaction's steps can be written to it meanwhile (JobProgress).
            locked = Collection.objects.select_for_update().filter(pk=collection.pk).first()
            current = CollectionFile.objects.filter(pk=record.pk).first()
            if locked is None or current is None or current.status == CollectionFileStatus.DONE:
                return  # deleted meanwhile, or another run finished it
            progress(0, record.total, phase=CollectionFilePhase.WRITE)
            # Checked again as it is written, in one read: a bad row rolls all of this back.
            ids, published = _write_paragraphs(
                locked, checked, vectors if not same else None, dims, record.total, progress
            )
            summary = checked.finished()
            _write_documents(locked, summary, ids)
            with keyword_index_deferred(locked.pk):
                _index(locked, summary, ids, progress)
            built = summary.built or {}
            warnings = []
            with store_open(path) as store:
                for table in collection_file_tables():  # the golden questions, linked to the new documents
                    warnings += table.read(locked, store, summary.collection, ids)
            if not same:
                warnings.append(
                    f"embedded again with {identity}: the file was built with {summary.model or 'an unnamed model'}"
                )
            build_record(
                collection=locked,
                document=None,
                model=identity,
                alias=model.alias,
                dims=dims,
                passages=published,
                refused=built.get("refused"),
                built_from=f"collection file: {built.get('built_from') or summary.collection}"[:300],
                warnings=warnings,
                method_extra={
                    "imported": {
                        "model": summary.model,
                        "built_at": built.get("built_at"),
                        "method": built.get("method"),
                        "re_embedded": not same,
                    }
                },
            )
            CollectionFile.objects.filter(pk=record.pk).update(
                status=CollectionFileStatus.DONE,
                phase="",
                done=published,
                re_embedded=not same,
                error="",
                finished_at=timezone.now(),
            )


def _embed_again(
    path: Path, source: str | None, summary: FileSummary, embedder: Any, out: Any, progress: JobProgress
) -> int:
    """Every paragraph embedded with the collection's model, as an upload embeds it (its breadcrumb); float32
    vectors appended to `out`. Returns their width."""
    titles = {
        key: breadcrumb_title(Document(filename=doc.name, metadata=doc.metadata)).text
        for key, doc in summary.documents.items()
    }
    done = 0
    dims = 0
    batch: list[str] = []

    def flush() -> None:
        nonlocal dims, done
        if not batch:
            return
        matrix = np.asarray(searchable_vectors(embedder.embed_passages(batch)), dtype="<f4")
        dims = matrix.shape[1]
        out.write(matrix.tobytes())
        done += len(batch)
        batch.clear()
        progress(done, summary.paragraphs, phase=CollectionFilePhase.EMBED)

    with _file_read(path, source) as checked:
        for key, row in checked.paragraphs():
            draft = ChunkDraft(text=row["text"], section=row["section"], page=row["page"])
            batch.append(draft.embedding_text(titles[key]))
            if len(batch) == settings.KB_EMBED_BATCH:
                flush()
    flush()
    out.seek(0)
    return dims


def _write_documents(collection: Collection, summary: FileSummary, ids: dict[Any, uuid.UUID]) -> None:
    """The documents holding paragraphs, under the ids their paragraphs were written with (`ids`)."""
    documents = [
        Document(
            pk=ids[key],
            tenant_id=collection.tenant_id,
            collection=collection,
            content_hash=doc.digest.hexdigest(),
            filename=doc.name,
            source_uri=f"upload://{doc.name}",
            file="",
            status=DocumentStatus.DONE,
            progress=100,
            language=doc.language,
            language_detected=doc.language or None,
            labels=doc.labels,
            metadata=doc.metadata,
            uploaded_by="collection file",
        )
        for key, doc in summary.documents.items()
        if doc.paragraphs
    ]
    # Two documents of one file with the same paragraphs would share a content hash: the second is told apart.
    seen: set[str] = set()
    for document in documents:
        while document.content_hash in seen:
            document.content_hash = hashlib.sha256(document.content_hash.encode()).hexdigest()
        seen.add(document.content_hash)
    Document.objects.bulk_create(documents)


_CHUNK_COLUMNS = (
    "id", "tenant_id", "collection_id", "document_id", "text", "section", "page", "language", "labels",
    "metadata", "embedding", "embedding_dims", "kind", "generation", "language_detected", "continues", "hidden",
    "edited",
)  # fmt: skip
# The staging table's: the paragraph's columns and its place (moved into ChunkPosition beside the row).
_STAGING_COLUMNS = (*_CHUNK_COLUMNS, "ordinal")


def _write_paragraphs(
    collection: Collection, checked: _CheckedFile, vectors: Any, dims: int, total: int, progress: JobProgress
) -> tuple[dict[Any, uuid.UUID], int]:
    """Every paragraph COPYed into STAGING, a temporary table of the transaction: no index, no trigger, no WAL.
    `_index` moves them into the paragraphs' table with their keyword index, so each row is written there once.
    Returns each document's id (by its key in the file; its row is written after, from the whole file's summary)
    and the paragraphs written."""
    ids: dict[Any, uuid.UUID] = {}
    published = 0
    # One %-format for the whole vector: a float32 printed in 9 significant digits reads back as itself, and
    # one C-level format is ~3 times faster than a repr per value (1 million paragraphs: ~2 minutes).
    as_text = "[" + ",".join(["%.9g"] * dims) + "]"
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {STAGING}")  # an earlier import in this transaction (tests)
        cursor.execute(
            f"CREATE TEMPORARY TABLE {STAGING} ON COMMIT DROP AS SELECT {', '.join(_CHUNK_COLUMNS)}, "
            f"NULL::integer AS ordinal FROM {Chunk._meta.db_table} WITH NO DATA"
        )
        with cursor.cursor.copy(f"COPY {STAGING} ({', '.join(_STAGING_COLUMNS)}) FROM STDIN") as copy:
            for key, row in checked.paragraphs():
                vector = row["vector"] if vectors is None else np.frombuffer(vectors.read(dims * 4), dtype="<f4")
                document_id = ids.get(key)
                if document_id is None:
                    document_id = ids[key] = uuid.uuid4()
                copy.write_row(
                    (
                        uuid.uuid4(), collection.tenant_id, collection.pk, document_id, row["text"],
                        row["section"], row["page"], row["language"], row["labels"], Jsonb(row["metadata"]),
                        as_text % tuple(vector.tolist()), dims, "paragraph",
                        collection.active_generation, row["language"] or None,
                        None if row["continues"] is None else bool(row["continues"]),
                        False, False,  # an exported paragraph is a served one: never hidden; its edits stay behind
                        row["ordinal"],
                    )
                )  # fmt: skip
                published += 1
                progress(published, total)
        # Each batch below reads its documents' rows through this index, as the blocks fill reads them.
        cursor.execute(f"CREATE INDEX ON {STAGING} (document_id, ordinal)")
        cursor.execute(f"ANALYZE {STAGING}")
    return ids, published


# The import's staging table (temporary: this session's, gone at commit).
STAGING = "kb_import_staging"
# Paragraphs indexed between two progress beats: the keyword index is most of an import's time.
INDEX_BATCH = 1000


def _index(collection: Collection, summary: FileSummary, ids: dict[Any, uuid.UUID], progress: JobProgress) -> None:
    """The paragraphs moved from the staging table into the paragraphs' table with their keyword index (the
    statistics and blocks made in one pass after the last batch: services/keyword_index.py), and each
    document's stored parser output made of its paragraphs, so a later re-chunk or re-index has something to read.

    Documents at a time, about INDEX_BATCH paragraphs, with progress between: one statement for the whole
    collection showed nothing for minutes. Each row is written once, with its keyword index: COPYing it
    without and UPDATEing it after wrote every row twice (a second tuple, its HNSW and GIN entries again):
    bench/import_progress.py's 20,000 paragraphs took 87.0 s that way, 78.3 s this way (docs/DECISIONS.md)."""
    progress(0, summary.paragraphs, phase=CollectionFilePhase.INDEX)
    indexed = 0
    batch: list[uuid.UUID] = []
    size = 0
    for key, document_id in ids.items():
        batch.append(document_id)
        size += summary.documents[key].paragraphs
        if size >= INDEX_BATCH:
            _index_documents(batch)
            indexed += size
            progress(indexed, summary.paragraphs)
            batch, size = [], 0
    if batch:
        _index_documents(batch)
        progress(indexed + size, summary.paragraphs)
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE {STAGING}")


def _index_documents(documents: list[uuid.UUID]) -> None:
    table = Chunk._meta.db_table
    columns = ", ".join(_CHUNK_COLUMNS)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} ({columns}, search_vector) SELECT {columns}, {keyword_vector()} "
            f"FROM {STAGING} WHERE document_id = ANY(%s)",
            [documents],
        )
        # Their places, beside them (the deferred foreign key is checked at commit).
        cursor.execute(
            f"INSERT INTO {ChunkPosition._meta.db_table} (chunk_id, document_id, generation, ordinal) "
            # The file's ordinals give the order only: each document's places are numbered 0..n-1, so a file
            # with gaps (hand-made, or up to 2147483647) still stitches windows and leaves room for a split's shift.
            f"SELECT id, document_id, generation, "
            f"row_number() OVER (PARTITION BY document_id, generation ORDER BY ordinal) - 1 "
            f"FROM {STAGING} WHERE document_id = ANY(%s)",
            [documents],
        )
        # Each document's own rows, through the staging table's (document, ordinal) index: linear. A join with
        # the collection's rows grouped by document (planned on statistics that know nothing of this
        # transaction's rows) took over 5 minutes at 20,000 paragraphs once the tables had statistics.
        cursor.execute(
            f"""
            UPDATE {Document._meta.db_table} d SET blocks = (
                SELECT jsonb_agg(jsonb_build_object(
                    'text', c.text, 'kind', 'paragraph', 'page', c.page, 'section', to_jsonb(c.section),
                    'language', c.language, 'metadata', c.metadata) ORDER BY c.ordinal)
                FROM {STAGING} c WHERE c.document_id = d.id
            )
            WHERE d.id = ANY(%s)
            """,
            [documents],
        )
