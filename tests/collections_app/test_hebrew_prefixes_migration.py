"""Migrations 0038 (Hebrew prefixes) and 0040 (presentation forms): a Hebrew collection built before them finds
prefixed and pointed words on the day they land, without a rebuild; paragraphs in every other language keep the
keyword index they had."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from accounts.models import Tenant
from collections_app.models import Chunk, Collection, Document
from collections_app.sql import keyword_vector
from retrieval.selectors.search import Visibility, keyword_retrieve
from tests.retrieval.selectors.search.test_keyword_bm25 import recount, stored

BEFORE = ("collections_app", "0037_chunk_positions")
OLD_INDEX = "to_tsvector(kb_ts_config(language), text) || to_tsvector('simple', text)"


def vectors() -> dict[str, object]:
    return dict(Chunk.objects.values_list("language", "search_vector"))


@pytest.mark.django_db(transaction=True)
def test_hebrew_paragraphs_indexed_before_are_indexed_again_and_others_left_alone() -> None:
    executor = MigrationExecutor(connection)
    executor.migrate([BEFORE])
    try:
        # 0038 changes no table: today's models write the rows as they were, indexed as ingestion indexed them then.
        collection = Collection.objects.create(tenant=Tenant.objects.create(name="acme"), name="נהלים")
        document = Document.objects.create(
            tenant=collection.tenant, collection=collection, content_hash="a", filename="a.txt", language="he"
        )
        for language, text in [
            ("he", "העדים נכנסים לאולם רק אחרי שהשופט מזמין אותם."),
            ("en", "The witnesses wait in the hall."),
        ]:
            Chunk.objects.create(
                tenant=collection.tenant, collection=collection, document=document, text=text, language=language
            )  # fmt: skip
        with connection.cursor() as cursor:
            cursor.execute(f"UPDATE collections_app_chunk SET search_vector = {OLD_INDEX}")
        before = vectors()
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())

    after = vectors()
    visible = Visibility(collection.tenant_id, [str(collection.pk)])
    hits = keyword_retrieve(visible=visible, query="מה אומרים לעדים?", language="he", limit=5, present=True)
    assert [Chunk.objects.get(pk=h.chunk_id).language for h in hits] == ["he"]
    assert after["en"] == before["en"] and after["he"] != before["he"]
    assert stored(collection) == recount(collection)


@pytest.mark.django_db(transaction=True)
def test_hebrew_paragraphs_in_presentation_forms_indexed_before_0040_are_found_on_the_day_it_lands() -> None:
    executor = MigrationExecutor(connection)
    executor.migrate([("collections_app", "0039_hebrew_points")])
    try:
        collection = Collection.objects.create(tenant=Tenant.objects.create(name="acme"), name="מעשׂיות")
        document = Document.objects.create(
            tenant=collection.tenant, collection=collection, content_hash="a", filename="a.txt", language="he"
        )
        for text in ["אַ גרויסער ג\ufb2fרטן", "אַ קליין הויז"]:  # the garden's אָ as U+FB2F
            Chunk.objects.create(
                tenant=collection.tenant, collection=collection, document=document, text=text, language="he"
            )
        with connection.cursor() as cursor:
            cursor.execute(f"UPDATE collections_app_chunk SET search_vector = {keyword_vector()}")
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())

    visible = Visibility(collection.tenant_id, [str(collection.pk)])
    hits = keyword_retrieve(visible=visible, query="גארטן", language="he", limit=5, present=True)
    assert [Chunk.objects.get(pk=h.chunk_id).text for h in hits] == ["אַ גרויסער ג\ufb2fרטן"]
    assert stored(collection) == recount(collection)
