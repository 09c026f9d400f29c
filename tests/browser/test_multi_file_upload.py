"""Several files in one upload, in Chromium: an editor picks three files (one of them not what its name says)
in one file input and submits once; the two good ones each become a document that reaches `done`, and each
file gets its own message. Screenshot: var/test-artifacts/upload-several-files.png.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from accounts.models import Membership, Role, Tenant
from collections_app.models import Document
from collections_app.services.collections import collection_create
from tests.files.documents import HANDBOOK, docx_bytes, html_bytes

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_three_files_in_one_submit_become_two_documents_and_one_refusal(offline_page, live_server, screenshot):
    tenant = Tenant.objects.create(name="acme")
    collection = collection_create(tenant=tenant, name="handbook")
    editor = User.objects.create_user("edna", password="a long upload password", is_staff=True)
    Membership.objects.create(user=editor, tenant=tenant, role=Role.EDITOR)
    page, base = offline_page, live_server.url
    page.goto(f"{base}/admin/")
    page.fill("#id_username", "edna")
    page.fill("#id_password", "a long upload password")
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")

    page.goto(f"{base}/admin/collections_app/document/add/")
    assert page.get_attribute("#id_upload", "multiple") is not None
    page.select_option("#id_collection", label="handbook")
    binary = "application/octet-stream"
    page.set_input_files(
        "#id_upload",
        files=[
            {"name": "handbook.docx", "mimeType": binary, "buffer": docx_bytes(HANDBOOK[:3])},
            {"name": "delivery.html", "mimeType": "text/html", "buffer": html_bytes(HANDBOOK[3:])},
            {"name": "report.docx", "mimeType": binary, "buffer": b"plain text pretending to be Word " * 40},
        ],
    )
    page.click("input[name=_save]")
    page.wait_for_selector("#result_list")
    screenshot(page, "upload-several-files")

    messages = page.inner_text(".messagelist").lower()  # the admin capitalises each message
    assert "handbook.docx: accepted, queued for ingestion." in messages
    assert "delivery.html: accepted, queued for ingestion." in messages
    assert "report.docx: refused — " in messages
    listed = page.inner_text("#result_list")
    assert "handbook.docx" in listed and "delivery.html" in listed and "report.docx" not in listed
    documents = Document.objects.filter(collection=collection)
    assert sorted(documents.values_list("filename", "status")) == [("delivery.html", "done"), ("handbook.docx", "done")]
    assert all(d.chunks.exists() for d in documents)
