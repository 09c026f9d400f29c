"""The admin upload's metadata: a typed field per column of the collection the page is for, the values given to
every file of the submit, checked as the API checks them."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from collections_app.admin.upload_metadata import metadata_field_name
from collections_app.models import Chunk, Collection, Document
from collections_app.services.collections import collection_create
from tests.files.documents import HANDBOOK, html_bytes

ADD = "/admin/collections_app/document/add/"


@pytest.fixture
def records(cast) -> Collection:
    """A records collection: its schema as an upload of issue exports declares it."""
    collection = collection_create(tenant=cast.tenant, name="issues")
    collection.metadata_schema = {
        "estimate": {"type": "number"},
        "opened_on": {"type": "date"},
        "status": {"type": "enum", "values": ["closed", "open"]},
        "team": {"type": "string"},
        "cost centre": {"type": "string"},
    }
    collection.save()
    return collection


def test_the_add_page_has_a_typed_field_per_column_of_the_collection_it_is_for(cast, staff, records, collection):
    page = staff.get(f"{ADD}?collection={records.pk}").content.decode()
    assert 'name="metadata__estimate" step="any"' in page and 'type="number"' in page
    assert 'name="metadata__opened_on"' in page and 'type="date"' in page
    assert '<select name="metadata__status"' in page and '<option value="closed">' in page
    assert 'name="metadata__team"' in page
    assert f'name="{metadata_field_name("cost centre")}"' in page  # a name with a space: a digest of it
    assert 'name="metadata"' in page  # the JSON field, for any column
    assert "upload_metadata.js" in page

    # The documents list's "Add" button carries its collection filter: the same fields, the collection chosen.
    carried = staff.get(f"{ADD}?_changelist_filters=collection__id__exact%3D{records.pk}").content.decode()
    assert 'name="metadata__estimate"' in carried
    assert f'<option value="{records.pk}" selected>' in carried

    # A collection with no columns, or none chosen: the JSON field only.
    for url in (f"{ADD}?collection={collection.pk}", ADD):
        page = staff.get(url).content.decode()
        assert 'name="metadata"' in page and "metadata__" not in page


def test_another_tenants_collection_gives_no_fields(cast, staff):
    other = collection_create(tenant=cast.outsider_tenant, name="secret")
    other.metadata_schema = {"salary": {"type": "number"}}
    other.save()
    page = staff.get(f"{ADD}?collection={other.pk}").content.decode()
    assert "salary" not in page


def test_two_files_with_metadata_each_become_a_document_with_the_values_on_every_paragraph(
    cast, staff, records, django_capture_on_commit_callbacks
):
    files = [
        SimpleUploadedFile("handbook.html", html_bytes(HANDBOOK[:3])),
        SimpleUploadedFile("delivery.html", html_bytes(HANDBOOK[3:])),
    ]
    with django_capture_on_commit_callbacks(execute=True):
        response = staff.post(
            ADD,
            {
                "collection": records.pk,
                "upload": files,
                "metadata__estimate": "2.5",
                "metadata__opened_on": "2026-03-01",
                "metadata__status": "open",
                "metadata__team": "",  # left empty: not given
                "metadata": '{"quarter": 1}',  # a new column
            },
            follow=True,
        )

    assert response.status_code == 200
    said = [str(m) for m in response.context["messages"]]
    assert "handbook.html: accepted, queued for ingestion." in said, said
    expected = {"estimate": 2.5, "opened_on": "2026-03-01", "status": "open", "quarter": 1}
    documents = Document.objects.filter(collection=records)
    assert sorted(d.filename for d in documents) == ["delivery.html", "handbook.html"]
    for document in documents:
        assert document.status == "done", document.error
        assert document.ingest_options["metadata"] == expected
    chunks = Chunk.objects.filter(collection=records)
    assert chunks.count() >= 2 and all(m == expected for m in chunks.values_list("metadata", flat=True))
    records.refresh_from_db()
    assert records.metadata_schema["quarter"] == {"type": "number"}


def test_a_value_that_does_not_fit_keeps_the_form_with_the_reason_and_stores_nothing(cast, staff, records):
    file = SimpleUploadedFile("handbook.html", html_bytes(HANDBOOK))
    response = staff.post(
        ADD, {"collection": records.pk, "upload": [file], "metadata": '{"opened_on": "soon", "estimate": 1}'}
    )

    assert response.status_code == 200
    page = response.content.decode()
    assert "opened_on: &#x27;soon&#x27; is not a date (expected YYYY-MM-DD)" in page
    assert "the collection declares opened_on as date" in page
    assert not Document.objects.exists()

    file = SimpleUploadedFile("handbook.html", html_bytes(HANDBOOK))
    response = staff.post(
        ADD, {"collection": records.pk, "upload": [file], "metadata__estimate": "3", "metadata": '{"estimate": 4}'}
    )
    assert "estimate is given twice" in response.content.decode()
    assert not Document.objects.exists()


def test_a_column_or_collection_name_is_printed_as_text_not_html(cast, staff):
    collection = collection_create(tenant=cast.tenant, name="<b>issues</b>")
    collection.metadata_schema = {"<img src=x onerror=alert(1)>": {"type": "string"}}
    collection.save()
    page = staff.get(f"{ADD}?collection={collection.pk}").content.decode()
    assert "<img src=x" not in page and "<b>issues</b>" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
