"""Re-chunking and re-indexing: new settings applied to documents already read, never re-parsing them.

- `document_rechunk`: one document, the collection's current settings, its stored parser output; the new
  paragraphs replace the old in one transaction (the ordinary ingestion's publish, which reads stored blocks).
- `collection_mark_stale`: a chunking field or the embedding model changed: every document is `stale`.
- `collection_reindex` / `collection_reindex_run`: every document of the collection rebuilt into the next
  *generation* beside the one searches read (`Collection.active_generation`, see
  retrieval/selectors/search/_visibility.py), then one transaction switches the whole collection over
  (`collection_cutover`). Until then searches answer from the old paragraphs and the old model
  (`Collection.served_alias`). A run that fails half way leaves what it built staged; asked again it resumes with
  the documents not built yet.

Each paragraph whose embedding text is unchanged takes the vector of the row it matches in the generation searches
read (same model: services/documents/_reuse.py); only the others are embedded. The build record says how many of
each (`method.embedded`, `method.reused`).

Staged rows carry no keyword index (search_vector is NULL) until the cutover fills it in: the BM25
statistics (kept by triggers on indexed rows) stay those of the generation searches read.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import connection, transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from collections_app.models import Build, Chunk, ChunkPosition, Collection, Document, DocumentStatus
from collections_app.services import documents as ingestion
from collections_app.services.builds import build_record
from collections_app.services.gate import GateVerdict, HeldBack, gate_candidate, gate_serving
from collections_app.services.labels import document_labels_for_publish
from collections_app.services.languages import document_language_for_publish
from collections_app.sql import keyword_vector
from embedding import get_embedder, get_model
from infra.errors import Conflict, Invalid
from infra.queueing import task_name_shown, task_queue_on_commit
from ingestion.blocks import Block

logger = logging.getLogger(__name__)

# Changing any of these changes what a build would store: documents built before are stale.
CHUNKING_FIELDS = ("chunk_strategy", "chunk_size", "chunk_size_unit", "chunk_overlap", "parent_size")
REBUILD_FIELDS = (*CHUNKING_FIELDS, "embedding_alias")


class NotRechunkable(Conflict):
    """The document cannot be cut again from what is stored (being read, or its reading failed)."""


class ReindexRefused(Invalid):
    """A re-index would leave the collection with nothing to answer from."""


class ReindexSuperseded(Conflict):
    """The generation this run builds is no longer the one waiting (cut over by another run, or dropped)."""


def document_rechunk(*, document: Document) -> Document:
    """Queue the document's re-chunk with the collection's current settings, from its stored parser output.

    The ingestion task reads `Document.blocks` when they are stored (never the parser); a large text file
    read as a stream has no stored blocks, and is its own parser output (re-read as text, not parsed).
    Its paragraphs stay searchable until the new set replaces them in one transaction.
    """
    if document.status in (DocumentStatus.PARSING, DocumentStatus.QUEUED):
        raise NotRechunkable(f"{document.filename} is being read; re-chunk it once it is done")
    # Asked of the database: the document a view hands over has its parser output deferred (megabytes).
    stored = Document.objects.filter(pk=document.pk, blocks__isnull=False).exists()
    if not stored and not ingestion.document_streams(document):
        raise NotRechunkable(
            f"{document.filename} has no stored parser output (its reading failed); upload it again to read it"
        )
    with transaction.atomic():
        ingestion.document_queue_ingest(document=document, reingest=True)
    return document


def collection_mark_stale(*, collection: Collection, changed: list[str]) -> int:
    """Mark every document stale when `changed` names a field that changes what a build stores. Returns how many.

    What a re-index had staged was built with the old settings: it is dropped (never published).
    """
    if not set(changed) & set(REBUILD_FIELDS):
        return 0
    with transaction.atomic():
        locked = Collection.objects.select_for_update().get(pk=collection.pk)
        if locked.reindex_generation is not None:
            Chunk.objects.filter(collection=locked, generation=locked.reindex_generation).delete()
            Collection.objects.filter(pk=locked.pk).update(reindex_done=0, reindex_embedded=0, reindex_reused=0)
        return Document.all_objects.filter(collection=collection).exclude(stale=True).update(stale=True)


def collection_reindex(*, collection: Collection) -> Collection:
    """Start (or resume) rebuilding every document into the next generation; queued once this commits."""

    with transaction.atomic():
        locked = Collection.objects.select_for_update().get(pk=collection.pk)
        if locked.reindex_generation is None:
            locked.reindex_generation = locked.active_generation + 1
            locked.reindex_embedded = locked.reindex_reused = 0
            # Nothing of an abandoned generation of that number may be taken for this run's work.
            Chunk.objects.filter(collection=locked, generation=locked.reindex_generation).delete()
        locked.reindex_total = _rebuilt(locked).count()
        locked.reindex_done = _staged_documents(locked).count()
        locked.reindex_error = ""
        locked.save(
            update_fields=["reindex_generation", "reindex_total", "reindex_done", "reindex_error", "reindex_embedded",
                           "reindex_reused", "updated_at"]
        )  # fmt: skip
        collection_id = str(locked.pk)
        task_queue_on_commit(
            "collections_app.tasks.reindex_collection",
            collection_id,
            task_name=task_name_shown(locked.name, f"reindex collection {collection_id}"),
            group="reindex",
        )
    return locked


def _rebuilt(collection: Collection) -> QuerySet[Document]:
    # Documents whose reading succeeded: the others have no paragraphs to replace. Those in the trash too: the
    # cutover drops every row of the old generation, and a restore brings a document back whole.
    return Document.all_objects.filter(collection=collection, status=DocumentStatus.DONE).order_by("created_at", "id")


def _staged_documents(collection: Collection) -> QuerySet[Document]:
    staged = Chunk.objects.filter(collection=collection, generation=collection.reindex_generation or 0)
    return _rebuilt(collection).filter(pk__in=staged.values("document_id"))


def collection_reindex_run(*, collection_id: str) -> None:
    """The task's work: stage each document not staged yet, then cut over. Safe to run twice."""
    collection = Collection.objects.filter(pk=collection_id).first()
    if collection is None or collection.reindex_generation is None:
        return  # deleted, or already cut over
    generation = collection.reindex_generation
    staged = set(_staged_documents(collection).values_list("pk", flat=True))
    try:
        # Ids first, each document read when its turn comes: a document's parser output (`blocks`) is held in
        # memory while it is staged, not every document's for the whole run (a queryset keeps all it fetched).
        for document_id in _rebuilt(collection).values_list("pk", flat=True):
            if document_id in staged:
                continue
            document = Document.all_objects.select_related("collection").filter(pk=document_id).first()
            if document is None:
                continue  # deleted since the run started: nothing to rebuild
            document_stage(document=document, generation=generation)
            Collection.objects.filter(pk=collection.pk).update(reindex_done=F("reindex_done") + 1)
        collection_cutover(collection=collection, generation=generation)
    except HeldBack:
        return  # recorded by the cutover: the collection keeps answering as before, the new generation staged
    except ReindexSuperseded:
        return  # another run cut over, or the settings changed and dropped this generation: nothing to record
    except Exception as exc:
        # What was staged stays for the resume; searches never saw it.
        logger.exception("re-index of collection %s stopped", collection.pk)
        Collection.objects.filter(pk=collection.pk).update(
            reindex_error=f"stopped ({type(exc).__name__}): {exc}"[:500], updated_at=timezone.now()
        )


