"""Issue 41, in Chromium: findings 1, 2 and 11, and the version diff. Tasks run as the cluster runs them (outside
any request's transaction); screenshots go to var/test-artifacts/travel-*.png.

- Finding 1: "Download as collection file" says what happens (the file is being written and will be listed under
  Collection files with a Download link), links its entry there, then shows the Download link; the entry and the
  list show Download too.
- Finding 2: a failed import shows as failed wherever the collection is listed (the list's documents and state
  columns) and on the collection's own page (a banner with the reason and a link to the file's entry), never
  "up to date" with 0 documents.
- Finding 11: the collection's page reaches evaluate, measure and export (with the collection chosen), the tool
  links clear the page title, and an export started there ends in a Download link on the same page.
- The version diff: a document's versions list links "what changed since version 1"; the page shows paragraphs
  removed, added and changed with the words marked, and any two versions can be chosen.
"""

from __future__ import annotations

import io
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django_q import tasks as q_tasks

from accounts.models import Membership, Role, Tenant
from collections_app.models import Collection, CollectionFile, Document
from collections_app.services.collection_file import _import, collection_export
from collections_app.services.collections import collection_create
from collections_app.services.documents import document_create
from tests.files.documents import html_bytes
from tests.retrieval.services.golden.corpus import OFFICE

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ADMIN = "/admin/collections_app"
PASSWORD = "a long travel-findings password"

V1 = (
    b"# Travel\n\nBusiness trips under 500 km are taken by train, second class.\n\n"
    b"Hotel nights are refunded up to 140 euros in capitals.\n\nThe daily allowance abroad is 45 euros.\n"
)
V2 = (
    b"# Travel\n\nHotel nights are refunded up to 160 euros in capitals.\n\nThe daily allowance abroad is 45 euros.\n\n"
    b"Taxis are refunded with a receipt.\n"
)


@pytest.fixture
def collection() -> Collection:
    tenant = Tenant.objects.create(name="acme")
    editor = User.objects.create_user("edna", password=PASSWORD, is_staff=True)
    Membership.objects.create(user=editor, tenant=tenant, role=Role.EDITOR)
    collection = collection_create(tenant=tenant, name="handbook")
    document_create(collection=collection, filename="office.html", content=io.BytesIO(html_bytes(OFFICE)))
    assert collection.chunks.filter(kind="paragraph").count() > 3
    return collection


def _log_in(page, base: str) -> None:
    page.goto(f"{base}/admin/")
    page.fill("#id_username", "edna")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")


_real_async_task = q_tasks.async_task


def _held(monkeypatch) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
    held: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    monkeypatch.setattr(q_tasks, "async_task", lambda *args, **kwargs: held.append((args, kwargs)))
    return held


def _run(held, monkeypatch) -> None:
    monkeypatch.setattr(q_tasks, "async_task", _real_async_task)
    (args, kwargs), *_ = held
    q_tasks.async_task(*args, **kwargs)


def _row(page, name: str):
    return page.locator("#result_list tbody tr", has=page.locator(f"th a:text-is('{name}')"))


def _text_box(locator) -> dict:
    """The box of an element's text in the viewport, as bounding_box() is (a heading is a block as wide as the
    page; its words are not)."""
    return locator.evaluate(
        """element => { const range = document.createRange(); range.selectNodeContents(element);
           const box = range.getBoundingClientRect();
           return {x: box.x, y: box.y, width: box.width, height: box.height}; }"""
    )


def _clear(a: dict, b: dict) -> bool:
    """Two bounding boxes share no pixel."""
    return (
        a["x"] + a["width"] <= b["x"]
        or b["x"] + b["width"] <= a["x"]
        or a["y"] + a["height"] <= b["y"]
        or b["y"] + b["height"] <= a["y"]
    )


