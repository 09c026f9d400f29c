"""Reader labels of documents: on upload, by PATCH and in the admin; relabelling never re-parses or re-embeds,
rechunks and re-indexes keep the labels, and every build leaving paragraphs readable by every reader says how many."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from accounts.readers import reader_create
from collections_app.models import Build, Chunk, Collection, Document
from collections_app.services import documents as ingestion
from collections_app.services.collections import collection_create, collection_update
from collections_app.services.labels import document_labels_set
from tests.files.documents import html_bytes

SECTIONS = [
    (1, "Office", ""),
    (2, "Parking", "Staff cars must be left in the underground garage beneath building B, level minus two."),
    (2, "Salaries", "Salary bands for the engineering department are reviewed every March by the board."),
    (2, "Bicycles", "Cyclists can lock their bikes in the covered rack next to the main entrance."),
]


@pytest.fixture
def per_reader(cast) -> Collection:
    return collection_create(tenant=cast.tenant, name="people", per_reader=True, min_score=0)


@pytest.fixture
def office(cast, per_reader, upload) -> Document:
    answer = upload(cast.editor, per_reader, "office.html", html_bytes(SECTIONS))
    document = Document.objects.get(pk=answer.json()["document_id"])
    assert document.status == "done", document.error
    return document


def labels_url(document: Document) -> str:
    return f"/api/manage/collections/{document.collection_id}/documents/{document.pk}/labels"


def chunk_labels(document: Document) -> list[list[str]]:
    return [c.labels for c in Chunk.objects.filter(document=document).order_by("position__ordinal")]


def texts_for(cast, reader: str, query: str = "where do staff park their cars") -> str:
    body = {"query": query, "collections": ["people"], "reader": reader, "around": 3, "top_n": 10}
    answer = cast.viewer.post("/api/search", body, format="json")
    assert answer.status_code == 200, answer.json()
    return " ".join(r["text"] for r in answer.json()["results"])


@pytest.fixture
def nothing_read_again(monkeypatch):
    """A parser and an embedder that fail the test if anything parses, embeds or queues an ingestion."""

    def never(*args, **kwargs):
        raise AssertionError("relabelling parsed, embedded or queued an ingestion")

    for name in ("ingestion", "ingestion.parsing"):
        monkeypatch.setattr(f"{name}.parse_document", never)
    monkeypatch.setattr("collections_app.services.documents._read.parse_document_bounded", never)
    for name in ("collections_app.services.documents._chunk", "collections_app.services.documents._embed"):
        monkeypatch.setattr(f"{name}.get_embedder", never)
    for name in ("collections_app.services.documents", "collections_app.services.documents._upload"):
        monkeypatch.setattr(f"{name}.document_queue_ingest", never)


# --- upload ---------------------------------------------------------------------------------------------------


def test_an_upload_with_labels_labels_the_document_and_every_paragraph_and_the_api_shows_them(cast, per_reader, upload):
    answer = upload(cast.editor, per_reader, "office.html", html_bytes(SECTIONS), labels='[" hr", "finance", "hr"]')
    assert answer.status_code == 202, answer.json()
    document = Document.objects.get(pk=answer.json()["document_id"])

    assert document.labels == ["finance", "hr"]  # stripped, each once, sorted
    assert chunk_labels(document) == [["finance", "hr"]] * 3
    detail = cast.viewer.get(f"/api/manage/collections/{per_reader.pk}/documents/{document.pk}").json()
    assert detail["labels"] == ["finance", "hr"]
    listed = cast.viewer.get(f"/api/manage/collections/{per_reader.pk}/documents").json()["results"]
    assert listed[0]["labels"] == ["finance", "hr"]
    assert Build.objects.get(document=document).warnings == []


@pytest.mark.parametrize(
    ("labels", "says"),
    [
        ('["hr", ""]', "must not be blank"),
        ('["   "]', "must not be blank"),
        (json.dumps(["x" * 101]), "too long"),
        (json.dumps(["é" * 60]), "bytes in UTF-8"),  # 60 characters, 120 bytes: as a reader's label
        (json.dumps([f"l{i}" for i in range(51)]), "at most 50 labels"),
        ('"hr"', "JSON list"),
        ("[1, 2]", "JSON list"),
        ('{"hr": true}', "JSON list"),
        ("hr, finance", "not valid JSON"),
        (json.dumps(["h\x00r"]), "NUL"),
    ],
)
def test_an_upload_with_bad_labels_is_a_400_naming_what_is_wrong_and_stores_nothing(
    cast, per_reader, upload, labels, says
):
    answer = upload(cast.editor, per_reader, "office.html", html_bytes(SECTIONS), labels=labels)
    assert answer.status_code == 400
    assert says in answer.json()["labels"][0], answer.json()
    assert not Document.objects.exists()


def test_labels_on_a_collection_that_is_not_per_reader_are_refused_saying_why(cast, collection, upload):
    answer = upload(cast.editor, collection, "office.html", html_bytes(SECTIONS), labels='["hr"]')
    assert answer.status_code == 400
    assert "not per-reader" in answer.json()["labels"][0] and "per_reader" in answer.json()["labels"][0]
    assert not Document.objects.exists()
    # No labels at all is what such a collection holds anyway.
    assert upload(cast.editor, collection, "office.html", html_bytes(SECTIONS), labels="[]").status_code == 202


def test_the_same_content_again_with_other_labels_is_a_conflict_and_changes_nothing(cast, per_reader, upload):
    first = upload(cast.editor, per_reader, "office.html", html_bytes(SECTIONS), labels='["hr"]')
    again = upload(cast.editor, per_reader, "office.html", html_bytes(SECTIONS), labels='["sales"]')
    assert again.status_code == 409
    assert "PATCH" in again.json()["detail"] and "['hr']" in again.json()["detail"]
    assert Document.objects.get().labels == ["hr"]
    same = upload(cast.editor, per_reader, "office.html", html_bytes(SECTIONS), labels='["hr"]')
    assert same.status_code == 200 and same.json()["document_id"] == first.json()["document_id"]
    unsaid = upload(cast.editor, per_reader, "office.html", html_bytes(SECTIONS))
    assert unsaid.status_code == 200  # saying nothing about labels is not asking for others


def test_labels_are_no_longer_an_ingest_option(cast, per_reader, office, upload):
    answer = upload(cast.editor, per_reader, "a.txt", b"alpha", ingest_options='{"labels": ["hr"]}')
    assert answer.status_code == 400
    assert "PATCH .../documents/{id}/labels" in answer.json()["ingest_options"][0]
    patched = cast.editor.patch(
        f"/api/manage/collections/{per_reader.pk}/documents/{office.pk}/ingest-options",
        {"labels": ["hr"], "confirm_reparse": True},
        format="json",
    )
    assert patched.status_code == 400 and "labels" in patched.json()["ingest_options"][0]
    office.refresh_from_db()
    assert office.status == "done" and office.labels == [] and office.blocks is not None  # not re-parsed


def test_a_zip_takes_no_labels(cast, per_reader, upload):
    from tests.files.archives import zip_bytes

    answer = upload(cast.editor, per_reader, "docs.zip", zip_bytes({"a.txt": b"alpha words"}), labels='["hr"]')
    assert answer.status_code == 400 and "PATCH" in answer.json()["labels"][0]
    assert not Document.objects.exists()


# --- PATCH .../labels -----------------------------------------------------------------------------------------


def test_patching_labels_relabels_every_paragraph_at_once_without_parsing_or_embedding(
    cast, office, nothing_read_again
):
    reader_create(tenant=cast.tenant, name="bob@example.com", labels=["sales"])
    reader_create(tenant=cast.tenant, name="ada@example.com", labels=["hr"])
    before = {c.pk: (c.text, str(c.embedding), c.search_vector) for c in Chunk.objects.filter(document=office)}
    assert "garage" in texts_for(cast, "bob@example.com")

    answer = cast.editor.patch(labels_url(office), {"labels": ["hr"]}, format="json")

    assert answer.status_code == 200, answer.json()
    assert answer.json()["labels"] == ["hr"] and answer.json()["status"] == "done"
    assert chunk_labels(office) == [["hr"]] * 3
    after = {c.pk: (c.text, str(c.embedding), c.search_vector) for c in Chunk.objects.filter(document=office)}
    assert after == before  # the same rows, vectors and keyword index: only the labels changed
    assert texts_for(cast, "bob@example.com") == ""  # at once: the next search already reads the new labels
    assert "garage" in texts_for(cast, "ada@example.com")

    cleared = cast.admin.patch(labels_url(office), {"labels": []}, format="json")  # widening: an admin's call
    assert cleared.status_code == 200 and chunk_labels(office) == [[]] * 3
    assert "garage" in texts_for(cast, "bob@example.com")


@pytest.mark.parametrize(
    ("before", "after", "editor_may"),
    [
        ([], ["hr"], True),  # an unlabelled document gets a label: fewer readers
        (["hr", "sales"], ["hr"], True),  # one label dropped, one kept: fewer readers
        (["hr"], [], False),  # cleared: every reader reads it
        (["hr"], ["hr", "sales"], False),  # a label added: its holders gain it
        (["hr"], ["legal"], False),  # swapped: legal's holders gain it
    ],
)
def test_only_an_admin_key_widens_who_reads_a_document(cast, office, before, after, editor_may):
    """Who reads what is the tenant admins' decision: an editor may narrow a document's readers, never widen."""
    reader_create(tenant=cast.tenant, name="bob@example.com", labels=["legal"])
    assert cast.admin.patch(labels_url(office), {"labels": before}, format="json").status_code == 200

    answer = cast.editor.patch(labels_url(office), {"labels": after}, format="json")

    if editor_may:
        assert answer.status_code == 200 and chunk_labels(office) == [after] * 3
    else:
        assert answer.status_code == 403 and "admin" in answer.json()["detail"]
        assert chunk_labels(office) == [before] * 3  # nothing changed
        assert cast.admin.patch(labels_url(office), {"labels": after}, format="json").status_code == 200
        assert chunk_labels(office) == [after] * 3


@pytest.mark.parametrize(
    ("body", "field_says"),
    [
        ({"labels": ["hr", ""]}, "blank"),
        ({"labels": ["x" * 101]}, "100"),
        ({"labels": [f"l{i}" for i in range(51)]}, "50"),
        ({"labels": "hr"}, "list"),
        ({}, "required"),
    ],
)
def test_patching_bad_labels_is_a_400_and_changes_nothing(cast, office, body, field_says):
    office_labels = chunk_labels(office)
    answer = cast.editor.patch(labels_url(office), body, format="json")
    assert answer.status_code == 400
    assert field_says in json.dumps(answer.json()["labels"]), answer.json()
    assert chunk_labels(office) == office_labels


def test_patching_labels_with_a_nul_is_a_400_naming_where(cast, office):
    answer = cast.editor.patch(labels_url(office), {"labels": ["ok", "h\x00r"]}, format="json")
    assert answer.status_code == 400 and "labels.1" in answer.json()


def test_patching_labels_in_a_collection_that_is_not_per_reader_is_refused(cast, collection, upload):
    document = Document.objects.get(
        pk=upload(cast.editor, collection, "office.html", html_bytes(SECTIONS)).json()["document_id"]
    )
    answer = cast.editor.patch(labels_url(document), {"labels": ["hr"]}, format="json")
    assert answer.status_code == 400 and "not per-reader" in answer.json()["labels"][0]
    assert cast.editor.patch(labels_url(document), {"labels": []}, format="json").status_code == 200


def test_it_relabels_for_editors_only_and_the_outsider_finds_nothing(cast, office):
    assert cast.viewer.patch(labels_url(office), {"labels": ["hr"]}, format="json").status_code == 403
    assert cast.outsider.patch(labels_url(office), {"labels": ["hr"]}, format="json").status_code == 404
    assert cast.admin.patch(labels_url(office), {"labels": ["hr"]}, format="json").status_code == 200
    assert Document.objects.get(pk=office.pk).labels == ["hr"]


# --- labels survive rebuilds --------------------------------------------------------------------------------


def test_a_rechunk_and_a_reindex_keep_the_documents_labels(cast, office, django_capture_on_commit_callbacks):
    document_labels_set(document=office, labels=["hr"])
    collection = office.collection
    collection_update(collection=collection, chunk_strategy="fixed")
    with django_capture_on_commit_callbacks(execute=True):
        answer = cast.editor.post(f"/api/manage/collections/{collection.pk}/documents/{office.pk}/rechunk")
    assert answer.status_code == 202
    assert len(chunk_labels(office)) > 3 and set(map(tuple, chunk_labels(office))) == {("hr",)}  # fixed: each block

    collection_update(collection=collection, chunk_strategy="structure")
    with django_capture_on_commit_callbacks(execute=True):
        assert cast.editor.post(f"/api/manage/collections/{collection.pk}/reindex").status_code == 202
    collection.refresh_from_db()
    assert collection.active_generation == 1
    assert chunk_labels(office) == [["hr"]] * 3
    reindexed = Build.objects.filter(collection=collection, built_from="re-index").get()
    assert reindexed.warnings == []  # nothing left readable by every reader


def test_a_relabel_while_the_document_is_being_embedded_is_not_undone_by_its_publish(
    cast, per_reader, upload, monkeypatch
):
    real_embed = ingestion.document_embed

    def embed_then_relabel(document, collection, staging, watch=None):
        real_embed(document, collection, staging, watch)
        # An editor relabels while the task is between embedding and publishing (no transaction is open here).
        document_labels_set(document=Document.objects.get(pk=document.pk), labels=["hr"])

    monkeypatch.setattr("collections_app.services.documents._ingest.document_embed", embed_then_relabel)
    answer = upload(cast.editor, per_reader, "office.html", html_bytes(SECTIONS), labels='["sales"]')
    document = Document.objects.get(pk=answer.json()["document_id"])
    assert document.status == "done"
    assert document.labels == ["hr"] and chunk_labels(document) == [["hr"]] * 3
    assert Build.objects.get(document=document).warnings == []


# --- builds that leave paragraphs readable by every reader ----------------------------------------------------


def test_every_build_of_a_per_reader_collection_leaving_unlabelled_paragraphs_says_how_many(
    cast, per_reader, office, upload, django_capture_on_commit_callbacks
):
    (first,) = Build.objects.filter(document=office)
    assert "3 paragraphs readable by every reader (they carry no reader label)" in first.warnings

    short = upload(cast.editor, per_reader, "one.txt", b"The canteen opens at noon.", labels="[]").json()
    assert Build.objects.get(document_id=short["document_id"]).warnings == [
        "1 paragraph readable by every reader (it carries no reader label)"
    ]

    with django_capture_on_commit_callbacks(execute=True):
        cast.editor.post(f"/api/manage/collections/{per_reader.pk}/documents/{office.pk}/rechunk")
    rechunked = Build.objects.filter(document=office).latest("built_at")
    assert rechunked.pk != first.pk and "3 paragraphs readable by every reader" in rechunked.warnings[0]

    with django_capture_on_commit_callbacks(execute=True):
        cast.editor.post(f"/api/manage/collections/{per_reader.pk}/reindex")
    reindexed = Build.objects.get(collection=per_reader, built_from="re-index")
    assert "4 paragraphs readable by every reader" in reindexed.warnings[0]  # the whole collection

    builds = cast.viewer.get(f"/api/manage/collections/{per_reader.pk}/builds").json()
    assert any("4 paragraphs readable by every reader" in w for b in builds for w in b["warnings"])


def test_a_collection_that_is_not_per_reader_records_no_such_warning(cast, collection, upload):
    upload(cast.editor, collection, "office.html", html_bytes(SECTIONS))
    assert Build.objects.get(collection=collection).warnings == []


# --- the admin --------------------------------------------------------------------------------------------------


def test_the_admin_shows_paragraphs_readable_by_every_reader_and_relabels_without_reading_again(
    cast, staff, office, nothing_read_again
):
    collection_page = staff.get(reverse("admin:collections_app_collection_change", args=[office.collection_id]))
    assert "3 paragraphs readable by every reader" in collection_page.content.decode()
    document_page = staff.get(reverse("admin:collections_app_document_change", args=[office.pk])).content.decode()
    assert "3 paragraphs readable by every reader" in document_page
    assert "Reader labels: none" in document_page
    changelist = reverse("admin:collections_app_document_changelist")
    assert "office.html" in staff.get(changelist + "?labelled=no").content.decode()
    url = reverse("admin:collections_app_document_labels", args=[office.pk])
    page = staff.get(url).content.decode()
    assert "3 paragraphs readable by every reader" in page  # the latest build's warning, beside the form

    refused = staff.post(url, {"labels": "ok\n" + "x" * 101})
    assert refused.status_code == 200 and "too long" in refused.content.decode()
    assert Document.objects.get(pk=office.pk).labels == []

    saved = staff.post(url, {"labels": "hr\n\nfinance\n"}, follow=True)
    assert saved.status_code == 200 and "now carries finance, hr" in saved.content.decode()
    assert chunk_labels(office) == [["finance", "hr"]] * 3
    document_page = staff.get(reverse("admin:collections_app_document_change", args=[office.pk])).content.decode()
    assert "readable by every reader" not in document_page and "Reader labels: finance, hr" in document_page
    collection_page = staff.get(reverse("admin:collections_app_collection_change", args=[office.collection_id]))
    assert "readable by every reader" not in collection_page.content.decode()

    assert "office.html" not in staff.get(changelist + "?labelled=no").content.decode()


def test_the_labels_page_is_for_editors_of_the_documents_tenant_only(cast, client, office):
    from django.contrib.auth.models import Permission, User

    from accounts.models import Membership, Role

    viewer = User.objects.create_user("vic", password="pw", is_staff=True)
    viewer.user_permissions.set(Permission.objects.filter(content_type__app_label="collections_app"))
    Membership.objects.create(user=viewer, tenant=cast.tenant, role=Role.VIEWER)
    client.force_login(viewer)
    url = reverse("admin:collections_app_document_labels", args=[office.pk])
    assert client.post(url, {"labels": "hr"}).status_code == 403
    outsider = User.objects.create_user("otto", password="pw", is_staff=True)
    outsider.user_permissions.set(Permission.objects.filter(content_type__app_label="collections_app"))
    Membership.objects.create(user=outsider, tenant=cast.outsider_tenant, role=Role.EDITOR)
    client.force_login(outsider)
    assert client.post(url, {"labels": "hr"}).status_code == 404
    assert Document.objects.get(pk=office.pk).labels == []


def test_an_emails_attachments_carry_its_labels_and_follow_a_relabel(cast, per_reader, upload):
    from tests.files.documents import pdf_bytes
    from tests.files.email import eml_bytes

    pdf = pdf_bytes([[("Claims", "Damaged parcels are photographed before the refund is approved.")]])
    content = eml_bytes(attachments=[("claims.pdf", pdf, "application/pdf")])
    message = Document.objects.get(
        pk=upload(cast.editor, per_reader, "refunds.eml", content, labels='["hr"]').json()["document_id"]
    )
    attachment = Document.objects.get(parent=message)
    assert attachment.status == "done", attachment.error
    assert attachment.labels == ["hr"] and set(map(tuple, chunk_labels(attachment))) == {("hr",)}

    assert cast.admin.patch(labels_url(message), {"labels": ["legal"]}, format="json").status_code == 200
    attachment.refresh_from_db()
    assert attachment.labels == ["legal"] and set(map(tuple, chunk_labels(attachment))) == {("legal",)}
