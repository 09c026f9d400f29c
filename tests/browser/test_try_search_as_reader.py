""" "Try a search" in Chromium, as a chosen reader: an editor searches a per-reader collection as two registered
readers and sees the restricted paragraph only as the reader whose labels allow it, with the trace stage by
stage and the search event recording the reader. Screenshots: var/test-artifacts/try-search-*.png.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from accounts.issuing import api_key_create
from accounts.models import Membership, Role, Tenant
from accounts.readers import reader_create
from collections_app.models import Chunk
from collections_app.services.collections import collection_create
from retrieval.models import SearchEvent
from tests.conftest import client_for
from tests.files.documents import HANDBOOK, docx_bytes
from tests.margins import assert_clears, cosines

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SALARIES = (2, "5 Salaries", "Salaries are paid on the last working day of each month by bank transfer.")
QUESTION = "when are salaries paid"


def test_an_editor_tries_a_search_as_each_reader_and_sees_only_what_that_reader_may_read(
    offline_page, live_server, upload, screenshot
):
    tenant = Tenant.objects.create(name="acme")
    collection = collection_create(tenant=tenant, name="staff", per_reader=True)
    editor_key = client_for(api_key_create(tenant=tenant, role=Role.EDITOR).secret)
    assert upload(editor_key, collection, "staff.docx", docx_bytes([*HANDBOOK, SALARIES])).status_code == 202
    restricted = Chunk.objects.filter(collection=collection, text__contains="last working day")
    # Scored while it is still unlabelled (a search without a reader reads no labelled paragraph).
    (salaries,) = [s.score for s in cosines(collection, QUESTION) if "last working day" in s.text]
    assert restricted.update(labels=["hr"]) == 1
    ada = reader_create(tenant=tenant, name="ada@example.com", labels=["hr"])
    reader_create(tenant=tenant, name="bob@example.com", labels=["sales"])
    editor = User.objects.create_user("edna", password="a long try-search password", is_staff=True)
    Membership.objects.create(user=editor, tenant=tenant, role=Role.EDITOR)
    page = offline_page
    base = live_server.url

    page.goto(f"{base}/admin/")
    page.fill("#id_username", "edna")
    page.fill("#id_password", "a long try-search password")
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")

    page.goto(f"{base}/admin/collections_app/collection/{collection.pk}/change/")
    page.click(".object-tools a:text('Try a search')")
    found = {}
    for reader in ("ada@example.com", "bob@example.com"):
        page.fill("#id_q", QUESTION)
        page.select_option("#id_reader", label=reader)
        page.click("#try_search_form input[type=submit]")
        page.wait_for_selector("#search-trace")
        found[reader] = page.inner_text("#search-results")
        trace = page.inner_text("#search-trace")
        for stage in ("keyword retrieval", "vector retrieval", "fusion", "floor", "window", "judge"):
            assert stage in trace, (stage, trace)
        screenshot(page, f"try-search-{reader.split('@')[0]}")

    assert "last working day" in found["ada@example.com"]
    assert "last working day" not in found["bob@example.com"]
    # Ada finds it because its score passes the floor her search used.
    floor = SearchEvent.objects.get(tenant=tenant, reader=ada).floor
    assert floor is not None
    assert_clears(salaries, floor, what="the salaries paragraph")

    # The last search (bob's) is recorded with its reader; ada's with hers.
    page.click("#search-trace a:text('open the search event')")
    page.wait_for_selector("#content-main")
    assert "bob@example.com" in page.inner_text("#content-main")
    assert SearchEvent.objects.filter(tenant=tenant, reader=ada).count() == 1
