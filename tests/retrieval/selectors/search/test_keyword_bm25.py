"""Keyword retrieval ranks like BM25, over statistics the database keeps current with every change."""

from __future__ import annotations

import pytest
from django.db import connection

from accounts.models import Tenant
from collections_app.models import Chunk, Collection, Document, KeywordStats, KeywordTerm
from collections_app.sql import keyword_vector
from retrieval.selectors.search import Visibility, keyword_retrieve


def index(collection: Collection, texts: list[str], name: str = "doc") -> Document:
    """Paragraphs indexed as ingestion indexes them (English stemmer OR'd with 'simple')."""
    document = Document.objects.create(
        tenant=collection.tenant, collection=collection, content_hash=name, filename=f"{name}.txt"
    )
    chunks = Chunk.objects.bulk_create(
        Chunk(tenant=collection.tenant, collection=collection, document=document, text=t, language="en")
        for i, t in enumerate(texts)
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE collections_app_chunk SET search_vector = {keyword_vector()} WHERE id = ANY(%s)",
            [[c.pk for c in chunks]],
        )
    return document


def ranked(collection: Collection, query: str) -> list[str]:
    visible = Visibility(collection.tenant_id, [str(collection.pk)])
    hits = keyword_retrieve(visible=visible, query=query, language="en", limit=10)
    return [Chunk.objects.get(pk=h.chunk_id).text for h in hits]


@pytest.fixture
def collection(db) -> Collection:
    return Collection.objects.create(tenant=Tenant.objects.create(name="acme"), name="notes")


FILLER = [f"The office kitchen has a kettle and paragraph {n} about the office." for n in range(12)]


def test_a_paragraph_with_the_rare_word_outranks_one_with_the_frequent_word(collection) -> None:
    index(collection, [*FILLER, "The office printer is broken.", "The defibrillator hangs by the lifts."])

    first, second, *_ = ranked(collection, "office defibrillator")

    assert first == "The defibrillator hangs by the lifts."
    assert "office" in second


def test_any_question_word_is_enough_to_match(collection) -> None:
    index(collection, [*FILLER, "Cyclists lock their bikes in the covered rack."])

    # Most of the question's words appear nowhere; one shared stem is enough.
    assert ranked(collection, "where can visitors park a bike overnight?")[0] == (
        "Cyclists lock their bikes in the covered rack."
    )


def test_a_shorter_paragraph_wins_when_both_hold_the_word_once(collection) -> None:
    long = "Invoices " + "are checked by finance and then archived in the ledger system " * 6
    index(collection, [*FILLER, long, "Invoices go to finance."])

    assert ranked(collection, "invoices")[0] == "Invoices go to finance."


def test_a_question_of_stop_words_alone_still_finds_something_without_scanning_wrongly(collection) -> None:
    index(collection, FILLER)

    assert len(ranked(collection, "the")) == 10


def recount(collection: Collection) -> tuple[int, int, dict[str, int]]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*), coalesce(sum(kb_tsvector_length(search_vector)), 0) FROM collections_app_chunk "
            "WHERE collection_id = %s AND search_vector IS NOT NULL",
            [collection.pk],
        )
        paragraphs, length = cursor.fetchone()
        cursor.execute(
            "SELECT u.lexeme, count(*) FROM collections_app_chunk c, unnest(c.search_vector) u "
            "WHERE c.collection_id = %s GROUP BY u.lexeme",
            [collection.pk],
        )
        return paragraphs, length, dict(cursor.fetchall())


def stored(collection: Collection) -> tuple[int, int, dict[str, int]]:
    stats = KeywordStats.objects.filter(collection=collection).first()
    terms = dict(
        KeywordTerm.objects.filter(collection=collection, paragraphs__gt=0).values_list("lexeme", "paragraphs")
    )
    return (stats.paragraphs, stats.total_length, terms) if stats else (0, 0, terms)


def test_statistics_follow_every_insert_reindex_and_delete(collection) -> None:
    first = index(collection, ["Refunds reach the card in five days.", "Bikes go in the rack."], name="a")
    index(collection, ["Refunds are paid by finance."], name="b")
    assert stored(collection) == recount(collection) and stored(collection)[0] == 3

    Chunk.objects.filter(document=first, position__ordinal=0).update(text="Parcels leave on weekdays.")
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE collections_app_chunk SET search_vector = to_tsvector('simple', text) WHERE document_id = %s",
            [first.pk],
        )
    assert stored(collection) == recount(collection)

    first.delete()
    assert stored(collection) == recount(collection) and stored(collection)[0] == 1
    assert "bike" not in stored(collection)[2]


def test_a_relabel_that_leaves_the_index_alone_changes_no_statistics(collection) -> None:
    document = index(collection, ["Salaries are paid monthly."])
    before = stored(collection)

    Chunk.objects.filter(document=document).update(labels=["payroll"])

    assert stored(collection) == before


def test_a_question_meets_each_searched_collections_own_stemmer(collection) -> None:
    """The configurations of the searched collections' documents apply to the question (`present`), read for
    each collection searched together, not only the one the question's own language names."""
    german = Collection.objects.create(tenant=collection.tenant, name="verträge")
    index(collection, [*FILLER, "Notice periods are agreed in writing."])
    index(german, ["2024 2025 2026"], name="numbers")  # no language detected: "" before "de"
    document = index(german, ["Die Kündigungsfristen stehen im Arbeitsvertrag."], name="vertrag")
    Document.objects.filter(pk=document.pk).update(language="de")
    Chunk.objects.filter(document=document).update(language="de")
    with connection.cursor() as cursor:  # indexed under German, as ingestion indexes a German paragraph
        cursor.execute(
            f"UPDATE collections_app_chunk SET search_vector = {keyword_vector()} WHERE document_id = %s",
            [document.pk],
        )
    visible = Visibility(collection.tenant_id, [str(collection.pk), str(german.pk)])

    def found(present: bool) -> list[str]:
        hits = keyword_retrieve(visible=visible, query="Kündigungsfrist", language="en", limit=5, present=present)
        return [Chunk.objects.get(pk=h.chunk_id).text for h in hits]

    # German stems the singular the question asks for and the plural the paragraph holds alike.
    assert found(present=True) == ["Die Kündigungsfristen stehen im Arbeitsvertrag."]
    assert found(present=False) == []  # under English and 'simple' alone the two words differ