def document_stage(*, document: Document, generation: int, vectors_from: Document | None = None) -> int:
    """Cut and embed one document with the collection's current settings into `generation`, unpublished.

    Reads the stored parser output (or, for a large text file, the file itself as a stream); never parses.
    A paragraph whose embedding text is that of a row of `vectors_from` (default: the document itself) in the
    generation its collection serves, embedded by this collection's model, takes that row's vector.
    One transaction per document, so a run stopped half way keeps every document it finished.
    """
    collection = document.collection
    with ingestion.Staging() as staging:
        if ingestion.document_streams(document):
            ingestion.document_stage_stream(document, collection, staging)
        elif document.blocks is None:
            raise NotRechunkable(f"{document.filename} has no stored parser output; upload it again to read it")
        else:
            blocks = [Block.from_json(b) for b in document.blocks]
            staging.add_all(ingestion.document_chunk(document, collection, blocks))
        stored = vectors_from or document
        source = ingestion.vector_source(
            collection=Collection.objects.get(pk=stored.collection_id), alias=collection.embedding_alias
        )
        reuse = source.for_document(stored) if source is not None else None
        vectors = ingestion.document_embed(document, collection, staging, reuse=reuse)
        with transaction.atomic():
            # Two runs of one collection may overlap (asked twice): rows are only ever written into the
            # generation still waiting, never into one a cutover has made live (it would lack its keyword index).
            waiting = Collection.objects.select_for_update().filter(pk=collection.pk)
            if waiting.values_list("reindex_generation", flat=True).first() != generation:
                raise ReindexSuperseded(f"generation {generation} of {collection.name} is no longer waiting")
            pinned = document_language_for_publish(document)  # locks the document before its rows
            Chunk.objects.filter(document=document, generation=generation).delete()
            written = ingestion.document_rows_write(
                document=document,
                staging=staging,
                generation=generation,
                labels=document_labels_for_publish(document),
                language=pinned,
            )
            # What detection said for the document this time (its language stays as it was until the cutover).
            Document.objects.filter(pk=document.pk).update(progress=100, language_detected=document.language)
            waiting.update(
                reindex_embedded=F("reindex_embedded") + vectors.embedded,
                reindex_reused=F("reindex_reused") + vectors.reused,
            )
    return written


