"""The gaps page in Chromium: a question an agent asked three times and nothing answered is listed once (3 times) on the
collection's "Gaps" page; "Try a search" opens it in try-a-search, "Add as golden question" opens the golden
question form with the collection and the question filled in ("Add as a control" ticks control, and saves), and
"Dismiss" hides it. Screenshots: var/test-artifacts/gaps-*.png.
"""

from __future__ import annotations

import io

import pytest
from django.contrib.auth.models import User

from accounts.issuing import api_key_create
from accounts.models import Agent, Membership, Role, Tenant
from collections_app.models import Document
from collections_app.services.collections import collection_create
from collections_app.services.documents import document_create
from retrieval.models import GapDismissal, GoldenQuestion
from tests.conftest import client_for
from tests.files.documents import html_bytes
from tests.retrieval.services.golden.corpus import OFFICE, TRAVEL

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "a long gaps-page password"
UNANSWERABLE = "Which volcano erupted in Iceland in 2010?"
ANSWERED = "Where do staff park their cars?"


@pytest.fixture
def asked(settings):
    """The handbook, read for real, and real searches by an agent's key: one question three times (nothing
    answers it), one the handbook answers."""
    settings.KB_AUDIT_QUESTIONS = True
    tenant = Tenant.objects.create(name="acme")
    admin = User.objects.create_user("ada", password=PASSWORD, is_staff=True)
    Membership.objects.create(user=admin, tenant=tenant, role=Role.ADMIN)
    collection = collection_create(tenant=tenant, name="handbook")
    for name, sections in (("office.html", OFFICE), ("travel.html", TRAVEL)):
        document_create(collection=collection, filename=name, content=io.BytesIO(html_bytes(sections)),
                        uploaded_by="ada")  # fmt: skip
    assert list(Document.objects.filter(collection=collection).values_list("status", flat=True)) == ["done"] * 2
    agent = Agent.objects.create(tenant=tenant, name="support-bot")
    agent.collections.add(collection)
    key = client_for(api_key_create(tenant=tenant, role=Role.VIEWER, agent=agent, readers="any").secret)
    for question in (UNANSWERABLE, UNANSWERABLE, UNANSWERABLE, ANSWERED):
        assert key.post("/api/search", {"query": question}, format="json").status_code == 200
    return collection


def test_the_gaps_page_lists_the_question_opens_the_golden_form_prefilled_and_dismisses(
    offline_page, live_server, asked, screenshot
):
    page, base, collection = offline_page, live_server.url, asked
    page.goto(f"{base}/admin/")
    page.fill("#id_username", "ada")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")

    # From the collection's own page.
    page.goto(f"{base}/admin/collections_app/collection/{collection.pk}/change/")
    page.click(".object-tools a:text-is('Gaps')")
    page.wait_for_selector("#gaps")
    rows = page.locator("tr.kb-gap")
    assert rows.count() == 1  # the answered question is not a gap
    row = rows.first
    assert row.locator(".kb-gap-question").inner_text().strip() == UNANSWERABLE
    assert row.locator(".kb-gap-count").inner_text().strip() == "3×"
    assert "support-bot" in row.inner_text() and "nothing" in row.inner_text()
    assert "Question recording (KB_AUDIT_QUESTIONS) is on" in page.inner_text("#gaps-recording")
    assert row.locator(".kb-gap-dismiss button").is_visible()
    screenshot(page, "gaps-01-listed")

    # Try a search: the question is in the form, searched.
    row.locator("a.kb-gap-try").click()
    page.wait_for_selector("#search-trace")
    assert page.input_value("#id_q") == UNANSWERABLE
    assert page.locator("#empty-answer").is_visible()
    page.go_back()

    # Add as golden question: the form is filled in with the collection and the question.
    page.wait_for_selector("#gaps")
    page.locator("tr.kb-gap a.kb-gap-golden").click()
    page.wait_for_selector("#goldenquestion_form")
    assert page.input_value("#id_question") == UNANSWERABLE
    assert page.input_value("#id_collection") == str(collection.pk)
    assert not page.is_checked("#id_control")
    screenshot(page, "gaps-02-golden-form-prefilled")
    page.go_back()

    # Add as a control: ticked, and saved as one.
    page.wait_for_selector("#gaps")
    page.locator("tr.kb-gap a.kb-gap-control").click()
    page.wait_for_selector("#goldenquestion_form")
    assert page.is_checked("#id_control") and page.input_value("#id_question") == UNANSWERABLE
    page.click("input[name=_save]")
    page.wait_for_selector(".messagelist .success")
    assert GoldenQuestion.objects.get(collection=collection, question=UNANSWERABLE).control is True

    # Dismiss: hidden, and the page says one is hidden until asked again. Try-a-search did not bring it back
    # (the admin's own searches are not counted).
    page.goto(f"{base}/admin/retrieval/gapdismissal/gaps/{collection.pk}/")
    page.locator("tr.kb-gap .kb-gap-dismiss button").click()
    page.wait_for_selector(".messagelist .success")
    assert "hidden until it is asked again" in page.inner_text(".messagelist")
    assert page.locator("tr.kb-gap").count() == 0
    assert "No gaps" in page.inner_text("#gaps")
    assert "1 dismissed gap hidden" in page.inner_text(".kb-dismissed")
    assert GapDismissal.objects.filter(collection=collection).count() == 1
    screenshot(page, "gaps-03-dismissed")
