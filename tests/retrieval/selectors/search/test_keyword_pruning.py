"""The keyword stage's split of the question's words (MaxScore) changes what it reads, never what it ranks.

Over real text (SciFact abstracts, when the shared evaluation set is on this machine), with the first pass
made small so that long questions leave many mid-frequency words out of the candidate-making set, the hits
are still plain BM25's best (the reference of test_keyword_postings, computed in Python from the texts), with
ties at the cut, the reader's labels and a rechunk, relabel, delete and re-index of the collection.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.db import connection

from accounts.models import Tenant
from collections_app.models import Chunk, Collection
from collections_app.services.collections import collection_update
from collections_app.sql import keyword_vector
from retrieval.selectors.search import Visibility, _keyword, keyword_retrieve
from tests.retrieval.selectors.search.test_keyword_postings import assert_same_ranking, index, reference

SCIFACT = Path("/work/shared/eval/scifact")
ABSTRACTS = 250

# Questions that name many words found in a tenth to a half of the abstracts, beside a few rare ones.
LONG_QUESTIONS = [
    "Which effects of increased expression of the protein in human cells were associated with higher risk, "
    "lower levels and a significant reduction of disease in patients treated with the drug over time?",
    "Does the analysis of data from the study show that the response of cell function to treatment is "
    "reduced in mice and in human patients with high levels of the gene?",
]


def scifact_texts() -> tuple[list[str], list[str]]:
    if not (SCIFACT / "corpus.jsonl").exists():
        pytest.skip("the shared SciFact set is not on this machine")
    with (SCIFACT / "corpus.jsonl").open(encoding="utf-8") as handle:
        rows = [json.loads(line) for _, line in zip(range(ABSTRACTS), handle, strict=False)]
    with (SCIFACT / "queries.jsonl").open(encoding="utf-8") as handle:
        questions = [json.loads(line)["text"] for _, line in zip(range(25), handle, strict=False)]
    return [f"{r['title']}. {r['text']}" for r in rows], questions


def stage(
    collection: Collection, query: str, limit: int, labels: list[str] | None = None
) -> tuple[list[tuple[str, float | None]], dict[str, int]]:
    counts: dict[str, int] = {}
    visible = Visibility(collection.tenant_id, [str(collection.pk)], labels or [])
    hits = keyword_retrieve(visible=visible, query=query, language="en", limit=limit, counts=counts)
    return [(h.chunk_id, h.keyword) for h in hits], counts


@pytest.fixture
def scifact(db, monkeypatch) -> tuple[Collection, list[str]]:
    texts, questions = scifact_texts()
    collection = Collection.objects.create(tenant=Tenant.objects.create(name="acme"), name="scifact")
    index(collection, texts[: ABSTRACTS // 2], name="first")
    index(collection, texts[ABSTRACTS // 2 :], name="second")
    # Ties at any cut: the same paragraph three times.
    index(collection, [texts[0]] * 3, name="ties")
    # Scaled to 250 paragraphs what 100,000 give: a first pass of about a hundred postings, and windows small
    # beside the candidates, so that long questions split and the proof has paragraphs left outside.
    monkeypatch.setattr(_keyword, "PROBE_POSTINGS", 100)
    monkeypatch.setattr(_keyword, "KEYWORD_WINDOW_MIN", 10)
    monkeypatch.setattr(_keyword, "KEYWORD_WINDOW_MAX", 60)
    return collection, [*questions, *LONG_QUESTIONS, texts[0][:200]]


def test_long_questions_leave_words_out_and_still_rank_as_plain_bm25(scifact) -> None:
    collection, questions = scifact
    left_out = 0
    for question in questions:
        for limit in (5, 40):
            found, counts = stage(collection, question, limit)
            assert_same_ranking(found, reference(collection, question), limit=limit)
            left_out += counts["words_looked_up"] > 0 and counts["queries"] == 1
    # The split did the work in one query for most questions, not the fallback.
    assert left_out >= 0.8 * 2 * len(questions)
    _, counts = stage(collection, LONG_QUESTIONS[0], 40)
    assert counts["queries"] == 1 and counts["words_looked_up"] >= 5


def test_tied_scores_at_the_cut_rank_as_plain_bm25(scifact) -> None:
    collection, _ = scifact
    tied = Chunk.objects.filter(document__filename="ties.txt").values_list("pk", flat=True)
    question = "microstructural development of human newborn cerebral white matter"
    scores = reference(collection, question)
    assert len({round(scores[str(pk)], 9) for pk in tied}) == 1
    for limit in (1, 2, 3, 4):  # the cut falls inside the tie, then after it
        found, _ = stage(collection, question, limit)
        assert_same_ranking(found, scores, limit=limit)


def test_the_split_follows_the_readers_labels_and_falls_back_when_they_hide_the_best(scifact) -> None:
    collection, questions = scifact
    per_reader = collection_update(collection=collection, per_reader=True)
    # The best paragraphs of the long question become another reader's.
    best = sorted(reference(per_reader, LONG_QUESTIONS[0]).items(), key=lambda kv: -kv[1])[:60]
    Chunk.objects.filter(pk__in=[chunk_id for chunk_id, _ in best]).update(labels=["hr"])
    readable = {str(pk) for pk in Chunk.objects.filter(collection=per_reader, labels=[]).values_list("pk", flat=True)}
    asked_again = 0
    for question in [*LONG_QUESTIONS, *questions[:5]]:
        found, counts = stage(per_reader, question, 40)
        asked_again += counts["queries"] > 1
        assert_same_ranking(found, reference(per_reader, question, readable=readable), limit=40)
        with_hr, _ = stage(per_reader, question, 40, labels=["hr"])
        assert_same_ranking(with_hr, reference(per_reader, question), limit=40)
    assert asked_again  # hidden best paragraphs: the split's answer could not be proven, the fallback's was


def test_after_a_rechunk_delete_and_reindex_the_split_ranks_as_plain_bm25(scifact) -> None:
    collection, questions = scifact
    first = Chunk.objects.filter(document__filename="first.txt")
    # Re-cut: every paragraph of the first document loses its second half and is indexed again.
    for chunk in first[:40]:
        Chunk.objects.filter(pk=chunk.pk).update(text=chunk.text[: len(chunk.text) // 2])
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE collections_app_chunk SET search_vector = {keyword_vector()} WHERE collection_id = %s",
            [collection.pk],
        )
    Chunk.objects.filter(document__filename="second.txt", position__ordinal__lt=30).delete()
    for question in [*LONG_QUESTIONS, *questions[:10]]:
        found, _ = stage(collection, question, 40)
        assert_same_ranking(found, reference(collection, question), limit=40)