def test_finding_1_the_export_action_says_where_the_file_will_be_and_links_it(
    offline_page, live_server, collection, monkeypatch, screenshot, tmp_path: Path
):
    page, base = offline_page, live_server.url
    paragraphs = collection.chunks.filter(kind="paragraph").count()
    _log_in(page, base)

    held = _held(monkeypatch)
    page.goto(f"{base}{ADMIN}/collection/")
    _row(page, "handbook").locator("input.action-select").check()
    page.select_option("select[name=action]", "export_collection_file")
    page.click("button[name=index]")
    page.wait_for_selector(".messagelist .success")
    message = page.inner_text(".messagelist")
    assert "being written" in message and "will be listed under Collection files with a Download link" in message
    assert f"0 / {paragraphs} paragraphs" in message, message
    record = CollectionFile.objects.get(kind="export")
    entry = page.locator(".messagelist a.kb-export-entry")
    assert entry.is_visible() and entry.get_attribute("href").endswith(f"/collectionfile/{record.pk}/change/")
    screenshot(page, "travel-finding-1-export-being-written")

    _run(held, monkeypatch)
    link = page.wait_for_selector(".messagelist a:text('Download handbook.db')", timeout=30_000)
    assert "also listed under Collection files" in page.inner_text(".messagelist")
    screenshot(page, "travel-finding-1-export-ready")
    with page.expect_download() as download:
        link.click()
    path = tmp_path / "downloaded.db"
    download.value.save_as(path)
    with sqlite3.connect(path) as store:
        assert store.execute("SELECT count(*) FROM agents_chunks").fetchone()[0] == paragraphs

    # The entry the message links, and the list: both hand over the file.
    page.click(".messagelist a.kb-export-entry")
    page.wait_for_selector("#content-main")
    assert page.locator("#content-main a:text-is('Download')").is_visible()
    screenshot(page, "travel-finding-1-entry")
    page.goto(f"{base}{ADMIN}/collectionfile/")
    row = page.locator("#result_list tbody tr").first
    assert "done" in row.inner_text() and row.locator("a:text-is('Download')").is_visible()
    screenshot(page, "travel-finding-1-list")
    assert page.outside_requests == []


def test_finding_2_a_failed_import_shows_failed_in_the_list_and_on_its_page_with_a_link_to_its_entry(
    offline_page, live_server, collection, monkeypatch, screenshot, tmp_path: Path
):
    page, base = offline_page, live_server.url
    file = tmp_path / "handbook.db"
    collection_export(collection=collection, path=file)
    _log_in(page, base)

    def fail(*args, **kwargs):
        raise OSError("no space left on device")

    monkeypatch.setattr(_import, "_index", fail)
    page.goto(f"{base}{ADMIN}/collectionfile/add/")
    page.select_option("#id_tenant", label="acme")
    page.fill("#id_name", "broken copy")
    page.set_input_files("#id_file", str(file))
    page.click("input[type=submit]")
    page.wait_for_selector(".messagelist .success")
    record = CollectionFile.objects.get(kind="import")
    assert record.status == "error"

    page.goto(f"{base}{ADMIN}/collection/")
    row = _row(page, "broken copy")
    shown = row.inner_text()
    assert "import failed" in shown and "the import stopped (OSError)" in shown, shown
    assert "up to date" not in shown
    assert row.locator("td.field-document_count").inner_text().strip() == "—"  # not 0, as if merely empty
    assert row.locator("a.kb-import-entry").get_attribute("href").endswith(f"/collectionfile/{record.pk}/change/")
    # The reason fits the list: every column stays on the page (a long advice in the cell pushed the last off).
    screenshot(page, "travel-finding-2-list")
    widths = page.evaluate("(r => [r.scrollWidth, r.clientWidth])(document.querySelector('#changelist .results'))")
    assert widths[0] <= widths[1], widths
    screenshot(page, "travel-finding-2-list")

    row.locator("th a").click()
    banner = page.wait_for_selector(".kb-import-banner li.error")
    text = banner.inner_text()
    assert "import failed" in text and "the import stopped (OSError)" in text and "up to date" not in text, text
    for title in page.locator("#content h1, #content h2").all():
        assert _clear(banner.bounding_box(), _text_box(title))
    assert "upload one" not in page.locator(".field-documents_by_status").inner_text()  # not merely empty
    screenshot(page, "travel-finding-2-collection-page")
    page.click(".kb-import-banner a.kb-import-entry")
    page.wait_for_url(f"**/collectionfile/{record.pk}/change/")
    assert "the import stopped (OSError)" in page.inner_text("#content-main")
    screenshot(page, "travel-finding-2-entry")
    assert page.outside_requests == []


