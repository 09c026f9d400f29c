"""Issue 41, finding 3, in Chromium: "Split at the cursor" waits for a click in the text (and says so), a heading
split off its text and merged back reads exactly as before (no "Refunds Refunds are paid…"), and the last
paragraph offers no "Merge with next". Screenshots: var/test-artifacts/split-merge-*.png."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth.models import User

from accounts.models import Membership, Role, Tenant
from collections_app.models import Chunk, Document
from collections_app.services.collections import collection_create
from collections_app.services.documents import document_create
from collections_app.services.paragraph_edits import paragraph_edit
from tests.collections_app.paragraphs.conftest import HANDBOOK
from tests.files.documents import docx_bytes

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "a long split merge password"
HEADED = "Refunds\n\nRefunds are paid back within five working days to the card used for the purchase."


@pytest.fixture
def document() -> Document:
    tenant = Tenant.objects.create(name="acme")
    editor = User.objects.create_user("edna", password=PASSWORD, is_staff=True)
    Membership.objects.create(user=editor, tenant=tenant, role=Role.EDITOR)
    collection = collection_create(tenant=tenant, name="handbook", min_score=0)
    document_create(
        collection=collection, filename="handbook.docx", content=io.BytesIO(docx_bytes(HANDBOOK)), uploaded_by="edna"
    )
    document = Document.objects.get(collection=collection)
    assert document.status == "done", document.error
    first = Chunk.objects.filter(document=document).editable().order_by("position__ordinal").first()
    assert first is not None
    paragraph_edit(document=document, paragraph_id=first.pk, text=HEADED, by="edna")  # the heading on its line
    return document


def texts(document: Document) -> list[str]:
    return [c.text for c in Chunk.objects.filter(document=document).editable().order_by("position__ordinal")]


def test_a_heading_split_off_and_merged_back_reads_exactly_as_before(offline_page, live_server, document, screenshot):
    page = offline_page
    page.goto(f"{live_server.url}/admin/")
    page.fill("#id_username", "edna")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")
    page.goto(f"{live_server.url}/admin/collections_app/document/{document.pk}/paragraphs/")
    page.wait_for_selector("#paragraph-numbers")
    original = texts(document)

    # Before any click in the text, the split waits for one and says where to click.
    split = page.locator("#p0 button[value=split]")
    assert split.is_disabled()
    assert page.locator("#p0 .kb-split-hint").is_visible()
    assert "click in the paragraph where it should split" in page.locator("#p0 .kb-split-hint").inner_text()
    # The last paragraph offers no merge; the others do.
    assert page.locator("#p2 button[value=merge]").count() == 0
    assert page.locator("#p0 button[value=merge]").is_visible() and page.locator("#p1 button[value=merge]").count()
    screenshot(page, "split-merge-1-waits-for-a-click")

    # A click in the text, the cursor moved right after the heading: the split is offered.
    text = page.locator("#p0 textarea")
    text.click()
    page.keyboard.press("Control+Home")
    for _ in range(len("Refunds")):
        page.keyboard.press("ArrowRight")
    assert split.is_enabled() and not page.locator("#p0 .kb-split-hint").is_visible()
    # Typing that is not saved yet: the split would cut the saved text, so it waits and says to save first.
    page.keyboard.type("X")
    assert split.is_disabled() and "save your change first" in page.locator("#p0 .kb-split-hint").inner_text()
    page.keyboard.press("Backspace")
    assert split.is_enabled()
    split.click()
    page.wait_for_selector("text=Paragraph split in two")
    assert page.locator(".kb-para").count() == 4
    assert page.locator("#p0 textarea").input_value() == "Refunds"
    assert page.locator("#p1 textarea").input_value() == HEADED.split("\n\n")[1]
    screenshot(page, "split-merge-2-split")

    # Merged back: exactly the text it was, the heading on its own line.
    page.locator("#p0 button[value=merge]").click()
    page.wait_for_selector("text=Paragraphs merged")
    assert page.locator(".kb-para").count() == 3
    assert page.locator("#p0 textarea").input_value() == HEADED
    assert texts(document) == original
    assert page.locator("#p2 button[value=merge]").count() == 0
    screenshot(page, "split-merge-3-merged-back")
    assert page.outside_requests == []
