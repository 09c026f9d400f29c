"""An editor opens a Word document's tool pages in Chromium (language, reader labels, OCR) and relabels its
language: each page shows its form with the admin's layout and its own submit button, and the language page
saves. Screenshots go to var/test-artifacts/tool-*.png."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth.models import User

from accounts.models import Membership, Role, Tenant
from collections_app.models import Chunk, Document
from collections_app.services.collections import collection_create
from collections_app.services.documents import document_create
from tests.files.documents import docx_bytes
from tests.files.sections import SECTIONS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "a long tool-page password"


@pytest.fixture
def document() -> Document:
    tenant = Tenant.objects.create(name="acme")
    editor = User.objects.create_user("edna", password=PASSWORD, is_staff=True)
    Membership.objects.create(user=editor, tenant=tenant, role=Role.EDITOR)
    collection = collection_create(tenant=tenant, name="handbook")
    content = docx_bytes(SECTIONS * 2)
    assert len(content) > 8192  # a real Word file, past the first bytes
    created = document_create(collection=collection, filename="handbook.docx", content=io.BytesIO(content))
    document = Document.objects.get(pk=created.document.pk)
    assert document.status == "done", document.error
    return document


def test_an_editor_uses_a_word_documents_tool_pages(offline_page, live_server, document, screenshot):
    page = offline_page
    base = f"{live_server.url}/admin/collections_app/document/{document.pk}"
    page.goto(f"{live_server.url}/admin/")
    page.fill("#id_username", "edna")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")

    for tool, button in (("labels", "Save labels"), ("ocr", "Save and re-parse"), ("language", "Relabel the document")):
        page.goto(f"{base}/{tool}/")
        assert page.locator("fieldset.module.aligned .form-row").count() >= 1, tool
        assert page.locator(f"input[type=submit][value='{button}']").count() == 1, tool
        screenshot(page, f"tool-{tool}")

    page.select_option("#id_language", "de")
    page.click("input[type=submit][value='Relabel the document']")
    page.wait_for_selector(".messagelist")
    document.refresh_from_db()
    assert document.language_pinned == "de"
    assert set(Chunk.objects.filter(document=document).values_list("language", flat=True)) == {"de"}
