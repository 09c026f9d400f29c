"""Results that read right: what matched is marked in the text and cited, block boundaries are paragraph breaks,
a cut block is rejoined with one space and its overlap printed once, and a long run splits under the ceiling."""

from __future__ import annotations

import pytest

from collections_app.models import Chunk, Collection
from retrieval.selectors.search import Hit, window_split
from retrieval.selectors.search._window import Window
from tests.files.documents import docx_bytes, html_bytes, pdf_bytes
from tests.margins import assert_leads, cosines

POLICY = [
    (0, "Procurement policy", ""),
    (1, "1 Scope", "This policy applies to every purchase made on behalf of the company by any employee."),
    (2, "1.1 Approval", "Purchases above 5,000 EUR need the approval of the finance director before ordering."),
    (1, "2 Payment terms", "Invoices are paid within thirty days of receipt, by bank transfer to the supplier."),
    (1, "3 Suppliers", "New suppliers are checked against the sanctions list before their first order."),
]
PAYMENT = "When are supplier invoices paid?"


def search(client, **body):
    response = client.post("/api/search", body, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def configure(client, collection: Collection, **settings) -> None:
    answer = client.patch(f"/api/manage/collections/{collection.pk}", settings, format="json")
    assert answer.status_code == 200, answer.json()


def chunk(paragraph_id: str) -> Chunk:
    return Chunk.objects.get(pk=paragraph_id)


@pytest.fixture
def policy(cast, collection, upload) -> Collection:
    configure(cast.editor, collection, min_score=0)  # every paragraph a hit: matches beside their neighbours
    assert upload(cast.editor, collection, "policy.docx", docx_bytes(POLICY)).status_code == 202
    return collection


def test_matches_mark_each_matched_paragraph_and_the_result_cites_the_best_one(cast, policy):
    best, runner_up = cosines(policy, PAYMENT)[:2]
    assert "Invoices" in best.text
    assert_leads(best.score, runner_up.score, what="the payment terms paragraph")

    [result] = search(cast.viewer, query=PAYMENT, top_n=3, around=1)["results"]
    matches = result["matches"]
    assert len(matches) == 3 and result["passages"] >= 3
    assert [m["score"] for m in matches] == sorted((m["score"] for m in matches), reverse=True)
    for match in matches:  # each offset pair spans exactly the paragraph that matched
        assert result["text"][match["start"] : match["end"]] == chunk(match["paragraph_id"]).text
    payment = chunk(matches[0]["paragraph_id"])
    assert "Invoices are paid" in payment.text
    # Cited by its best match, not by the run's first paragraph (the run starts under "1 Scope").
    assert result["chunk_id"] == str(payment.pk) and result["score"] == matches[0]["score"]
    assert result["section"] == payment.section == ["2 Payment terms"]
    assert not result["text"].startswith(payment.text)


def test_the_page_of_a_result_is_its_matched_paragraphs_not_the_first_of_its_run(cast, collection, upload):
    pages = [
        [("Approval", "Purchases above 5,000 EUR need the approval of the finance director before ordering.")],
        [("Payment terms", "Invoices are paid within thirty days of receipt, by bank transfer to the supplier.")],
    ]
    upload(cast.editor, collection, "policy.pdf", pdf_bytes(pages))
    [result, *_] = search(cast.viewer, query=PAYMENT, top_n=1, around=1)["results"]
    assert result["passages"] == 2 and result["text"].index("Purchases") < result["text"].index("Invoices")
    assert result["page"] == 2 == chunk(result["matches"][0]["paragraph_id"]).page
    assert "\n\nPayment terms" in result["text"]  # a new page is a new block


RULES = " ".join(
    f"Rule {n}: a refund for order class {n} reaches the card within {n + 2} working days." for n in range(12)
)


@pytest.fixture
def cut_into_pieces(cast, collection, upload) -> Collection:
    """`fixed` pieces of 200 characters repeating 40: one long block cut into several paragraphs."""
    configure(cast.editor, collection, chunk_strategy="fixed", chunk_size=200, chunk_overlap=40, min_score=0)
    sections = [(1, "Refunds", RULES), (2, "Bicycles", "Cyclists lock their bikes in the covered rack.")]
    upload(cast.editor, collection, "refunds.html", html_bytes(sections))
    assert Chunk.objects.filter(collection=collection, continues=True).count() >= 3
    return collection


@pytest.mark.parametrize("built_before_it_was_recorded", [False, True])
def test_a_cut_block_reads_as_written_and_a_heading_starts_a_paragraph(
    cast, cut_into_pieces, built_before_it_was_recorded
):
    if built_before_it_was_recorded:  # paragraphs from before the chunker said which boundary is which
        Chunk.objects.filter(collection=cut_into_pieces).update(continues=None)
    answer = search(cast.viewer, query="how long does the refund for order class 5 take?", top_n=1, around=5)
    text = answer["results"][0]["text"]
    assert text.count(RULES) == 1  # rejoined with one space: no glued word, no sentence twice
    for n in range(12):
        assert text.count(f"Rule {n}:") <= 1
    if "Refunds" in text:
        assert "Refunds\n\nRule 0:" in text  # the heading was a block of its own
    if "Bicycles" in text:
        assert "working days.\n\nBicycles" in text


def test_a_run_longer_than_the_ceiling_splits_into_results_with_their_own_matches(cast, policy):
    configure(cast.editor, policy, window_max_chars=100_000)
    [whole] = search(cast.viewer, query=PAYMENT, top_n=3, around=5)["results"]
    assert len(whole["matches"]) == 3 and len(whole["text"]) > 250

    configure(cast.editor, policy, window_max_chars=250)
    answer = search(cast.viewer, query=PAYMENT, top_n=3, around=5)
    results = answer["results"]
    assert len(results) >= 2
    window = next(s for s in answer["trace"] if s["stage"] == "window")
    assert window["counts"]["split_by_ceiling"] == len(results) - 1
    for result in results:
        assert len(result["text"]) <= 250 or result["passages"] == 1
        best = result["matches"][0]
        assert result["score"] == best["score"] and result["chunk_id"] == best["paragraph_id"]
        assert result["section"] == chunk(best["paragraph_id"]).section
        for match in result["matches"]:
            assert result["text"][match["start"] : match["end"]] == chunk(match["paragraph_id"]).text
    # Nothing that matched is lost: the parts share out the matches of the whole run.
    assert sorted(m["paragraph_id"] for r in results for m in r["matches"]) == sorted(
        m["paragraph_id"] for m in whole["matches"]
    )
    assert results[0]["chunk_id"] == whole["chunk_id"]  # the best answer still leads


def test_the_ceiling_is_a_collection_setting_the_api_checks(cast, collection):
    url = f"/api/manage/collections/{collection.pk}"
    assert cast.editor.get(url).json()["window_max_chars"] == Collection._meta.get_field("window_max_chars").default
    refused = cast.editor.patch(url, {"window_max_chars": 50}, format="json")
    assert refused.status_code == 400 and "window_max_chars" in str(refused.json())
    assert cast.editor.patch(url, {"window_max_chars": 1500}, format="json").json()["window_max_chars"] == 1500
    assert cast.viewer.patch(url, {"window_max_chars": 2000}, format="json").status_code == 403


def hit(ordinal: int, semantic: float) -> Hit:
    return Hit(chunk_id=f"c{ordinal}", document_id="d", collection_id="k", ordinal=ordinal, semantic=semantic)


def test_a_long_run_splits_at_its_weakest_gap_and_a_part_with_no_match_is_dropped():
    scores = {0: 0.90, 1: 0.85, 2: 0.70, 3: 0.72, 4: 0.88}
    first, last = hit(0, 0.90), hit(4, 0.88)
    window = Window("d", [0, 1, 2, 3, 4], first, 0.90, [first, last])
    parts = window_split(window, fits=lambda ordinals: len(ordinals) <= 3, scores=scores)
    assert [(p.ordinals, p.best.chunk_id, p.score) for p in parts] == [([0, 1, 2], "c0", 0.90), ([3, 4], "c4", 0.88)]

    alone = Window("d", [0, 1, 2, 3, 4], first, 0.90, [first])
    assert [p.ordinals for p in window_split(alone, fits=lambda o: len(o) <= 3, scores=scores)] == [[0, 1, 2]]
    assert window_split(alone, fits=lambda o: False, scores=scores)[0].ordinals == [0]  # one paragraph stays whole
