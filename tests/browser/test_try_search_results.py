"""The editor's "Try a search" and the searches audit, in Chromium: each result's badge, score, marked match
and its fused, keyword and vector ranks; an empty answer's reason, best score and floor; then the audit list's
one-word refused (its meaning on hover) and the documents each search returned. Screenshots:
var/test-artifacts/try-search-results.png, try-search-empty.png, search-audit-list.png, search-audit-event.png.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from accounts.issuing import api_key_create
from accounts.models import Membership, Role, Tenant
from collections_app.models import Document
from collections_app.services.collections import collection_create
from retrieval.models import SearchEvent
from tests.conftest import client_for
from tests.files.documents import HANDBOOK, html_bytes
from tests.margins import assert_falls_short, best_cosine

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ANSWERED = "how are refunds paid back to my card"
UNRELATED = "which volcano erupted in Iceland in 2010"


def _log_in(page, base: str, name: str, password: str) -> None:
    page.goto(f"{base}/admin/")
    page.fill("#id_username", name)
    page.fill("#id_password", password)
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")


def test_an_editor_reads_why_each_result_ranked_and_why_an_answer_is_empty_then_audits_both(
    offline_page, live_server, upload, screenshot
):
    tenant = Tenant.objects.create(name="acme")
    collection = collection_create(tenant=tenant, name="shop")
    editor_key = client_for(api_key_create(tenant=tenant, role=Role.EDITOR).secret)
    assert upload(editor_key, collection, "handbook.html", html_bytes(HANDBOOK)).status_code == 202
    document = Document.objects.get(collection=collection)
    editor = User.objects.create_user("edna", password="a long try-search password", is_staff=True)
    Membership.objects.create(user=editor, tenant=tenant, role=Role.ADMIN)
    page, base = offline_page, live_server.url
    _log_in(page, base, "edna", "a long try-search password")

    # 1. A question the handbook answers: badge, score, ranks and the matched paragraph marked.
    page.goto(f"{base}/admin/retrieval/searchevent/try/{collection.pk}/")
    page.fill("#id_q", ANSWERED)
    page.click("#try_search_form input[type=submit]")
    page.wait_for_selector("#search-trace")
    first = page.locator("#search-results .kb-result").first
    where = first.locator(".kb-paragraph-where").inner_text()
    badge = first.locator(".kb-badge").inner_text()
    assert badge in ("supported", "weak"), where
    assert "score 0." in where
    assert "fused #1" in where and "keyword #" in where and "vector #" in where
    assert "keyword #—" not in where and "vector #—" not in where  # found by its words and by its meaning
    # Each paragraph that matched is marked where it lies in the window (the search's `matches`), with its score.
    marks = first.locator("mark.kb-match")
    assert marks.count() >= 1
    assert any("original card" in text for text in marks.all_inner_texts())
    assert all("matched paragraph, score" in (m.get_attribute("title") or "") for m in marks.all())
    screenshot(page, "try-search-results")

    # 2. An unrelated question: nothing clears the floor, and the page says by how much.
    page.fill("#id_q", UNRELATED)
    page.click("#try_search_form input[type=submit]")
    page.wait_for_selector("#search-trace")
    empty = page.inner_text("#empty-answer")
    floor = float(page.inner_text("#empty-answer .kb-floor"))
    best = best_cosine(collection, UNRELATED)
    assert_falls_short(best, floor, what="the unrelated question's best paragraph")
    assert "below_floor" in empty and "none scored at or above the floor" in empty
    assert page.inner_text("#empty-answer .kb-best-score") == f"{best:.3f}"
    assert float(page.inner_text("#empty-answer .kb-margin")) < 0
    screenshot(page, "try-search-empty")

    # 3. The audit: refused in one word (no judge: could not refuse), its meaning on hover; the documents.
    page.goto(f"{base}/admin/retrieval/searchevent/")
    page.wait_for_selector("#result_list")
    rows = page.locator("#result_list tbody tr")
    assert rows.count() == 2
    refused = rows.first.locator(".kb-refused")
    assert refused.inner_text() == "no judge"
    assert (refused.get_attribute("title") or "").startswith("no judge: this search could not refuse")
    refused.hover()
    answered_row = rows.nth(1)  # newest first: the answered search is the older one
    assert answered_row.locator(".kb-documents").inner_text() == "handbook.html"
    assert rows.first.locator("td.field-documents_listed").inner_text() == "—"
    width, room = page.eval_on_selector("#changelist .results", "r => [r.scrollWidth, r.clientWidth]")
    assert width <= room, f"the audit list is {width} px wide in {room} px: its last columns are cut off"
    screenshot(page, "search-audit-list")

    answered = SearchEvent.objects.filter(tenant=tenant, results__gt=0).get()
    assert answered.documents == [str(document.pk)]
    page.goto(f"{base}/admin/retrieval/searchevent/{answered.pk}/change/")
    page.wait_for_selector("#content-main")
    returned = page.locator("ol.kb-returned li a")
    assert returned.count() == 1 and returned.inner_text() == "handbook.html"
    assert "no judge: this search could not refuse (no judge configured" in page.inner_text("#content-main")
    screenshot(page, "search-audit-event")
    returned.click()
    page.wait_for_selector("#content-main")
    assert f"/document/{document.pk}/change/" in page.url