def test_finding_11_the_collection_page_reaches_evaluate_measure_and_export(
    offline_page, live_server, collection, monkeypatch, screenshot
):
    page, base = offline_page, live_server.url
    _log_in(page, base)
    page.goto(f"{base}{ADMIN}/collection/{collection.pk}/change/")
    tools = page.locator(".object-tools")
    for label in ("Try a search", "Golden questions", "Evaluate", "Measure", "Export"):
        assert tools.locator(f"a:text-is('{label}')").is_visible(), label
    titles = [_text_box(title) for title in page.locator("#content h1, #content h2").all()]
    for link in tools.locator("a").all():
        assert all(_clear(link.bounding_box(), title) for title in titles), link.inner_text()
    screenshot(page, "travel-finding-11-collection-tools")

    tools.locator("a:text-is('Measure')").click()
    page.wait_for_selector("#id_collection")
    assert page.locator("#id_collection option:checked").inner_text() == str(collection)
    screenshot(page, "travel-finding-11-measure")
    page.go_back()
    tools.locator("a:text-is('Evaluate')").click()
    page.wait_for_selector("#id_collection")
    assert page.locator("#id_collection option:checked").inner_text() == str(collection)
    page.go_back()

    tools.locator("a:text-is('Export')").click()
    page.wait_for_selector("input[type=submit][value='Yes, write the collection file']")
    assert "Collection files" in page.inner_text("#content-main")
    screenshot(page, "travel-finding-11-export-confirm")
    held = _held(monkeypatch)
    page.click("input[type=submit][value='Yes, write the collection file']")
    page.wait_for_selector(".messagelist .success")
    assert page.url.endswith(f"/collection/{collection.pk}/change/")
    assert "being written" in page.inner_text(".messagelist")
    _run(held, monkeypatch)
    page.wait_for_selector(".messagelist a:text('Download handbook.db')", timeout=30_000)
    screenshot(page, "travel-finding-11-export-ready")
    assert CollectionFile.objects.get(kind="export").status == "done"
    assert page.outside_requests == []


def test_the_version_diff_shows_what_changed_between_two_versions(offline_page, live_server, collection, screenshot):
    page, base = offline_page, live_server.url
    document_create(collection=collection, filename="travel.md", content=io.BytesIO(V1), replace=True)
    document_create(collection=collection, filename="travel.md", content=io.BytesIO(V2), replace=True)
    document = Document.objects.get(collection=collection, filename="travel.md")
    assert document.version == 2 and document.status == "done", document.error
    _log_in(page, base)

    page.goto(f"{base}{ADMIN}/document/{document.pk}/change/")
    link = page.locator("a.kb-version-compare")
    assert link.inner_text() == "since version 1"
    assert "what changed" in page.locator(".field-versions_shown thead").inner_text().lower()
    screenshot(page, "travel-diff-versions-list")
    link.click()
    page.wait_for_selector("table.kb-diff")
    summary = page.inner_text(".kb-diff-summary")
    assert "From version 1 to version 2" in summary and "1 paragraph changed, 1 added, 1 removed" in summary, summary
    assert [r.get_attribute("data-kind") for r in page.locator("table.kb-diff tbody tr").all()] == [
        "same", "removed", "changed", "same", "added",
    ]  # fmt: skip
    changed = page.locator("tr.kb-diff-changed")
    assert changed.locator("del").inner_text() == "140" and changed.locator("ins").inner_text() == "160"
    assert page.locator("tr.kb-diff-removed del").inner_text().startswith("Business trips under 500 km")
    assert page.locator("tr.kb-diff-added ins").inner_text() == "Taxis are refunded with a receipt."
    assert changed.locator("ins").is_visible() and changed.locator("del").is_visible()
    screenshot(page, "travel-diff-1-to-2")

    # Any two versions, either way round: chosen on the page.
    page.select_option("#kb-diff-old", "2")
    page.select_option("#kb-diff-new", "1")
    page.click(".kb-diff-choose input[type=submit]")
    page.wait_for_selector("table.kb-diff")
    assert "From version 2 to version 1" in page.inner_text(".kb-diff-summary")
    assert page.locator("tr.kb-diff-added ins").first.inner_text().startswith("Business trips under 500 km")
    page.select_option("#kb-diff-new", "2")
    page.click(".kb-diff-choose input[type=submit]")
    assert "Choose two different versions" in page.inner_text(".kb-diff-problem")
    screenshot(page, "travel-diff-same-version")
    assert page.outside_requests == []
