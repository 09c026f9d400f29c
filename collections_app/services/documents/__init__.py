"""Documents: upload, ingestion (read, chunk, embed, publish) and deletion.

The public API is what this module exports; the private modules are by job, in the order a document meets them:

- _upload.py: an upload stored under a safe name, its row, its ingestion queued (or the document already held);
- _queue.py: the ingestion task, queued once the transaction commits (large documents to their own cluster);
- _ingest.py: the task's job, step by step, and a failure recorded as such;
- _lane.py: the large-document lane: at most KB_LARGE_DOCUMENT_LANES large ingestions at a time, the others
  sent back to the queue;
- _watch.py: whether the document still exists, asked between steps and batches (a deletion stops its ingestion);
- _read.py: the document budgets, stored parser output, the extent and the parser (in a bounded child process)
  and its attachments, or a large text file read as a stream;
- _chunk.py: paragraphs cut with the collection's settings and labelled with their languages;
- _staging.py: the nameless files paragraphs and vectors wait in between the steps;
- _edits.py: editors' paragraph edits replayed on a rebuild's paragraphs while their anchors match (issue 20);
- _embed.py: vectors for the staged paragraphs, batch by batch, with progress;
- _reuse.py: vectors of stored rows taken again by paragraphs with the same embedding text (same model);
- _publish.py: the new rows replace the old in one transaction, with their keyword index and build record;
- _rows.py: the rows written with COPY (a re-index writes its generation with it too);
- _versions.py: a changed file under a document's name is its next version, answering once published;
- _diff.py: what changed between two versions, paragraph by paragraph (each version's text as its file reads);
- _trash.py: a deleted document in its collection's trash (gone from every read), restored whole, or purged;
- _delete.py: a document, its paragraphs, versions and attachments removed, its originals after the commit.

services/reindex.py rebuilds documents from the same steps (Staging, document_chunk, document_stage_stream,
document_embed, document_rows_write) into a generation of its own.
"""

from collections_app.services.documents._chunk import (
    collection_chunking,
    document_chunk,
    document_stage_stream,
)
from collections_app.services.documents._delete import document_delete
from collections_app.services.documents._diff import (
    VersionsDiff,
    VersionsNotComparable,
    document_versions_diff,
    paragraphs_diff,
    words_diff,
)
from collections_app.services.documents._edits import (
    document_edits_replay,
    merged_text,
    split_continues,
    split_parts,
    split_texts,
    text_hash,
)
from collections_app.services.documents._embed import Embedded, document_embed
from collections_app.services.documents._ingest import document_ingest
from collections_app.services.documents._publish import document_keywords_index, document_publish
from collections_app.services.documents._queue import document_queue_ingest
from collections_app.services.documents._read import document_streams
from collections_app.services.documents._reuse import DocumentVectors, VectorSource, vector_source
from collections_app.services.documents._rows import DOCUMENT_METADATA_KEYS, document_rows_write, positions_write
from collections_app.services.documents._staging import Staging
from collections_app.services.documents._trash import (
    FOLDER_SYNC,
    NotInTrash,
    RestoreConflict,
    Trashed,
    document_golden_references,
    document_purge,
    document_restore,
    document_trash,
    restore_until,
    trash_days,
    trash_empty,
    trash_purge_expired,
)
from collections_app.services.documents._upload import (
    FileTooLarge,
    UploadResult,
    document_create,
    stored_files_remove,
    upload_filename,
)
from collections_app.services.documents._versions import VersionConflict, document_version_problem, stored_files_of

__all__ = [
    "DOCUMENT_METADATA_KEYS",
    "FOLDER_SYNC",
    "DocumentVectors",
    "Embedded",
    "FileTooLarge",
    "NotInTrash",
    "RestoreConflict",
    "Staging",
    "Trashed",
    "UploadResult",
    "VectorSource",
    "VersionConflict",
    "VersionsDiff",
    "VersionsNotComparable",
    "collection_chunking",
    "document_chunk",
    "document_create",
    "document_delete",
    "document_edits_replay",
    "document_embed",
    "document_golden_references",
    "document_ingest",
    "document_keywords_index",
    "document_publish",
    "document_purge",
    "document_queue_ingest",
    "document_restore",
    "document_rows_write",
    "document_stage_stream",
    "document_streams",
    "document_trash",
    "document_version_problem",
    "document_versions_diff",
    "merged_text",
    "paragraphs_diff",
    "positions_write",
    "restore_until",
    "split_continues",
    "split_parts",
    "split_texts",
    "stored_files_of",
    "stored_files_remove",
    "text_hash",
    "trash_days",
    "trash_empty",
    "trash_purge_expired",
    "upload_filename",
    "vector_source",
    "words_diff",
]
