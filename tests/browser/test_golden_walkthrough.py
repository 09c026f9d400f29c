"""Golden questions from end to end, in Chromium: an editor keeps questions from "Try a search" ("this answers
it", "nothing here should answer"), reads them on the golden questions page, evaluates the collection, measures
two designs from the admin (result table, both charts), applies the worse one, and the re-index it offers is held
back by the golden gate: the build's page shows both evaluations side by side with "Cut over anyway".

A tiny corpus (two short pages, eight paragraphs) read for real; every task runs inline in the request that
queues it (test settings: django-q2 sync), so each page lands on a finished run. Screenshots:
var/test-artifacts/golden-*.png.
"""

from __future__ import annotations

import io

import pytest
from django.contrib.auth.models import User

from accounts.models import Membership, Role, Tenant
from collections_app.models import Build, Chunk, Document
from collections_app.services.collections import collection_create
from collections_app.services.documents import document_create
from retrieval.models import Evaluation, GoldenQuestion, Measure
from tests.files.documents import html_bytes
from tests.retrieval.services.golden.corpus import OFFICE, TRAVEL

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "a long golden-questions password"
ANSWERED = {"Where do staff park their cars?": "underground garage", "How are hotel nights refunded?": "140 euros"}
CONTROL = "Which volcano erupted in Iceland in 2010?"
# The worse design: twenty characters a paragraph, so no paragraph holds a whole marker any more.
VARIANTS = "chunk_strategy=fixed chunk_size=20 chunk_size_unit=chars chunk_overlap=0\nchunk_strategy=structure"


@pytest.fixture
def handbook():
    tenant = Tenant.objects.create(name="acme")
    admin = User.objects.create_user("ada", password=PASSWORD, is_staff=True)
    Membership.objects.create(user=admin, tenant=tenant, role=Role.ADMIN)
    # around 0: a marker is found only where one paragraph holds it (no neighbours stitched back).
    collection = collection_create(tenant=tenant, name="handbook", golden_gate=True, around=0)
    for name, sections in (("office.html", OFFICE), ("travel.html", TRAVEL)):
        # Committed at once (transactional test): the ingestion task runs inline.
        document_create(collection=collection, filename=name, content=io.BytesIO(html_bytes(sections)),
                        uploaded_by="ada")  # fmt: skip
    assert list(Document.objects.filter(collection=collection).values_list("status", flat=True)) == ["done"] * 2
    return collection


def _search(page, base: str, collection, question: str) -> None:
    page.goto(f"{base}/admin/retrieval/searchevent/try/{collection.pk}/")
    page.fill("#id_q", question)
    page.click("#try_search_form input[type=submit]")
    page.wait_for_selector("#search-trace")


