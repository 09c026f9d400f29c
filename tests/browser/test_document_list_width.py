"""The documents list fits a 1,280 px wide screen: every column, the last one included, is inside the window
with its filters, for long file names and error messages. Screenshot: var/test-artifacts/document-list-1280.png.
"""

from __future__ import annotations

import uuid

import pytest
from django.contrib.auth.models import User

from accounts.models import Membership, Role, Tenant
from collections_app.models import Document, DocumentStatus
from collections_app.services.collections import collection_create

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LONG_NAMES = [
    "Procurement policy for regional offices and subsidiaries 2024 (final version approved by the board).docx",
    "Quarterly_financial_statement_consolidated_Q3_2024_with_notes_and_appendices_v12.xlsx",
    "scan-0001.pdf",
]
LONG_ERROR = (
    "the file could not be read: its content is a ZIP archive but its name says .docx, and no part of it is a "
    "Word document; upload the original file or rename it to .zip to import what it holds"
)


def test_the_document_list_fits_1280_px_without_cutting_off_a_column(browser, live_server, screenshot):
    tenant = Tenant.objects.create(name="acme")
    collection = collection_create(tenant=tenant, name="Regional procurement and finance handbook")
    for number, name in enumerate(LONG_NAMES * 2):
        failed = number % 3 == 2
        Document.objects.create(
            tenant=tenant, collection=collection, content_hash=uuid.uuid4().hex * 2, filename=name,
            source_uri=f"upload://{name}", size=123_456_789 + number, language="mk" if number % 2 else "sh",
            status=DocumentStatus.ERROR if failed else DocumentStatus.DONE, progress=100,
            error=LONG_ERROR if failed else "", stale=number in (0, 1),
        )  # fmt: skip
    editor = User.objects.create_user("edna", password="a long list-width password", is_staff=True)
    Membership.objects.create(user=editor, tenant=tenant, role=Role.EDITOR)
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    try:
        page.goto(f"{live_server.url}/admin/")
        page.fill("#id_username", "edna")
        page.fill("#id_password", "a long list-width password")
        page.click("input[type=submit]")
        page.wait_for_selector("#site-name")
        page.goto(f"{live_server.url}/admin/collections_app/document/")
        page.wait_for_selector("#result_list")
        screenshot(page, "document-list-1280")

        headers = page.eval_on_selector_all(
            "#result_list thead th", "ths => ths.map(th => [th.innerText.trim(), th.getBoundingClientRect().right])"
        )
        last_name, last_right = headers[-1]
        assert last_name.lower() == "updated", headers
        assert last_right <= 1280, f"the last column ({last_name}) ends at {last_right:.0f} px, past 1,280: {headers}"
        page_width = page.evaluate("document.documentElement.scrollWidth")
        assert page_width <= 1280, f"the page scrolls sideways: {page_width} px wide"
        # The table is not clipped by the list's own box (Django's .results scrolls sideways when it overflows).
        box = page.eval_on_selector(
            "#changelist .results", "r => [r.scrollWidth, r.clientWidth, r.getBoundingClientRect().right]"
        )
        # How narrow the table can get (its widest unbreakable content), with room to spare for other fonts.
        narrowest = page.eval_on_selector(
            "#result_list",
            "t => { t.style.width = 'min-content'; const w = t.offsetWidth; t.style.width = ''; return w; }",
        )
        print(f"table {box[0]} px in a {box[1]} px box; at its narrowest {narrowest} px")
        assert narrowest + 30 <= box[1], f"only {box[1] - narrowest} px to spare: a longer language name cuts it"
        assert box[0] <= box[1], f"the table is {box[0]} px wide in a {box[1]} px box: its last columns are cut off"
        assert last_right <= box[2] + 0.5, (last_right, box)
        # Nothing is cut inside its cell either: the file names are all there to read (wrapped, not clipped).
        assert LONG_NAMES[0] in page.inner_text("#result_list")
    finally:
        context.close()
