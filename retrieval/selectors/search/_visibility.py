"""Who may read a paragraph: the one predicate every stage that reads paragraphs applies.

A paragraph is visible to a search when it belongs to the search's tenant and to one of the searched
collections, and — in a per-reader collection — the reader holds at least one of its labels, or it has
none (an unlabelled paragraph is readable by anybody; builds warn when they leave such paragraphs).
Retrieval, windows and parents all use this fragment, so widening never reaches a row the reader could
not have been handed directly.

A document in the trash is read by nobody: its paragraphs stay (a restore is whole) but no stage passes them.
Nor is a collection being deleted: its rows go in the background (collections_app/services/deletion.py).

Only the collection's active generation is read (a re-index builds the next one beside it and switches in
one transaction), and only paragraphs: a hierarchical parent row is never matched nor stitched; a parent
section handed to a reader is put together from the children this predicate lets through.

This is the SQL the search stages share; every read through the ORM says the same with
`Chunk.objects.live().paragraphs().readable_by(labels)` (collections_app/models.py: ChunkQuerySet), and
tests/retrieval/selectors/search/test_visibility.py checks on randomised labels that both select the same rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# On `c` (collections_app_chunk) joined to `col` (its collection). ORM: ChunkQuerySet.readable_by(labels).
READER_SQL = "(NOT col.per_reader OR cardinality(c.labels) = 0 OR c.labels && %(labels)s::varchar[])"
# A paragraph whose document is in the trash (issue 41) is nobody's to read either. Its rows and keyword postings
# stay, so a restore is whole and instant; this probe of the partial index document_trashed (trashed documents
# only: usually empty) is all it costs a candidate (docs/DECISIONS.md, "The trash").
NOT_TRASHED_SQL = (
    "NOT EXISTS (SELECT 1 FROM collections_app_document td WHERE td.id = c.document_id AND td.trashed_at IS NOT NULL)"
)
# A collection being deleted (issue 42) is nobody's from the commit of its flag, while its rows go in the background.
# Searches do not name it any more (Collection.objects leaves it out of every scope); this is for a search whose scope
# was read just before that commit, and costs a column of the collection row every candidate is joined to already.
NOT_DELETING_SQL = "col.deleting_at IS NULL"
# ORM: ChunkQuerySet.live().paragraphs(). A paragraph an editor hid is nobody's to read (issue 20).
LIVE_PARAGRAPH_SQL = (
    "c.generation = col.active_generation AND c.kind = 'paragraph' AND NOT c.hidden"
    f" AND {NOT_DELETING_SQL} AND {NOT_TRASHED_SQL}"
)
VISIBLE_SQL = f"""
    c.tenant_id = %(tenant)s AND c.collection_id = ANY(%(collections)s)
    AND {READER_SQL}
    AND {LIVE_PARAGRAPH_SQL}
"""
FROM_VISIBLE = "collections_app_chunk c JOIN collections_app_collection col ON col.id = c.collection_id"
# A row's place in its document (collections_app.models.ChunkPosition: not a column of the row since issue 42), read
# for the rows a stage hands back only: in a select list it runs for the rows that pass, after the index walk.
ORDINAL_SQL = "(SELECT pos.ordinal FROM collections_app_chunkposition pos WHERE pos.chunk_id = c.id)"


@dataclass(frozen=True)
class Visibility:
    """What one search may read, as SQL parameters for VISIBLE_SQL."""

    tenant_id: object
    collection_ids: list[str]
    labels: list[str] = field(default_factory=list)

    @property
    def params(self) -> dict[str, Any]:
        return {"tenant": self.tenant_id, "collections": self.collection_ids, "labels": self.labels}
