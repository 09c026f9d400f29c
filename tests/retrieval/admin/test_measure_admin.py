"""The measure's result page: variants x metrics with the best per column marked, the two SVG charts, and
"Apply this variant", which saves its settings and offers the re-index."""

from __future__ import annotations

from django.urls import reverse

from retrieval.models import Measure
from retrieval.services.measure import floor_read_off, variants_resolve


def question(rank, score, *, control=False):
    return {"control": control, "rank": rank, "answer_score": score if rank else None, "best_score": score,
            "question": "q", "ndcg": 1.0 if rank == 1 else 0.0}  # fmt: skip


def variant(collection, asked, metrics, questions):
    settings = variants_resolve(collection=collection, variants=[asked], preset=None)[0]
    return {"settings": settings, "changed": list(asked), "metrics": metrics, "questions": questions,
            "floor": floor_read_off(questions), "paragraphs": 7}  # fmt: skip


def test_the_result_page_marks_the_best_of_each_column_draws_the_charts_and_applies_a_variant(
    staff, cast, corpus
) -> None:
    small = variant(corpus, {"chunk_size": 60, "chunk_overlap": 0},
                    {"ndcg_at_10": 0.5, "hit_at_5": 0.5, "mrr": 0.5, "controls_answered": 1},
                    [question(1, 0.9), question(None, 0.7), question(None, 0.8, control=True)])  # fmt: skip
    whole = variant(corpus, {"chunk_strategy": "structure"},
                    {"ndcg_at_10": 0.9, "hit_at_5": 1.0, "mrr": 0.75, "controls_answered": 1},
                    [question(1, 0.91), question(2, 0.86), question(None, 0.8, control=True)])  # fmt: skip
    measure = Measure.objects.create(tenant=cast.tenant, collection=corpus, status="done", variants=[small, whole],
                                     floor={"best_variant": 1, "note": "any floor above 0.8"})  # fmt: skip

    page = staff.get(reverse("admin:retrieval_measure_change", args=[measure.pk])).content.decode()
    assert page.count('class="kb-chart"') == 2 and "floor band" in page
    assert '<td class="kb-best">0.900 ★</td>' in page and '<td class="kb-best">1.000 ★</td>' in page
    assert "0.500 ★" not in page
    assert page.count("Apply this variant") == 2 and "Apply with floor 0.83" in page

    applied = staff.post(reverse("admin:retrieval_measure_apply", args=[measure.pk]), {"variant": "0"})
    assert applied.status_code == 302
    assert applied["Location"] == reverse("admin:collections_app_collection_reindex", args=[corpus.pk])
    corpus.refresh_from_db()
    assert (corpus.chunk_size, corpus.chunk_overlap) == (60, 0)
    assert corpus.documents.filter(stale=True).count() == 2


def test_an_outsiders_measure_is_not_found(staff, cast) -> None:
    from collections_app.services.collections import collection_create

    theirs = collection_create(tenant=cast.outsider_tenant, name="theirs")
    measure = Measure.objects.create(tenant=cast.outsider_tenant, collection=theirs, status="done")
    assert staff.get(reverse("admin:retrieval_measure_change", args=[measure.pk])).status_code in (302, 404)
    assert staff.post(reverse("admin:retrieval_measure_apply", args=[measure.pk]), {"variant": "0"}).status_code == 404