def collection_cutover(*, collection: Collection, generation: int, anyway_by: str = "") -> None:
    """Switch the whole collection to `generation` in one transaction: a search sees all old or all new.

    With the golden gate on (services/gate.py), the golden questions are evaluated on both generations inside
    this transaction; a worse new one is rolled back (HeldBack: recorded, still staged). `anyway_by`: an admin
    cutting over a held-back generation, named in the build record."""
    try:
        _cutover(collection=collection, generation=generation, anyway_by=anyway_by)
    except HeldBack as held:
        # The transaction rolled back: searches never saw the new generation. It stays staged for "cut over
        # anyway"; the build records both evaluations and the reason.
        Collection.objects.filter(pk=collection.pk).update(reindex_error=str(held)[:500], updated_at=timezone.now())
        _build_record(Collection.objects.get(pk=collection.pk), passages=0, verdict=held.verdict,
                      built_from="re-index (held back by the golden gate)")  # fmt: skip
        raise


def _cutover(*, collection: Collection, generation: int, anyway_by: str) -> GateVerdict | None:
    table = Chunk._meta.db_table
    with transaction.atomic():
        locked = Collection.objects.select_for_update().get(pk=collection.pk)
        if locked.reindex_generation != generation:
            return None  # settings changed meanwhile (staging dropped) or another run cut over
        serving = gate_serving(locked) if not anyway_by else GateVerdict(False, _held_record(locked, generation))
        old = locked.active_generation
        with connection.cursor() as cursor:
            # Documents an ordinary ingestion published during the run were built with the current settings
            # (it clears `stale`): carried over as they are, their places (ChunkPosition) with them.
            cursor.execute(
                f"""
                WITH carried AS (
                    UPDATE {table} c SET generation = %(new)s
                    WHERE c.collection_id = %(collection)s AND c.generation = %(old)s
                      AND c.document_id IN (SELECT id FROM collections_app_document d
                                            WHERE d.collection_id = %(collection)s AND NOT d.stale)
                      AND NOT EXISTS (SELECT 1 FROM {table} n
                                      WHERE n.document_id = c.document_id AND n.generation = %(new)s)
                    RETURNING c.id
                )
                UPDATE {ChunkPosition._meta.db_table} p SET generation = %(new)s
                FROM carried WHERE p.chunk_id = carried.id
                """,
                {"new": generation, "old": old, "collection": locked.pk},
            )
        paragraphs = Chunk.objects.filter(collection=locked, generation=generation).paragraphs().count()
        if paragraphs == 0 and Chunk.objects.filter(collection=locked, generation=old).exists():
            raise ReindexRefused("the re-index built no paragraphs: the collection keeps answering as before")
        Chunk.objects.filter(collection=locked).exclude(generation=generation).delete()
        with connection.cursor() as cursor:
            # The keyword index (and, through its triggers, the BM25 statistics) of the new generation.
            cursor.execute(
                f"""
                UPDATE {table} SET search_vector = {keyword_vector()}
                WHERE collection_id = %s AND generation = %s AND kind = 'paragraph' AND search_vector IS NULL
                  AND NOT hidden
                """,
                [locked.pk, generation],
            )
        Document.all_objects.filter(collection=locked, status=DocumentStatus.DONE).update(stale=False)
        Collection.objects.filter(pk=locked.pk).update(
            active_generation=generation,
            active_alias=locked.embedding_alias,
            reindex_generation=None,
            reindex_done=F("reindex_total"),
            reindex_error="",
            updated_at=timezone.now(),
        )
        if isinstance(serving, GateVerdict):
            verdict = serving
            if anyway_by:
                verdict.record["cut_over_anyway"] = {"by": anyway_by[:200], "at": timezone.now().isoformat()}
        else:
            # The new generation as searches would read it once this commits, in this transaction.
            verdict = gate_candidate(Collection.objects.get(pk=locked.pk), serving, generation)
            if verdict.passed is False:
                raise HeldBack(verdict)
        _build_record(locked, passages=paragraphs, verdict=verdict, built_from="re-index")
    return verdict


def _held_record(collection: Collection, generation: int) -> dict[str, Any]:
    """The gate record of the held-back build of `generation`, which a "cut over anyway" carries on."""
    held = (
        Build.objects.filter(collection=collection, gate_passed=False, gate__generation=generation)
        .order_by("-built_at")
        .values_list("gate", flat=True)
        .first()
    )
    return dict(held or {"reason": "cut over without the golden gate's verdict", "generation": generation})


def _build_record(collection: Collection, *, passages: int, verdict: GateVerdict, built_from: str) -> None:
    model = get_model(collection.embedding_alias)
    build_record(
        collection=collection,
        document=None,
        model=get_embedder(collection.embedding_alias).model_identity(),
        alias=model.alias,
        dims=model.dims,
        passages=passages,
        refused=[],
        built_from=built_from,
        gate_passed=verdict.passed,
        gate=verdict.record,
        # How many paragraphs of the generation the model embedded, and how many took a stored row's vector.
        method_extra={"embedded": collection.reindex_embedded, "reused": collection.reindex_reused},
    )


def reindex_progress(collection: Collection) -> dict[str, object] | None:
    """What the API shows while a re-index is pending: documents done / total, and why it stopped if it did."""
    if collection.reindex_generation is None:
        return None
    return {
        "done": collection.reindex_done,
        "total": collection.reindex_total,
        "error": collection.reindex_error or None,
    }
