"""Issue 41's walk-through: an editor's whole day in Chromium, as a first-time editor would click through it, one
screenshot and one assertion on what the editor sees per step (var/test-artifacts/day-NN-*.png):

upload a real document through the admin's upload → preview its chunking → edit a paragraph → split one and merge it
back (its text exactly restored) → keep golden questions from "Try a search" (one answered, one control) →
evaluate (hit@1 shown) → measure two variants (the legend lists both) → apply one (before → after asked first) →
export from the collection's page and download the file (a collection file) → import it as a new collection (its
document and golden questions there) → upload a changed file of the same name (its next version) and read the diff
(the changed paragraph marked) → delete it to the trash (the confirmation names the golden question), restore it
(a search finds it again) → the gaps page lists a question an agent asked that nothing answers, with its count.

The tasks that read a file, write or read a collection file are held back while the request that queues them runs
and then run as the cluster runs them (outside that request); evaluate and measure run inline in their request
(django-q2 sync in test settings), so their pages land on a finished run. The document is one small HTML page
(eight paragraphs), the measure two search-time variants (nothing re-read): 75-110 s on this shared 2-core machine,
most of it the model reading and embedding.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django_q import tasks as q_tasks

from accounts.issuing import api_key_create
from accounts.models import Agent, Membership, Role, Tenant
from collections_app.models import Chunk, Collection, Document
from retrieval.models import Evaluation, GoldenQuestion, Measure
from retrieval.services.golden import GOLDEN_TABLE
from tests.conftest import client_for
from tests.files.documents import html_bytes
from tests.retrieval.services.golden.corpus import OFFICE, TRAVEL

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ADMIN = "/admin/collections_app"
PASSWORD = "a long editor's-day password"
HANDBOOK = [(1, "Handbook", ""), *OFFICE[1:], *TRAVEL[1:]]
# Version 2: the hotel refund changed, nothing else.
CHANGED = [(level, h, b.replace("140 euros", "160 euros")) for level, h, b in HANDBOOK]
ANSWERED = ("Where do staff park their cars?", "underground garage")
CONTROL = "Which volcano erupted in Iceland in 2010?"
UNANSWERABLE = "What is the airspeed velocity of an unladen swallow?"

_real_async_task = q_tasks.async_task


def _hold(monkeypatch) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
    held: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    monkeypatch.setattr(q_tasks, "async_task", lambda *args, **kwargs: held.append((args, kwargs)))
    return held


def _run(held, monkeypatch) -> None:
    """The held tasks, run as the cluster runs them: outside the request that queued them."""
    monkeypatch.setattr(q_tasks, "async_task", _real_async_task)
    for args, kwargs in held:
        q_tasks.async_task(*args, **kwargs)
    held.clear()


def _try_search(page, base: str, collection: Collection, question: str) -> None:
    page.goto(f"{base}/admin/retrieval/searchevent/try/{collection.pk}/")
    page.fill("#id_q", question)
    page.click("#try_search_form input[type=submit]")
    page.wait_for_selector("#search-trace")


def _editable(document: Document) -> list[str]:
    return [c.text for c in Chunk.objects.filter(document=document).editable().order_by("position__ordinal")]


def _upload(page, base: str, name: str, content: bytes, *, replace: bool = False) -> None:
    page.goto(f"{base}{ADMIN}/document/add/")
    page.select_option("#id_collection", label="handbook")
    page.set_input_files("#id_upload", files=[{"name": name, "mimeType": "text/html", "buffer": content}])
    if replace:
        page.check("#id_replace")
    page.click("input[name=_save]")
    page.wait_for_selector(".messagelist")
    assert page.locator(".errornote").count() == 0, page.inner_text("#content-main")


def test_an_editors_whole_day(offline_page, live_server, monkeypatch, settings, screenshot, tmp_path: Path):
    settings.KB_AUDIT_QUESTIONS = True  # the gaps page reads the questions agents asked
    tenant = Tenant.objects.create(name="acme")
    # An admin of the tenant: the gaps (the audit's questions) are the admins' page.
    User.objects.create_user("edna", password=PASSWORD, is_staff=True)
    Membership.objects.create(user=User.objects.get(username="edna"), tenant=tenant, role=Role.ADMIN)
    page, base = offline_page, live_server.url
    shot = iter(range(1, 100))

    def step(name: str) -> None:
        screenshot(page, f"day-{next(shot):02d}-{name}")

    page.goto(f"{base}/admin/")
    page.fill("#id_username", "edna")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")

    # 1. A collection, from the admin's form.
    page.goto(f"{base}{ADMIN}/collection/add/")
    page.fill("#id_name", "handbook")
    page.click("input[name=_save]")
    page.wait_for_selector(".messagelist .success")
    collection = Collection.objects.get(tenant=tenant, name="handbook")
    assert "handbook" in page.inner_text(".messagelist")
    step("collection-created")

    # 2. Upload a real document; its reading, held back, runs; the list shows it done.
    held = _hold(monkeypatch)
    _upload(page, base, "handbook.html", html_bytes(HANDBOOK))
    page.wait_for_selector("#result_list")
    document = Document.objects.get(collection=collection)
    status = f'[data-kb-doc="{document.pk}"][data-kb-field="status"]'
    assert page.inner_text(status) == "queued"
    _run(held, monkeypatch)
    page.wait_for_selector(f"{status} .kb-badge-done", timeout=30_000)
    document.refresh_from_db()
    paragraphs = int(page.inner_text(f'[data-kb-doc="{document.pk}"][data-kb-field="paragraphs"]'))
    assert paragraphs == len(_editable(document)) == len(HANDBOOK) - 1
    step("uploaded-done")

    # 3. Preview its chunking with other settings, beside the collection's.
    page.click("#result_list a:text('handbook.html')")
    page.wait_for_selector(".object-tools")
    document_url = page.url
    page.click(".object-tools a:text('Preview chunking')")
    page.select_option("#id_unit", "chars")
    page.fill("#id_size", "60")
    page.fill("#id_overlap", "0")
    page.click("#preview_form input[type=submit]")
    page.wait_for_selector(".kb-preview-side >> nth=1")
    sides = page.locator(".kb-preview-side")
    assert "Staff cars must be left" in sides.nth(0).inner_text() and sides.nth(1).locator("*").count() > 0
    step("preview")

    # 4. Edit a paragraph: the canteen closes later.
    page.goto(document_url)
    page.click("text=Edit paragraphs")
    page.wait_for_selector("#paragraph-numbers")
    texts = _editable(document)
    canteen = next(i for i, text in enumerate(texts) if "Lunch is served" in text)
    edited = texts[canteen].replace("two o'clock", "half past two")
    page.locator(f"#p{canteen} textarea").fill(edited)
    page.locator(f"#p{canteen} button[value=edit]").click()
    page.wait_for_selector("text=Paragraph saved and embedded again")
    assert page.locator(f"#p{canteen} textarea").input_value() == edited
    assert page.locator(f"#p{canteen} .kb-para-where").inner_text().endswith("edited")
    step("paragraph-edited")

    # 5. Split the hotels paragraph after its heading, then merge it back: exactly the text it was.
    before = _editable(document)
    hotels = next(i for i, text in enumerate(before) if "Hotel nights" in text)
    heading = before[hotels].index("\n\n")
    assert page.locator(f"#p{hotels} button[value=split]").is_disabled()
    page.locator(f"#p{hotels} textarea").click()
    page.keyboard.press("Control+Home")
    for _ in range(heading):
        page.keyboard.press("ArrowRight")
    page.locator(f"#p{hotels} button[value=split]").click()
    page.wait_for_selector("text=Paragraph split in two")
    assert page.locator(f"#p{hotels} textarea").input_value() == before[hotels][:heading]
    step("split")
    page.locator(f"#p{hotels} button[value=merge]").click()
    page.wait_for_selector("text=Paragraphs merged")
    assert page.locator(f"#p{hotels} textarea").input_value() == before[hotels]
    assert _editable(document) == before
    step("merged-back")

    # 6. Golden questions from "Try a search": one the parking paragraph answers, and a control.
    _try_search(page, base, collection, ANSWERED[0])
    first = page.locator("#search-results .kb-result").first
    assert ANSWERED[1] in first.locator("p").inner_text()
    first.locator("button:text('this answers it')").click()
    page.wait_for_selector(".messagelist .success")
    assert "Golden question added" in page.inner_text(".messagelist")
    _try_search(page, base, collection, CONTROL)
    page.click("button:text('nothing here should answer')")
    page.wait_for_selector(".messagelist .success")
    assert "as a control" in page.inner_text(".messagelist")
    page.goto(f"{base}{ADMIN}/collection/{collection.pk}/change/")
    page.click(".object-tools a:text-is('Golden questions')")
    page.wait_for_selector("#result_list")
    listed = page.inner_text("#result_list")
    assert ANSWERED[0] in listed and CONTROL in listed and "control: nothing should answer" in listed
    step("golden-questions")

    # 7. Evaluate: the evaluation finishes, its page shows hit@1.
    page.click(".object-tools a:text('Evaluate')")
    page.click("#golden_tool_form input[type=submit]")
    page.wait_for_selector("#evaluation-rows")
    evaluation = Evaluation.objects.get(collection=collection)
    assert evaluation.status == "done" and evaluation.metrics["hit_at_1"] == 1.0
    metrics = page.inner_text(".kb-evaluation-metrics")
    assert "hit@1" in metrics and "1 of 1" in metrics, metrics
    assert page.locator("#evaluation-rows tr.kb-found").count() == 1
    step("evaluated")

    # 8. Measure two variants (how many neighbours a hit brings): finished, the legend lists both.
    page.goto(f"{base}{ADMIN}/collection/{collection.pk}/change/")
    page.click(".object-tools a:text-is('Measure')")
    page.wait_for_selector("#golden_tool_form")
    page.fill("#id_variants", "around=0\naround=2")
    page.click("#golden_tool_form input[type=submit]")
    page.wait_for_selector(".kb-measure table")
    measure = Measure.objects.get(collection=collection)
    assert measure.status == "done"
    legend = page.locator("#kb-variant-legend li")
    assert legend.count() == 2
    assert "around = 0" in legend.nth(0).inner_text() and "around = 2" in legend.nth(1).inner_text()
    step("measured")

    # 9. Apply the first: asked first (before → after), then applied.
    assert collection.around is None  # the server's default: the page says "not set: 1", never "None"
    page.locator(".kb-measure tbody tr").first.locator("button:text('Apply this variant')").click()
    page.wait_for_selector("#kb-apply-changes")
    row = page.locator("#kb-apply-changes tr[data-setting=around]")
    assert (row.locator(".kb-before").inner_text(), row.locator(".kb-after").inner_text()) == ("not set: 1", "0")
    step("apply-asks-first")
    page.click("input[value='Apply']")
    page.wait_for_selector(".messagelist")
    collection.refresh_from_db()
    assert collection.around == 0
    assert "Variant 1 saved on handbook." in page.inner_text(".messagelist")
    step("applied")

    # 10. Export from the collection's page; the Download link gives a collection file.
    page.goto(f"{base}{ADMIN}/collection/{collection.pk}/change/")
    page.click(".object-tools a:text-is('Export')")
    held = _hold(monkeypatch)
    page.click("input[type=submit][value='Yes, write the collection file']")
    page.wait_for_selector(".messagelist .success")
    _run(held, monkeypatch)
    link = page.wait_for_selector(".messagelist a:text('Download handbook.db')", timeout=30_000)
    step("export-ready")
    with page.expect_download() as download:
        link.click()
    exported = tmp_path / "handbook.db"
    download.value.save_as(exported)
    with sqlite3.connect(exported) as store:
        assert store.execute("SELECT count(*) FROM agents_chunks").fetchone()[0] == paragraphs
        assert store.execute(f"SELECT count(*) FROM {GOLDEN_TABLE.name}").fetchone()[0] == 2

    # 11. Import the downloaded file as a new collection: its document and golden questions are there.
    held = _hold(monkeypatch)
    page.goto(f"{base}{ADMIN}/collectionfile/add/")
    page.select_option("#id_tenant", label="acme")
    page.fill("#id_name", "handbook copy")
    page.set_input_files("#id_file", str(exported))
    page.click("input[type=submit]")
    page.wait_for_selector(".messagelist .success")
    assert "Import of handbook copy started" in page.inner_text(".messagelist")
    _run(held, monkeypatch)
    copy = Collection.objects.get(tenant=tenant, name="handbook copy")
    page.goto(f"{base}{ADMIN}/document/?collection__id__exact={copy.pk}")
    assert "handbook.html" in page.inner_text("#result_list")
    step("imported-documents")
    page.goto(f"{base}/admin/retrieval/goldenquestion/?collection__id__exact={copy.pk}")
    listed = page.inner_text("#result_list")
    assert ANSWERED[0] in listed and CONTROL in listed
    step("imported-golden-questions")

    # 12. A changed file of the same name: its next version; the diff marks the changed paragraph.
    held = _hold(monkeypatch)
    _upload(page, base, "handbook.html", html_bytes(CHANGED), replace=True)
    assert page.url == document_url  # the document's own page, saying what happens
    assert "version 2 is being read; the version before answers until it is done" in page.inner_text(".messagelist")
    assert page.inner_text(".field-status_shown .readonly") == "queued"  # no worker has it yet: not "parsing 0%"
    _run(held, monkeypatch)
    document.refresh_from_db()
    assert document.version == 2 and document.status == "done", document.error
    page.reload()
    page.click("a.kb-version-compare")
    page.wait_for_selector("table.kb-diff")
    assert "1 paragraph changed" in page.inner_text(".kb-diff-summary")
    changed = page.locator("tr.kb-diff-changed")
    assert changed.count() == 1 and "Hotel nights" in changed.inner_text()
    assert changed.locator("del").inner_text() == "140" and changed.locator("ins").inner_text() == "160"
    step("version-diff")

    # 13. Delete to the trash: the confirmation names the golden question; the trash lists the document; restored,
    # a search finds it again.
    page.goto(f"{base}{ADMIN}/document/{document.pk}/delete/")
    page.locator("#kb-trash-confirmation").wait_for()
    assert page.locator(".kb-golden-questions li").all_inner_texts() == [ANSWERED[0]]
    step("delete-names-the-golden-question")
    page.click("#kb-trash-confirmation input[type=submit]")
    page.wait_for_selector(".messagelist .success")
    assert "Moved handbook.html to the trash" in page.inner_text(".messagelist")
    page.click("#kb-trash-link")
    page.wait_for_selector("#kb-trash-list")
    row = page.locator("#kb-trash-list tbody tr", has_text="handbook.html")
    assert row.count() == 1 and "edna" in row.inner_text()
    step("trash-lists-it")
    _try_search(page, base, collection, ANSWERED[0])
    assert ANSWERED[1] not in page.inner_text("#content-main")  # gone from search while in the trash
    page.goto(f"{base}{ADMIN}/document/trash/?collection={collection.pk}")
    page.locator("#kb-trash-list tbody tr", has_text="handbook.html").locator("button[name=restore]").click()
    page.wait_for_selector(".messagelist .success")
    assert "Restored handbook.html" in page.inner_text(".messagelist")
    _try_search(page, base, collection, ANSWERED[0])
    assert ANSWERED[1] in page.locator("#search-results .kb-result").first.inner_text()
    step("restored-found-again")

    # 14. Gaps: an agent asked twice what nothing answers; the collection's Gaps page lists it with its count.
    agent = Agent.objects.create(tenant=tenant, name="support-bot")
    agent.collections.add(collection)
    key = client_for(api_key_create(tenant=tenant, role=Role.VIEWER, agent=agent, readers="any").secret)
    for _ in range(2):
        assert key.post("/api/search", {"query": UNANSWERABLE}, format="json").status_code == 200
    page.goto(f"{base}{ADMIN}/collection/{collection.pk}/change/")
    page.click(".object-tools a:text-is('Gaps')")
    page.wait_for_selector("#gaps")
    gap = page.locator("tr.kb-gap", has_text=UNANSWERABLE)
    assert gap.count() == 1 and gap.locator(".kb-gap-count").inner_text().strip() == "2×"
    step("gaps")

    assert GoldenQuestion.objects.filter(collection=collection).count() == 2
    assert page.outside_requests == []
