"""Metadata at upload, in Chromium: from a records collection's filtered documents list, "Add" opens the upload
form with a typed field per metadata column (number, date, a select for the enum, text); two files and the values
go in one submit, and every paragraph of both documents carries them. Screenshots:
var/test-artifacts/upload-metadata-form.png, var/test-artifacts/upload-metadata-done.png.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from accounts.models import Membership, Role, Tenant
from collections_app.models import Chunk, Document
from collections_app.services.collections import collection_create
from tests.files.documents import HANDBOOK, html_bytes

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_two_files_with_metadata_fields_from_the_records_collections_list(offline_page, live_server, screenshot):
    tenant = Tenant.objects.create(name="acme")
    plain = collection_create(tenant=tenant, name="handbook")  # another collection, without columns
    records = collection_create(tenant=tenant, name="issues")
    records.metadata_schema = {
        "estimate": {"type": "number"},
        "opened_on": {"type": "date"},
        "status": {"type": "enum", "values": ["closed", "open"]},
        "team": {"type": "string"},
    }
    records.save()
    editor = User.objects.create_user("edna", password="a long upload password", is_staff=True)
    Membership.objects.create(user=editor, tenant=tenant, role=Role.EDITOR)
    page, base = offline_page, live_server.url
    page.goto(f"{base}/admin/")
    page.fill("#id_username", "edna")
    page.fill("#id_password", "a long upload password")
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")

    page.goto(f"{base}/admin/collections_app/document/?collection__id__exact={records.pk}")
    page.click(".object-tools a.addlink")
    page.wait_for_selector("#id_upload")
    assert page.input_value("#id_collection") == str(records.pk)
    assert page.get_attribute("#id_metadata__estimate", "type") == "number"
    assert page.get_attribute("#id_metadata__opened_on", "type") == "date"
    assert page.eval_on_selector_all("#id_metadata__status option", "os => os.map(o => o.value)") == [
        "",
        "closed",
        "open",
    ]
    page.set_input_files(
        "#id_upload",
        files=[
            {"name": "returns.html", "mimeType": "text/html", "buffer": html_bytes(HANDBOOK[:3])},
            {"name": "delivery.html", "mimeType": "text/html", "buffer": html_bytes(HANDBOOK[3:])},
        ],
    )
    page.fill("#id_metadata__estimate", "3")
    page.fill("#id_metadata__opened_on", "2026-03-01")
    page.select_option("#id_metadata__status", "open")
    page.fill("#id_metadata__team", "support")
    screenshot(page, "upload-metadata-form")
    page.click("input[name=_save]")
    page.wait_for_selector("#result_list")
    screenshot(page, "upload-metadata-done")

    messages = page.inner_text(".messagelist").lower()
    assert "returns.html: accepted, queued for ingestion." in messages
    assert "delivery.html: accepted, queued for ingestion." in messages
    expected = {"estimate": 3, "opened_on": "2026-03-01", "status": "open", "team": "support"}
    documents = Document.objects.filter(collection=records)
    assert sorted(documents.values_list("filename", "status")) == [("delivery.html", "done"), ("returns.html", "done")]
    metadata = list(Chunk.objects.filter(collection=records).values_list("metadata", flat=True))
    assert metadata and all(m == expected for m in metadata)

    # Choosing the collection without columns (no file picked yet) reloads the form without their fields.
    page.goto(f"{base}/admin/collections_app/document/add/?collection={records.pk}")
    page.select_option("#id_collection", label="handbook")
    page.wait_for_url(f"**/add/?collection={plain.pk}")
    page.wait_for_selector("#id_metadata")
    assert page.query_selector("#id_metadata__estimate") is None
