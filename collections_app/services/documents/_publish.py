"""Publishing: the staged paragraphs replace the document's rows in one transaction, searchable at its commit.

One transaction (ARCHITECTURE, contract 1): readers see the old paragraphs until the whole new set replaces
them, however long writing them takes. Its steps, in order:

1. lock the collection and the document (either gone: deleted while it was read, nothing is published) and read
   who may read the document and its pinned language as they stand now;
2. choose the generation the rows go to (the one searches read, or a pending re-index's);
3. replace the document's rows (COPY, _rows.py);
4. index their keywords, unless they wait for a re-index's cutover;
5. mark the document done, and the version it read the one answering (the version before retired, _versions.py);
6. record the build, with that version.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection, transaction
from django.utils import timezone

from collections_app.models import Chunk, Collection, Document, DocumentStatus
from collections_app.selectors import breadcrumb_title
from collections_app.services.builds import build_record
from collections_app.services.documents._rows import document_rows_write
from collections_app.services.documents._staging import Staging
from collections_app.services.documents._versions import document_version_publish
from collections_app.services.documents._watch import DocumentGone
from collections_app.services.labels import document_labels_for_publish
from collections_app.services.languages import document_language_for_publish
from collections_app.sql import keyword_vector
from embedding import EmbeddingModel, get_model
from ingestion import budget_warnings


def document_publish(document: Document, collection: Collection, staging: Staging) -> None:
    """Replace the document's paragraphs with the staged set, in one transaction."""
    model = get_model(collection.embedding_alias)
    with transaction.atomic():
        locked = _lock_collection(collection)
        _lock_document(document)
        labels = document_labels_for_publish(document)  # as they stand now, not when the task started
        pinned = document_language_for_publish(document)  # an editor's language wins over detection
        target = _target_generation(locked, collection)
        published = _replace_rows(document, staging, target.generation, labels, pinned)
        if not target.waiting:
            document_keywords_index(document)
        _mark_done(document, pinned)
        version = document_version_publish(document=document)
        _record_build(document, collection, model, staging, published, labels, version)


def _lock_collection(collection: Collection) -> Collection:
    # The generation searches read; locked so a re-index's cutover (services/reindex.py) cannot switch
    # generations between this read and the commit. A re-index carries these rows over at its cutover.
    locked = Collection.objects.select_for_update().filter(pk=collection.pk).first()
    if locked is None:
        raise DocumentGone(f"collection {collection.pk} was deleted while a document of it was read")
    return locked


def _lock_document(document: Document) -> None:
    # The deletions lock the row first too (services/documents/_delete.py, services/collections.py): whichever
    # comes second waits for the first's commit, and a deleted document is never published.
    if Document.objects.select_for_update().filter(pk=document.pk).values_list("pk", flat=True).first() is None:
        raise DocumentGone(f"document {document.pk} was deleted while it was read")


@dataclass(frozen=True)
class _Target:
    generation: int
    waiting: bool  # for a re-index's cutover: no keyword index until then


def _target_generation(locked: Collection, collection: Collection) -> _Target:
    if locked.served_alias == collection.embedding_alias:
        return _Target(locked.active_generation, waiting=False)
    # A model change waits for its re-index: these vectors are the new model's and must not join the
    # old model's ranking. They wait in the re-index's generation and go live at its cutover.
    if locked.reindex_generation is None:
        Collection.objects.filter(pk=locked.pk).update(reindex_generation=locked.active_generation + 1)
    return _Target(locked.reindex_generation or locked.active_generation + 1, waiting=True)


def _replace_rows(document: Document, staging: Staging, generation: int, labels: list[str], pinned: str) -> int:
    Chunk.objects.filter(document=document).delete()
    return document_rows_write(
        document=document, staging=staging, generation=generation, labels=labels, language=pinned
    )


def document_keywords_index(document: Document) -> None:
    """The keyword index of the document's paragraphs (and, through its triggers, the BM25 statistics).

    All of the document's paragraphs at once: they were just written. A hidden one has none (an editor hid it:
    it must not weigh in the BM25 statistics either).
    """
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            UPDATE {Chunk._meta.db_table} SET search_vector = {keyword_vector()}
            WHERE document_id = %s AND kind = 'paragraph' AND NOT hidden
            """,
            [document.pk],
        )


def _mark_done(document: Document, pinned: str) -> None:
    Document.objects.filter(pk=document.pk).update(
        status=DocumentStatus.DONE,
        error="",
        progress=100,
        language=pinned or document.language,
        language_detected=document.language,
        stale=False,
        updated_at=timezone.now(),
    )


def _record_build(
    document: Document,
    collection: Collection,
    model: EmbeddingModel,
    staging: Staging,
    published: int,
    labels: list[str],
    version: int,
) -> None:
    build_record(
        collection=collection,
        document=document,
        model=model.alias,  # build_record looks up the identity the provider reports
        dims=staging.dims,
        passages=published,
        refused=[],
        built_from=built_from_upload(document),
        version=version or None,
        unlabelled=0 if labels else published,
        # What the document budgets left out or cut (pages not read by OCR, long blocks): named in the build too.
        warnings=budget_warnings(document.warnings or []),
        # Which title every paragraph's breadcrumb carried (document_embed read the same).
        method_extra=breadcrumb_title(document).for_build(),
    )


def built_from_upload(document: Document) -> str:
    # For a person, never a path: who uploaded it, or which folder source it came from.
    if document.source_uri.startswith("folder://"):
        name = document.collection.name
        if document.source_uri.startswith(f"folder://{name}/"):
            return f"folder source {name}"  # a collection name may itself hold a slash
        return "folder source " + document.source_uri.removeprefix("folder://").split("/", 1)[0]
    return f"upload by {document.uploaded_by}" if document.uploaded_by else "upload"
