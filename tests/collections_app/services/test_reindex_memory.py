"""A re-index holds one document's parser output at a time, so the worker's memory does not grow with the
number of documents in the collection (bench/reindex.py measures the worker's RSS)."""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext

from collections_app.models import Chunk, Collection, Document
from collections_app.services.collections import collection_update
from collections_app.services.reindex import collection_reindex, collection_reindex_run

RETURNS = (
    "# Returns\n\nGoods can be sent back within thirty days of purchase if they are unused and in their original "
    "packaging. The refund reaches the card used for the purchase within five working days of the parcel's arrival "
    "at the warehouse, once the goods have been checked.\n"
)


def test_a_reindex_reads_each_documents_parser_output_only_when_it_stages_it(
    cast, collection, upload, django_capture_on_commit_callbacks
):
    for n in range(3):
        assert upload(
            cast.editor, collection, f"returns-{n}.md", RETURNS.replace("thirty", f"{20 + n}").encode()
        ).status_code
    assert set(Document.objects.filter(collection=collection).values_list("status", flat=True)) == {"done"}
    before = Chunk.objects.filter(collection=collection).count()
    collection = collection_update(collection=collection, chunk_size=120, chunk_overlap=20)
    with django_capture_on_commit_callbacks(execute=False):  # the task is run here, by hand
        collection_reindex(collection=collection)

    with CaptureQueriesContext(connection) as queries:
        collection_reindex_run(collection_id=str(collection.pk))

    reading_blocks = [q["sql"] for q in queries if '"collections_app_document"."blocks"' in q["sql"].split("FROM")[0]]
    assert len(reading_blocks) == 3  # one per document ...
    assert all('WHERE "collections_app_document"."id" = ' in sql for sql in reading_blocks)  # ... and one each
    collection = Collection.objects.get(pk=collection.pk)
    assert collection.reindex_generation is None  # cut over
    assert Chunk.objects.filter(collection=collection).count() > before  # cut at 120 characters now
    assert not Document.objects.filter(collection=collection, stale=True).exists()
