"""Writing a document's staged paragraphs as rows, with PostgreSQL's COPY streamed from the staging files.

INSERTs through bulk_create made the worker's memory grow ~2 KB per paragraph (libc keeps the freed SQL
buffers), ~170 MB for a 60 MB text file, and took twice as long. Model logic is not bypassed: Chunk has no
save() or signals, and bulk_create sends none either.
"""

from __future__ import annotations

import uuid

from django.db import connection
from psycopg.types.json import Jsonb

from collections_app.models import Chunk, ChunkPosition, Document
from collections_app.services.documents._staging import Staging

# Document-level metadata copied onto each of its paragraphs (see ingestion/email.py for the email keys).
DOCUMENT_METADATA_KEYS = ("author", "created", "subject", "recipients", "thread")

# The paragraph columns publishing writes (search_vector is filled afterwards, by document_keywords_index).
_CHUNK_COLUMNS = (
    "id", "tenant_id", "collection_id", "document_id", "text", "section", "page", "language", "labels",
    "metadata", "embedding", "embedding_dims", "kind", "parent_id", "generation", "language_detected", "continues",
    "hidden", "edited",
)  # fmt: skip


def document_rows_write(
    *, document: Document, staging: Staging, generation: int, labels: list[str], language: str = ""
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
    # Values an editor gave at upload (checked against the collection's schema then, stored as an ingest option so
    # every rebuild has them): over the file's own document facts (an editor's "author" over a template's), under
    # a record's own columns (a row's value is the more specific one).
    given = document.ingest_options.get("metadata") or {}
    document_metadata = {**platform_metadata, **given}
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
                    draft.text,
                    draft.section,
                    draft.page,
                    language or draft.language,
                    labels,
                    Jsonb({**document_metadata, **draft.metadata}),
                    None if vector is None else "[" + ",".join(map(repr, vector)) + "]",  # pgvector's text form
                    None if vector is None else dims,
                    draft.kind,
                    None if draft.parent is None else ids[draft.parent],
                    generation,
                    draft.language,
                    draft.continues,
                    getattr(draft, "hidden", False),  # drafts staged before issue 20 carry neither
                    getattr(draft, "edited", False),
                )
            )
            published += draft.kind == "paragraph"
    positions_write(document_id=document.pk, generation=generation, chunk_ids=ids)
    return published


def positions_write(*, document_id: uuid.UUID, generation: int, chunk_ids: list[uuid.UUID]) -> None:
    """The places of a document's new rows (ChunkPosition), `chunk_ids` in reading order: one statement."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            INSERT INTO {ChunkPosition._meta.db_table} (chunk_id, document_id, generation, ordinal)
            SELECT id, %s, %s, n - 1 FROM unnest(%s::uuid[]) WITH ORDINALITY AS r(id, n)
            """,
            [document_id, generation, chunk_ids],
        )
