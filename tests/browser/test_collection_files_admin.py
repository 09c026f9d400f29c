"""An editor exports a collection and imports collection files from the admin, in Chromium, with the tasks run as
the cluster runs them (outside any request's transaction).

- "Download as collection file": the answer names the export, follows its progress without a reload, and turns
  into a download link once the file is written; the file downloaded holds every paragraph.
- The import page: while the import runs the collection list says it is importing, then it answers; an import that
  fails half way leaves its collection marked failed with the reason, never "up to date" with nothing in it.

Screenshots go to var/test-artifacts/collection-files-*.png.
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
from collections_app.models import Chunk, Collection, CollectionFile
from collections_app.services.collection_file import _import, collection_export
from collections_app.services.collections import collection_create
from collections_app.services.documents import document_create
from tests.files.documents import html_bytes
from tests.retrieval.services.golden.corpus import OFFICE

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ADMIN = "/admin/collections_app"
PASSWORD = "a long collection-file password"


@pytest.fixture
def collection() -> Collection:
    tenant = Tenant.objects.create(name="acme")
    editor = User.objects.create_user("edna", password=PASSWORD, is_staff=True)
    Membership.objects.create(user=editor, tenant=tenant, role=Role.EDITOR)
    collection = collection_create(tenant=tenant, name="handbook")
    # Committed at once (transactional test): the ingestion task runs inline (Q_CLUSTER sync).
    document_create(collection=collection, filename="office.html", content=io.BytesIO(html_bytes(OFFICE)))
    assert collection.chunks.filter(kind="paragraph").count() > 3
    return collection


def _log_in(page, base: str) -> None:
    page.goto(f"{base}/admin/")
    page.fill("#id_username", "edna")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")


def _held(monkeypatch) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
    held: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    monkeypatch.setattr(q_tasks, "async_task", lambda *args, **kwargs: held.append((args, kwargs)))
    return held


def _run(held, monkeypatch) -> None:
    """The held task, run as the cluster runs it: outside the request that queued it."""
    monkeypatch.setattr(q_tasks, "async_task", _real_async_task)
    (args, kwargs), *_ = held
    q_tasks.async_task(*args, **kwargs)


_real_async_task = q_tasks.async_task


def _row(page, name: str):
    return page.locator("#result_list tbody tr", has=page.locator(f"th a:text-is('{name}')"))


def test_the_export_action_answers_with_a_download_link_once_the_file_is_written(
    offline_page, live_server, collection, monkeypatch, screenshot, tmp_path: Path
):
    page = offline_page
    base = live_server.url
    paragraphs = collection.chunks.filter(kind="paragraph").count()
    _log_in(page, base)

    held = _held(monkeypatch)
    page.goto(f"{base}{ADMIN}/collection/")
    _row(page, "handbook").locator("input.action-select").check()
    page.select_option("select[name=action]", "export_collection_file")
    page.click("button[name=index]")
    page.wait_for_selector(".messagelist .success")
    message = page.inner_text(".messagelist")
    assert "handbook" in message and f"0 / {paragraphs} paragraphs" in message, message
    screenshot(page, "collection-files-01-export-started")

    page.evaluate("window.kbNotReloaded = true")
    _run(held, monkeypatch)
    link = page.wait_for_selector(".messagelist a:text('Download handbook.db')", timeout=30_000)
    assert page.evaluate("window.kbNotReloaded") is True  # the message followed the export by itself
    screenshot(page, "collection-files-02-export-ready")
    with page.expect_download() as download:
        link.click()
    path = tmp_path / "downloaded.db"
    download.value.save_as(path)
    with sqlite3.connect(path) as store:
        assert store.execute("SELECT count(*) FROM agents_chunks").fetchone()[0] == paragraphs
    record = CollectionFile.objects.get(kind="export")
    assert (record.status, record.error, record.done) == ("done", "", paragraphs)
    assert page.outside_requests == []


def test_an_import_shows_importing_then_answers_and_a_failed_one_is_shown_failed_not_up_to_date(
    offline_page, live_server, collection, monkeypatch, screenshot, tmp_path: Path
):
    page = offline_page
    base = live_server.url
    file = tmp_path / "handbook.db"
    collection_export(collection=collection, path=file)
    paragraphs = collection.chunks.filter(kind="paragraph").count()
    _log_in(page, base)

    # 1. An import, its task held: the collection list says it is importing, not that it is up to date.
    held = _held(monkeypatch)
    _import_page(page, base, "copy", file)
    page.goto(f"{base}{ADMIN}/collection/")
    shown = _row(page, "copy").inner_text()
    assert "importing" in shown and f"0 / {paragraphs} paragraphs" in shown and "up to date" not in shown, shown
    screenshot(page, "collection-files-03-importing")

    # 2. It runs: the collection answers, and the list says so.
    _run(held, monkeypatch)
    page.reload()
    shown = _row(page, "copy").inner_text()
    assert "up to date" in shown and "importing" not in shown, shown
    assert Chunk.objects.filter(collection__name="copy").count() == paragraphs

    # 3. An import that fails half way (its paragraphs written, then the keyword index fails): nothing of it is
    # left in the collection, which the list shows failed with the reason, not up to date.
    def fail(*args, **kwargs):
        raise OSError("no space left on device")

    monkeypatch.setattr(_import, "_index", fail)
    _import_page(page, base, "broken copy", file)
    page.goto(f"{base}{ADMIN}/collection/")
    shown = _row(page, "broken copy").inner_text()
    assert "import failed" in shown and "the import stopped (OSError)" in shown and "up to date" not in shown, shown
    assert not Chunk.objects.filter(collection__name="broken copy").exists()
    screenshot(page, "collection-files-04-import-failed")
    assert page.outside_requests == []


def _import_page(page, base: str, name: str, file: Path) -> None:
    page.goto(f"{base}{ADMIN}/collectionfile/add/")
    page.select_option("#id_tenant", label="acme")
    page.fill("#id_name", name)
    page.set_input_files("#id_file", str(file))
    page.click("input[type=submit]")
    page.wait_for_selector(".messagelist .success")
    assert f"Import of {name} started" in page.inner_text(".messagelist")
