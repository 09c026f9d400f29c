"""A measure takes the measured collection's stored vectors for every window whose embedding text is unchanged:
a variant that cuts as the collection does embeds nothing, one that cuts differently embeds only what changed,
and either measures exactly what embedding every window afresh measures."""

from __future__ import annotations

import pytest
from django.urls import reverse

from collections_app.models import Collection
from retrieval.models import GoldenQuestion
from tests.retrieval.services.golden.corpus import document
from tests.retrieval.services.measure.test_measure import measure

SEARCH_ONLY = [{"around": 0}, {"around": 2}]  # what a search reads changes; not one paragraph does
SMALLER = [{"chunk_size": 90, "chunk_size_unit": "chars", "chunk_overlap": 0}]


@pytest.fixture
def golden(cast, corpus):
    make = GoldenQuestion.objects.create
    return [
        make(tenant=cast.tenant, collection=corpus, question="Where can I lock my bicycle?", markers=["covered rack"]),
        make(tenant=cast.tenant, collection=corpus, question="Where do staff park their cars?",
             markers=["underground garage beneath building B"]),
        make(tenant=cast.tenant, collection=corpus, question="How much is the daily allowance abroad?",
             documents=[document(corpus, "travel.html").pk]),
        make(tenant=cast.tenant, collection=corpus, question="Which planet has the most moons?", control=True),
    ]  # fmt: skip


def figures(result: dict) -> list:
    """What a measure reports of each variant that an embedding could change: metrics (not the time taken), each
    question's rank, nDCG and best answer's score, the floor read off."""
    return [
        (
            {k: m for k, m in v["metrics"].items() if k != "latency_ms"},
            [(q["question"], q["rank"], q["ndcg"], q["answer_score"]) for q in v["questions"]],
            v["floor"],
        )
        for v in result["variants"]
    ]


def test_a_measure_of_the_floor_and_window_embeds_no_window_and_measures_what_a_fresh_embedding_does(
    cast, corpus, golden, settings, django_capture_on_commit_callbacks
) -> None:
    shown = ("min_score", "around", "parent_return", "hybrid_weight", "updated_at")
    before = Collection.objects.values(*shown).get(pk=corpus.pk)
    reused = measure(cast.editor, corpus, django_capture_on_commit_callbacks, variants=SEARCH_ONLY, floor=0.8)
    assert reused["status"] == "done", reused["error"]
    # Asked on the collection itself, whose settings stay as its editors left them.
    assert Collection.objects.values(*shown).get(pk=corpus.pk) == before
    paragraphs = reused["variants"][0]["paragraphs"]
    assert paragraphs > 0
    assert reused["windows"] == {"embedded": 0, "reused": paragraphs}
    assert [v["windows"] for v in reused["variants"]] == [{"embedded": 0, "reused": paragraphs, "built_for": 0}] * 2

    settings.KB_EMBED_REUSE = False  # every window embedded afresh
    fresh = measure(cast.editor, corpus, django_capture_on_commit_callbacks, variants=SEARCH_ONLY, floor=0.8)
    assert fresh["windows"] == {"embedded": paragraphs, "reused": 0}
    assert figures(reused) == figures(fresh)


def test_a_measure_of_a_smaller_chunk_size_embeds_only_the_windows_it_cuts_anew(
    cast, corpus, golden, settings, django_capture_on_commit_callbacks
) -> None:
    reused = measure(cast.editor, corpus, django_capture_on_commit_callbacks, variants=SMALLER)
    windows, paragraphs = reused["windows"], reused["variants"][0]["paragraphs"]
    assert windows["embedded"] + windows["reused"] == paragraphs
    assert 0 < windows["embedded"] < paragraphs  # the sections longer than ninety characters are cut anew
    assert windows["reused"] > 0  # the short ones read as the collection's paragraphs do

    settings.KB_EMBED_REUSE = False
    fresh = measure(cast.editor, corpus, django_capture_on_commit_callbacks, variants=SMALLER)
    assert fresh["windows"] == {"embedded": paragraphs, "reused": 0}
    assert figures(reused) == figures(fresh)


def test_the_measure_page_says_how_many_windows_it_embedded_and_reused(
    staff, cast, corpus, golden, django_capture_on_commit_callbacks
) -> None:
    result = measure(cast.editor, corpus, django_capture_on_commit_callbacks, variants=SEARCH_ONLY)
    page = staff.get(reverse("admin:retrieval_measure_change", args=[result["id"]]))
    assert page.status_code == 200
    paragraphs = result["variants"][0]["paragraphs"]
    text = page.content.decode()
    assert f"This measure embedded 0 windows and took {paragraphs} from the collection" in text
    assert f"{paragraphs} paragraphs, 0 windows embedded, {paragraphs} reused" in text
    assert f"{paragraphs} paragraphs, the paragraphs of variant 1" in text
