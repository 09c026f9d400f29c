"""The visibility predicate on real rows: tenant, collection and reader labels."""

from __future__ import annotations

import pytest
from django.db import connection

from collections_app.models import Chunk, Collection, Document, Tenant
from retrieval.search import FROM_VISIBLE, VISIBLE_SQL, Visibility


def visible_texts(visibility: Visibility) -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT c.text FROM {FROM_VISIBLE} WHERE {VISIBLE_SQL}", visibility.params)
        return {row[0] for row in cursor.fetchall()}


def paragraphs(collection: Collection, labelled: dict[str, list[str]]) -> None:
    document = Document.objects.create(
        tenant=collection.tenant, collection=collection, content_hash=collection.name, filename="f.txt"
    )
    for ordinal, (text, labels) in enumerate(labelled.items()):
        Chunk.objects.create(
            tenant=collection.tenant,
            collection=collection,
            document=document,
            ordinal=ordinal,
            text=text,
            labels=labels,
        )


@pytest.fixture
def world(db):
    acme, globex = Tenant.objects.create(name="acme"), Tenant.objects.create(name="globex")
    hr = Collection.objects.create(tenant=acme, name="hr", per_reader=True)
    wiki = Collection.objects.create(tenant=acme, name="wiki")
    other = Collection.objects.create(tenant=globex, name="theirs")
    paragraphs(hr, {"salaries": ["payroll"], "holidays": [], "reviews": ["managers", "payroll"]})
    paragraphs(wiki, {"lunch": ["payroll"]})  # labels mean nothing outside a per-reader collection
    paragraphs(other, {"their secret": []})
    return acme, globex, hr, wiki, other


def test_a_reader_sees_paragraphs_with_one_of_its_labels_and_unlabelled_ones(world) -> None:
    acme, _, hr, wiki, _ = world

    assert visible_texts(Visibility(acme.pk, [str(hr.pk)], ["managers"])) == {"holidays", "reviews"}
    assert visible_texts(Visibility(acme.pk, [str(hr.pk)], [])) == {"holidays"}
    assert visible_texts(Visibility(acme.pk, [str(hr.pk), str(wiki.pk)], ["payroll"])) == {
        "salaries", "holidays", "reviews", "lunch",
    }  # fmt: skip


def test_another_tenants_rows_are_never_visible_even_when_their_collection_is_named(world) -> None:
    acme, globex, hr, _, other = world

    assert visible_texts(Visibility(acme.pk, [str(other.pk)], [])) == set()
    assert visible_texts(Visibility(globex.pk, [str(hr.pk)], ["payroll"])) == set()
