"""Issue 41, finding 4, in Chromium: the measure's result page stars only values that are better than another
variant's (none where all tie, none on "controls answered" of an unfloored run), names variants in its charts by
number with a legend listing each in full, and "Apply this variant" asks first on a page that says each setting
before → after and how many documents will be marked stale, with Apply and "No, take me back".
Screenshots: var/test-artifacts/measure-*.png."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth.models import User

from accounts.models import Membership, Role, Tenant
from collections_app.models import Collection, Document
from collections_app.services.collections import collection_create
from collections_app.services.documents import document_create
from retrieval.models import Measure
from retrieval.services.measure import floor_read_off, variants_resolve
from tests.files.documents import html_bytes
from tests.retrieval.services.golden.corpus import OFFICE, TRAVEL

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "a long measure-page password"
# Long enough that a label cut to the chart's margin could not tell the two apart.
SMALL = {"chunk_strategy": "fixed", "chunk_size": 20, "chunk_size_unit": "chars", "chunk_overlap": 0}
LARGE = {"chunk_strategy": "fixed", "chunk_size": 400, "chunk_size_unit": "chars", "chunk_overlap": 0}


def question(rank, score, *, control=False):
    return {"control": control, "rank": rank, "answer_score": score if rank else None, "best_score": score,
            "question": "q", "ndcg": 1.0 if rank == 1 else 0.0}  # fmt: skip


def variant(collection: Collection, asked: dict, metrics: dict, questions: list) -> dict:
    settings = variants_resolve(collection=collection, variants=[asked], preset=None)[0]
    return {"settings": settings, "changed": list(asked), "metrics": metrics, "questions": questions,
            "floor": floor_read_off(questions), "paragraphs": 8}  # fmt: skip


@pytest.fixture
def measure() -> Measure:
    tenant = Tenant.objects.create(name="acme")
    editor = User.objects.create_user("edna", password=PASSWORD, is_staff=True)
    Membership.objects.create(user=editor, tenant=tenant, role=Role.EDITOR)
    collection = collection_create(tenant=tenant, name="handbook")
    for name, sections in (("office.html", OFFICE), ("travel.html", TRAVEL)):
        document_create(collection=collection, filename=name, content=io.BytesIO(html_bytes(sections)),
                        uploaded_by="edna")  # fmt: skip
    assert list(Document.objects.filter(collection=collection).values_list("status", flat=True)) == ["done"] * 2
    # Unfloored: every control answers in both; hit@5 ties; nDCG@10 and MRR tell them apart.
    small = variant(collection, SMALL, {"ndcg_at_10": 0.5, "hit_at_5": 1.0, "hit_at_1": 0.5, "mrr": 0.5,
                                        "found": 2, "controls": 1, "controls_answered": 1},
                    [question(1, 0.9), question(3, 0.7), question(None, 0.8, control=True)])  # fmt: skip
    large = variant(collection, LARGE, {"ndcg_at_10": 0.9, "hit_at_5": 1.0, "hit_at_1": 1.0, "mrr": 1.0,
                                        "found": 2, "controls": 1, "controls_answered": 1},
                    [question(1, 0.91), question(1, 0.86), question(None, 0.8, control=True)])  # fmt: skip
    return Measure.objects.create(tenant=tenant, collection=collection, status="done", variants=[small, large],
                                  request={"floor": None}, floor={"best_variant": 1, "note": ""})  # fmt: skip


def test_stars_legend_and_a_confirmation_before_apply(offline_page, live_server, measure, screenshot):
    page, base = offline_page, live_server.url
    page.goto(f"{base}/admin/")
    page.fill("#id_username", "edna")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")
    page.goto(f"{base}/admin/retrieval/measure/{measure.pk}/change/")
    page.wait_for_selector(".kb-measure table")

    # Stars: only where one variant is better (nDCG@10, hit@1, MRR of the second); none on the ties.
    columns = [(c or "").strip() for c in page.locator(".kb-measure thead th").all_text_contents()]
    rows = page.locator(".kb-measure tbody tr")
    starred = {(r, columns[c + 1]) for r in range(2) for c, cell in enumerate(rows.nth(r).locator("td").all())
               if "★" in cell.inner_text()}  # fmt: skip
    assert starred == {(1, "nDCG@10"), (1, "hit@1"), (1, "MRR")}
    assert page.locator("#kb-unfloored-note").is_visible()

    # Charts: variants by number, never a cut setting list; the legend spells each out.
    for chart in page.locator("svg.kb-chart").all():
        labels = [(t or "").strip() for t in chart.locator("text").all_text_contents()]
        assert "variant 1" in labels and "variant 2" in labels
        assert not any("chunk_" in label for label in labels)
    legend = page.locator("#kb-variant-legend li")
    assert legend.count() == 2
    assert "chunk_size = 20" in legend.nth(0).inner_text() and "chunk_size = 400" in legend.nth(1).inner_text()
    legend.nth(1).scroll_into_view_if_needed()
    screenshot(page, "measure-1-stars-and-legend")

    # Apply asks first; "No, take me back" changes nothing.
    before = Collection.objects.get(pk=measure.collection_id).chunk_size
    rows.nth(0).locator("button:text('Apply this variant')").click()
    page.wait_for_selector("#kb-apply-changes")
    size = page.locator("#kb-apply-changes tr[data-setting=chunk_size]")
    assert size.locator(".kb-before").inner_text() == str(before)
    assert size.locator(".kb-after").inner_text() == "20"
    assert page.locator("#kb-apply-changes tr[data-setting=chunk_strategy] .kb-after").inner_text() == "fixed"
    assert "2 documents will be marked stale" in page.inner_text("#kb-apply-stale")
    assert page.locator("a:text('No, take me back')").is_visible()
    screenshot(page, "measure-2-apply-asks-first")
    page.click("a:text('No, take me back')")
    page.wait_for_selector(".kb-measure table")
    collection = Collection.objects.get(pk=measure.collection_id)
    assert collection.chunk_size == before and not collection.documents.filter(stale=True).exists()

    # Apply: saved, the documents stale, the re-index offered.
    rows.nth(0).locator("button:text('Apply this variant')").click()
    page.wait_for_selector("#kb-apply-changes")
    page.click("input[value='Apply']")
    page.wait_for_selector("input[value='Yes, re-index']")
    assert "2 document(s) are stale" in page.inner_text(".messagelist")
    collection.refresh_from_db()
    assert (collection.chunk_strategy, collection.chunk_size) == ("fixed", 20)
    screenshot(page, "measure-3-applied")
    assert page.outside_requests == []
