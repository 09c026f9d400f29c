"""Finding 6 of issue 41, in Chromium: deleting a document from the admin names the golden question that refers to
it on the confirmation page; the document goes to the trash (listed with who deleted it and when), and Restore
brings it back, searchable again. Screenshots: var/test-artifacts/trash-*.png."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth.models import User

from accounts.models import Membership, Role, Tenant
from collections_app.models import Document
from collections_app.services.collections import collection_create
from collections_app.services.documents import document_create
from retrieval.models import GoldenQuestion
from retrieval.selectors.search import collection_scope, search

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "a long trash-walkthrough password"
LEAVE = b"Carry-over\n\nUnused vacation days may be carried over until March 31 of the following year.\n"
BIKES = b"Bicycles\n\nCyclists can lock their bikes in the covered rack next to the main entrance.\n"
QUESTION = "Until when can unused vacation days be carried over?"


@pytest.fixture
def handbook():
    tenant = Tenant.objects.create(name="acme")
    editor = User.objects.create_user("ada", password=PASSWORD, is_staff=True)
    Membership.objects.create(user=editor, tenant=tenant, role=Role.EDITOR)
    collection = collection_create(tenant=tenant, name="handbook", min_score=0)
    for name, data in (("leave.txt", LEAVE), ("bikes.txt", BIKES)):
        document_create(collection=collection, filename=name, content=io.BytesIO(data), uploaded_by="ada")
    assert list(Document.objects.filter(collection=collection).values_list("status", flat=True)) == ["done"] * 2
    leave = Document.objects.get(filename="leave.txt")
    GoldenQuestion.objects.create(tenant=tenant, collection=collection, question=QUESTION, documents=[leave.pk])
    return collection


def searched(collection) -> set[str]:
    answer = search(scope=collection_scope(collection=collection), query=QUESTION, top_n=5, around=0)
    return {r["document"]["filename"] for r in answer.results}


def test_delete_names_the_golden_question_then_the_trash_lists_it_and_restore_brings_it_back(
    offline_page, live_server, handbook, screenshot
):
    page, base, collection = offline_page, live_server.url, handbook
    leave = Document.objects.get(filename="leave.txt")
    assert "leave.txt" in searched(collection)
    page.goto(f"{base}/admin/")
    page.fill("#id_username", "ada")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")

    # 1. The document's Delete: the confirmation names the golden question and says where the document goes.
    page.goto(f"{base}/admin/collections_app/document/{leave.pk}/delete/")
    confirmation = page.locator("#kb-trash-confirmation")
    confirmation.wait_for()
    assert page.locator(".kb-golden-questions li").all_inner_texts() == [QUESTION]
    assert "1 golden question refers to it" in confirmation.inner_text()
    assert "trash" in confirmation.inner_text() and "30 days" in confirmation.inner_text()
    assert page.locator(".kb-golden-questions li").first.is_visible()
    screenshot(page, "trash-01-delete-names-the-golden-question")
    page.click("#kb-trash-confirmation input[type=submit]")
    page.wait_for_selector(".messagelist .success")
    assert "Moved leave.txt to the trash; it can be restored until" in page.inner_text(".messagelist")
    assert "leave.txt" not in searched(collection)
    # The list no longer shows it, and links its collection's trash.
    assert page.locator("#result_list").inner_text().count("leave.txt") == 0
    assert page.text_content("#kb-trash-link").strip() == "Trash (1)"  # (shown in capitals by the admin's CSS)

    # 2. The trash lists it with who deleted it and when.
    page.click("#kb-trash-link")
    page.wait_for_selector("#kb-trash-list")
    row = page.locator("#kb-trash-list tbody tr", has_text="leave.txt")
    assert row.count() == 1 and "ada" in row.inner_text()
    trashed_at = Document.all_objects.get(pk=leave.pk).trashed_at
    assert trashed_at is not None and trashed_at.strftime("%Y-%m-%d") in row.inner_text()
    empty, intro = page.locator("#kb-trash-tools").bounding_box(), page.locator("#kb-trash-intro").bounding_box()
    assert empty["y"] + empty["height"] <= intro["y"] or empty["x"] >= intro["x"] + intro["width"]  # no overlap
    screenshot(page, "trash-02-the-trash-lists-it")

    # 3. Restore: back in the list and in search.
    row.locator("button[name=restore]").click()
    page.wait_for_selector(".messagelist .success")
    assert "Restored leave.txt: it answers searches again." in page.inner_text(".messagelist")
    assert page.locator("#kb-trash-empty").inner_text() == "The trash is empty."
    screenshot(page, "trash-03-restored")
    assert "leave.txt" in searched(collection)
    page.goto(f"{base}/admin/collections_app/document/?collection__id__exact={collection.pk}")
    assert page.locator("#result_list").inner_text().count("leave.txt") == 1