def test_keep_evaluate_measure_apply_and_the_gate_holds_the_worse_design_back(
    offline_page, live_server, handbook, screenshot
):
    page, base, collection = offline_page, live_server.url, handbook
    page.goto(f"{base}/admin/")
    page.fill("#id_username", "ada")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")

    # 1. Try a search; "this answers it" on the first result keeps the question, its paragraph and a marker.
    for number, (question, words) in enumerate(ANSWERED.items(), start=1):
        _search(page, base, collection, question)
        first = page.locator("#search-results .kb-result").first
        assert words in first.locator("p").inner_text()
        if number == 1:
            screenshot(page, "golden-01-try-a-search")
        first.locator("button:text('this answers it')").click()
        page.wait_for_selector(".messagelist .success")
        assert "Golden question added answered by that paragraph and the marker" in page.inner_text(".messagelist")
        assert page.locator("#search-results").count() == 1  # back on the search, its answer shown again
    # Asked twice: said so, nothing added.
    page.locator("#search-results .kb-result button:text('this answers it')").first.click()
    page.wait_for_selector(".messagelist .warning")
    assert "already holds this question" in page.inner_text(".messagelist")

    # 2. A question nothing should answer: kept as a control.
    _search(page, base, collection, CONTROL)
    page.click("button:text('nothing here should answer')")
    page.wait_for_selector(".messagelist .success")
    assert "as a control" in page.inner_text(".messagelist")
    screenshot(page, "golden-02-control-kept")
    kept = GoldenQuestion.objects.filter(collection=collection)
    assert kept.count() == 3 and kept.filter(control=True).get().question == CONTROL
    for golden in kept.filter(control=False):
        paragraph = Chunk.objects.get(pk=golden.paragraphs[0])
        assert ANSWERED[golden.question] in paragraph.text and golden.markers[0] in paragraph.text

    # 3. The golden questions page, from the collection's: both kinds listed.
    page.goto(f"{base}/admin/collections_app/collection/{collection.pk}/change/")
    page.click(".object-tools a:text('Golden questions')")
    page.wait_for_selector("#result_list")
    listed = page.inner_text("#result_list")
    assert all(question in listed for question in [*ANSWERED, CONTROL])
    assert "control: nothing should answer" in listed and "1 marker, 1 paragraph" in listed
    screenshot(page, "golden-03-questions")

    # 4. Evaluate: the evaluation's page with a row per question.
    page.click(".object-tools a:text('Evaluate')")
    page.click("#golden_tool_form input[type=submit]")
    page.wait_for_selector("#evaluation-rows")
    assert page.locator("#evaluation-rows tbody tr").count() == 3
    assert page.locator("#evaluation-rows tr.kb-found").count() == 2
    assert Evaluation.objects.get(collection=collection).metrics["hit_at_5"] == 1.0
    screenshot(page, "golden-04-evaluation")

    # 5. Measure two designs from the admin: the result page with its table and both charts.
    page.goto(f"{base}/admin/retrieval/goldenquestion/?collection__id__exact={collection.pk}")
    page.click(".object-tools a:text('Measure')")
    page.wait_for_selector("#golden_tool_form")
    screenshot(page, "golden-05-measure-form")
    page.fill("#id_variants", VARIANTS)
    page.click("#golden_tool_form input[type=submit]")
    page.wait_for_selector(".kb-measure table")
    measure = Measure.objects.get(collection=collection)
    assert measure.status == "done"
    assert "variant 2 of 2" in page.inner_text(".field-progress_shown")
    assert page.locator(".kb-measure tbody tr").count() == 2
    assert page.locator("svg.kb-chart, .kb-chart").count() == 2
    small, whole = (v["metrics"]["hit_at_5"] for v in measure.variants)
    assert small < whole == 1.0
    screenshot(page, "golden-06-measure-result")

    # 6. Apply the worse design (the first): asked first (each setting before → after, the documents marked
    # stale), then its settings saved, the documents stale, the re-index offered.
    page.locator(".kb-measure tbody tr").first.locator("button:text('Apply this variant')").click()
    page.wait_for_selector("#kb-apply-changes")
    assert "2 documents will be marked stale" in page.inner_text("#kb-apply-stale")
    page.click("input[value='Apply']")
    page.wait_for_selector("input[value='Yes, re-index']")
    assert "2 document(s) are stale" in page.inner_text(".messagelist")
    collection.refresh_from_db()
    assert (collection.chunk_strategy, collection.chunk_size) == ("fixed", 20)
    serving = sorted(Chunk.objects.filter(collection=collection).live().paragraphs().values_list("text", flat=True))

    # 7. The re-index: the golden gate holds it back; searches keep reading what they read.
    page.click("input[value='Yes, re-index']")
    page.wait_for_selector(".messagelist")
    build = Build.objects.filter(collection=collection, built_from__startswith="re-index").latest("built_at")
    assert build.gate_passed is False
    assert sorted(Chunk.objects.filter(collection=collection).live().paragraphs().values_list("text", flat=True)) == (
        serving
    )
    page.goto(f"{base}/admin/collections_app/build/{build.pk}/change/")
    page.wait_for_selector("table.kb-gate")
    gate = page.text_content("table.kb-gate") or ""
    assert "serving build" in gate and "this build" in gate and "hit_at_5" in gate
    assert "held back" in page.inner_text("#content-main")
    assert page.is_visible("#kb-cut-over")
    screenshot(page, "golden-07-gate-held-back")

    # 8. An admin cuts it over anyway: recorded on the new build.
    page.click("#kb-cut-over")
    page.wait_for_selector(".messagelist")
    assert "now answers searches" in page.inner_text(".messagelist")
    forced = Build.objects.filter(collection=collection).latest("built_at")
    assert forced.gate["cut_over_anyway"]["by"] == "ada"
    screenshot(page, "golden-08-cut-over-anyway")
    assert page.outside_requests == []
