"""An editor changes a collection's chunking from the admin, in Chromium: preview other settings beside the
collection's with their numbers, apply them (the documents turn stale), start the re-index, watch its progress
reach done without reloading, the stale marks gone, and a search still answering. A screenshot of each step goes
to var/test-artifacts/reindex-*.png.

The re-index task is held back while the request that starts it runs (recorded instead of run), so the page first
shows it pending; the test then runs the task itself while the page stays open. Only the page's own refresh can
turn the progress into "up to date" — the test fails if that refresh is removed.
"""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.contrib.auth.models import User
from django_q import tasks as q_tasks

from accounts.models import Membership, Role, Tenant
from collections_app.models import Chunk, ChunkKind, Collection, Document
from collections_app.services.collections import collection_create
from collections_app.services.documents import document_create
from tests.files.documents import docx_bytes
from tests.files.sections import SECTIONS, body

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ADMIN = "/admin/collections_app"
PASSWORD = "a long re-index password"


def _handbook_docx() -> bytes:
    content = docx_bytes(SECTIONS * 2)
    assert len(content) > 8192  # a real Word file, past the first bytes
    return content


def _policies_markdown() -> bytes:
    sections = [(1, "Policies", body(11, 40)), (2, "Refunds", body(12, 240)), (3, "Exceptions", body(13, 120)),
                (2, "Delivery", body(14, 200))]  # fmt: skip
    return "\n\n".join(f"{'#' * level} {heading}\n\n{text}" for level, heading, text in sections).encode()


@pytest.fixture
def collection() -> Collection:
    """A collection as the admin makes one (structure, 512 tokens, overlap 64) holding two documents read for real."""
    tenant = Tenant.objects.create(name="acme")
    editor = User.objects.create_user("edna", password=PASSWORD, is_staff=True)
    Membership.objects.create(user=editor, tenant=tenant, role=Role.EDITOR)
    collection = collection_create(
        tenant=tenant, name="handbook", chunk_strategy="structure", chunk_size=512, chunk_size_unit="tokens",
        chunk_overlap=64, min_score=0,
    )  # fmt: skip
    for filename, content in (("handbook.docx", _handbook_docx()), ("policies.md", _policies_markdown())):
        # Committed at once (transactional test): the ingestion task runs inline (Q_CLUSTER sync).
        document_create(collection=collection, filename=filename, content=io.BytesIO(content), uploaded_by="edna")
    documents = Document.objects.filter(collection=collection)
    assert [(d.status, d.error) for d in documents] == [("done", "")] * 2
    return collection


def _numbers(page, side: int) -> dict[str, str]:
    cells = page.locator(f".kb-preview-side >> nth={side} >> [data-kb-number]")
    return {cells.nth(i).get_attribute("data-kb-number"): cells.nth(i).inner_text() for i in range(cells.count())}


