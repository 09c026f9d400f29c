"""An editor's first session, in Chromium: log in, create a collection, upload a real DOCX over 8 KiB, watch it
reach `done` on the list without reloading, open its paragraphs, preview chunking, try a search, open the
build and the search event. A screenshot of each step goes to var/test-artifacts/walkthrough-*.png.

Ingestion is held back while the upload request runs (the queued task is recorded instead of run), so the
list first shows the document `parsing`; the test then runs the task itself while the page stays open.
Only the list's own refresh can turn the badge into `done` — the test fails if that refresh is removed.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django_q import tasks as q_tasks

from accounts.models import Membership, Role, Tenant
from collections_app.models import Collection, Document
from ingestion.chunking import CHUNKING_DEFAULTS
from retrieval.models import SearchEvent
from tests.files.documents import HANDBOOK, docx_bytes
from tests.margins import assert_clears, cosines

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ADMIN = "/admin/collections_app"


def _handbook_docx() -> bytes:
    content = docx_bytes([(level, heading, body * 3) for level, heading, body in HANDBOOK] * 4)
    assert len(content) > 8192  # past what the admin once read of a file: a ZIP's directory is at its end
    return content


@pytest.fixture
def held_tasks(monkeypatch) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
    """Tasks queued by the live server are recorded, not run; the test runs them when it chooses."""
    held: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    monkeypatch.setattr(q_tasks, "async_task", lambda *args, **kwargs: held.append((args, kwargs)))
    return held


def test_an_editor_walks_from_login_to_the_search_event(offline_page, live_server, held_tasks, monkeypatch, screenshot):
    tenant = Tenant.objects.create(name="acme")
    editor = User.objects.create_user("edna", password="a long walk-through password", is_staff=True)
    Membership.objects.create(user=editor, tenant=tenant, role=Role.EDITOR)
    page = offline_page
    base = live_server.url

    # 1. Log in.
    page.goto(f"{base}/admin/")
    page.fill("#id_username", "edna")
    page.fill("#id_password", "a long walk-through password")
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")
    screenshot(page, "walkthrough-01-logged-in")
    assert "Site administration" in page.content() or "Collections" in page.content()

    # 2. Create a collection: the tenant is preselected, the chunking defaults are the admin's.
    page.goto(f"{base}{ADMIN}/collection/add/")
    page.fill("#id_name", "handbook")
    page.click("summary:has-text('Chunking')")  # collapsed fieldsets, each tuning field with its help
    page.click("summary:has-text('Retrieval')")
    assert page.is_visible("text=The largest paragraph")
    assert page.eval_on_selector("#id_embedding_alias", "el => el.tagName") == "SELECT"  # the registered models
    screenshot(page, "walkthrough-02-collection-form")
    page.click("input[name=_save]")
    page.wait_for_selector(".messagelist .success")
    screenshot(page, "walkthrough-03-collection-created")
    collection = Collection.objects.get(tenant=tenant, name="handbook")
    defaults = CHUNKING_DEFAULTS  # one set, the API's and the admin's alike
    assert (collection.chunk_size, collection.chunk_size_unit, collection.chunk_overlap) == (
        defaults.size,
        defaults.unit,
        defaults.overlap,
    )

    # 3. Upload a real DOCX over 8 KiB. Its ingestion is held back: the list shows it in flight.
    page.goto(f"{base}{ADMIN}/document/add/")
    page.select_option("#id_collection", label="handbook")
    page.set_input_files(
        "#id_upload",
        files=[{"name": "handbook.docx", "mimeType": "application/octet-stream", "buffer": _handbook_docx()}],
    )
    page.click("input[name=_save]")
    page.wait_for_selector("#result_list")
    document = Document.objects.get(collection=collection)
    status_cell = f'[data-kb-doc="{document.pk}"][data-kb-field="status"]'
    assert page.inner_text(status_cell) == "queued"  # waiting for a worker, not "parsing 0 %"
    assert len(held_tasks) == 1
    screenshot(page, "walkthrough-04-uploaded-parsing")

    # 4. The task runs (as the cluster would); the open list turns `done` by itself, without a reload.
    page.evaluate("window.kbNotReloaded = true")
    monkeypatch.undo()  # the real django-q2 async_task (synchronous in tests) from here on
    args, kwargs = held_tasks[0]
    q_tasks.async_task(*args, **kwargs)
    document.refresh_from_db()
    assert document.status == "done", document.error
    page.wait_for_selector(f"{status_cell} .kb-badge-done", timeout=30_000)
    assert page.evaluate("window.kbNotReloaded") is True  # the same page: no reload happened
    assert page.inner_text(f'[data-kb-doc="{document.pk}"][data-kb-field="progress"]') == "100%"
    assert page.inner_text(f'[data-kb-doc="{document.pk}"][data-kb-field="language"]') == "English (en)"
    paragraphs = int(page.inner_text(f'[data-kb-doc="{document.pk}"][data-kb-field="paragraphs"]'))
    assert paragraphs == document.chunks.count() > 0
    screenshot(page, "walkthrough-05-done-without-reload")

    # 5. The document's page, then its paragraphs.
    page.click("#result_list a:text('handbook.docx')")
    page.wait_for_selector(".object-tools")
    assert page.query_selector("input[name=_save]") is None  # read-only: nothing to save
    assert "Money is paid back to the original card" in page.inner_text("#content-main")
    screenshot(page, "walkthrough-06-document-page")
    document_url = page.url
    page.click(".object-tools a:text('Paragraphs')")
    page.wait_for_selector("#result_list")
    assert page.locator("#result_list tbody tr").count() == paragraphs
    screenshot(page, "walkthrough-07-paragraphs")

    # 6. Preview chunking with other settings, beside the collection's.
    page.goto(document_url)
    page.click(".object-tools a:text('Preview chunking')")
    page.select_option("#id_unit", "chars")
    page.fill("#id_size", "120")
    page.fill("#id_overlap", "0")
    page.click("#preview_form input[type=submit]")
    page.wait_for_selector(".kb-preview-side >> nth=1")
    counts = [int(n) for n in re.findall(r"(\d+) paragraphs?", page.inner_text(".kb-side-by-side"))]
    assert len(counts) == 2 and counts[1] > counts[0]
    screenshot(page, "walkthrough-08-preview")

    # 7. Try a search from the collection's page.
    page.goto(f"{base}{ADMIN}/collection/{collection.pk}/change/")
    page.click(".object-tools a:text('Try a search')")
    page.fill("#id_q", "when is my money paid back")
    page.click("#try_search_form input[type=submit]")
    page.wait_for_selector("#search-trace")
    assert "original card" in page.inner_text("#search-results")
    # There because the refund paragraph's score passes the floor the search used.
    refunds = max(s.score for s in cosines(collection, "when is my money paid back") if "original card" in s.text)
    floor = SearchEvent.objects.get(tenant=tenant).floor
    assert floor is not None
    assert_clears(refunds, floor, what="the refund paragraph")
    assert "keyword retrieval" in page.inner_text("#search-trace")
    screenshot(page, "walkthrough-09-try-a-search")

    # 8. The search event it recorded.
    page.click("#search-trace a:text('open the search event')")
    page.wait_for_selector("#content-main")
    event = SearchEvent.objects.get(tenant=tenant)
    assert f"/searchevent/{event.pk}/" in page.url
    assert "vector retrieval" in page.inner_text("#content-main")
    screenshot(page, "walkthrough-10-search-event")

    # 9. The build of the document.
    page.goto(document_url)
    page.click(".object-tools a:text('Builds')")
    page.wait_for_selector("#result_list")
    page.click("#result_list tbody tr th a")
    page.wait_for_selector("#content-main")
    build_text = page.inner_text("#content-main")
    assert "nothing refused" in build_text and "handbook.docx" in build_text
    screenshot(page, "walkthrough-11-build")
    assert page.outside_requests == []