def test_an_editor_previews_applies_and_reindexes_without_the_collection_going_dark(
    offline_page, live_server, collection, monkeypatch, screenshot
):
    page = offline_page
    base = live_server.url
    old_chunks = set(Chunk.objects.filter(collection=collection).values_list("pk", flat=True))

    # 1. Log in and open the collection.
    page.goto(f"{base}/admin/")
    page.fill("#id_username", "edna")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")
    page.goto(f"{base}{ADMIN}/collection/{collection.pk}/change/")
    assert "up to date" in page.inner_text(".field-reindex_shown")
    screenshot(page, "reindex-01-collection")

    # 2. Preview chunking from the collection's page: one of its documents, the first by default.
    page.click(".object-tools a:text('Preview chunking')")
    page.wait_for_selector("#preview_form")
    assert page.eval_on_selector("#id_document", "el => el.options[el.selectedIndex].text") == "handbook.docx"
    assert page.locator(".kb-preview-side").count() == 1  # the collection's settings only, until some are typed
    screenshot(page, "reindex-02-preview-collection-settings")

    # 3. Type other settings: hierarchical, 60-token children in 200-token parents. Both sides with their numbers.
    page.select_option("#id_strategy", "hierarchical")
    page.fill("#id_size", "60")
    page.select_option("#id_unit", "tokens")
    page.fill("#id_overlap", "0")
    page.fill("#id_parent_size", "200")
    page.click("#preview_form input[type=submit]")
    page.wait_for_selector(".kb-preview-side >> nth=1")
    theirs, yours = _numbers(page, 0), _numbers(page, 1)
    assert set(theirs) == {"chunk_count", "share_under_50_tokens", "heading_only_count"}
    assert set(yours) == {*theirs, "parent_count", "median_parent_tokens"}
    assert int(yours["chunk_count"]) > int(theirs["chunk_count"]) > 0
    assert int(yours["parent_count"]) > 1 and float(yours["median_parent_tokens"]) <= 200
    assert "Your settings: hierarchical, 60 tokens" in page.inner_text(".kb-side-by-side")
    screenshot(page, "reindex-03-preview-side-by-side")

    # 4. Apply them to the collection: saved through the service, every document stale, the re-index offered.
    page.click("#apply_form input[type=submit]")
    page.wait_for_selector(".messagelist .success")
    assert "2 document(s) are now stale" in page.inner_text(".messagelist")
    assert page.is_visible("#reindex_form input[value='Re-index the collection']")
    collection.refresh_from_db()
    assert (collection.chunk_strategy, collection.chunk_size, collection.parent_size) == ("hierarchical", 60, 200)
    screenshot(page, "reindex-04-applied")

    # 5. The document list, filtered on stale: both, each marked.
    page.goto(f"{base}{ADMIN}/document/?collection__id__exact={collection.pk}")
    page.click("#changelist-filter a[href*='stale__exact=1']")
    page.wait_for_selector("#result_list")
    rows = page.locator("#result_list tbody tr")
    assert rows.count() == 2
    assert all("stale — re-index" in rows.nth(i).inner_text() for i in range(2))
    screenshot(page, "reindex-05-stale-documents")

    # 6. A search still answers, from what was built before (structure, 512 tokens).
    before = _try_a_search(page, base, collection)
    screenshot(page, "reindex-06-search-before")

    # 7. Start the re-index from the collection's page. Its task is held: the page shows it pending.
    held = _held(monkeypatch)
    page.goto(f"{base}{ADMIN}/collection/{collection.pk}/change/")
    page.click(".object-tools a:text('Re-index')")
    page.click("input[value='Yes, re-index']")
    page.wait_for_selector(".messagelist .success")
    progress = page.inner_text(".field-reindex_shown")
    assert "0 / 2 documents" in progress and "searches answer from the previous build until the cutover" in progress
    assert len(held) == 1 and held[0][0][0] == "collections_app.tasks.reindex_collection"
    screenshot(page, "reindex-07-pending")

    # 8. The task runs (as the cluster would); the open page reaches done by itself, without a reload.
    page.evaluate("window.kbNotReloaded = true")
    monkeypatch.undo()  # the real django-q2 async_task (synchronous in tests) from here on
    args, kwargs = held[0]
    q_tasks.async_task(*args, **kwargs)
    page.wait_for_selector(".field-reindex_shown [data-kb-reindex] .kb-badge-done", timeout=30_000)
    assert page.evaluate("window.kbNotReloaded") is True
    assert "2 / 2 documents" in page.inner_text(".field-reindex_shown")
    screenshot(page, "reindex-08-done")
    collection.refresh_from_db()
    assert collection.active_generation == 1 and collection.reindex_generation is None
    assert not set(Chunk.objects.filter(collection=collection).values_list("pk", flat=True)) & old_chunks
    assert Chunk.objects.filter(collection=collection, kind=ChunkKind.PARENT).exists()

    # 9. No stale mark left: the stale filter lists nothing, the full list marks nothing.
    page.goto(f"{base}{ADMIN}/document/?collection__id__exact={collection.pk}&stale__exact=1")
    page.wait_for_selector("#changelist")
    assert page.locator("#result_list tbody tr").count() == 0
    page.goto(f"{base}{ADMIN}/document/?collection__id__exact={collection.pk}")
    assert "stale — re-index" not in page.inner_text("#result_list")
    screenshot(page, "reindex-09-nothing-stale")

    # 10. A search answers from the new build.
    after = _try_a_search(page, base, collection)
    assert after and after != before
    screenshot(page, "reindex-10-search-after")
    assert page.outside_requests == []


def _held(monkeypatch) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
    held: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    monkeypatch.setattr(q_tasks, "async_task", lambda *args, **kwargs: held.append((args, kwargs)))
    return held


def _try_a_search(page, base: str, collection: Collection) -> list[str]:
    page.goto(f"{base}/admin/retrieval/searchevent/try/{collection.pk}/")
    page.fill("#id_q", "when does the money go back once the parcel reaches the warehouse")
    page.click("#try_search_form input[type=submit]")
    page.wait_for_selector("#search-results")
    results = page.locator("#search-results .kb-result p")
    texts = [results.nth(i).inner_text() for i in range(results.count())]
    assert texts, "the search answered nothing"
    assert "keyword retrieval" in page.inner_text("#search-trace")
    return texts
