"""The measure's result page: variants x metrics with the best per column marked (only where one is better), the
two SVG charts with numbered variants and a legend, and "Apply this variant", which asks first (each setting before
→ after, the documents marked stale), then saves its settings and offers the re-index."""

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

    applied = staff.post(
        reverse("admin:retrieval_measure_apply", args=[measure.pk]), {"variant": "0", "confirmed": "yes"}
    )
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


def two_variants(cast, corpus, small_metrics, whole_metrics, **extra):
    small = variant(corpus, {"chunk_size": 60, "chunk_overlap": 0}, small_metrics,
                    [question(1, 0.9), question(None, 0.7), question(None, 0.8, control=True)])  # fmt: skip
    whole = variant(corpus, {"chunk_strategy": "structure"}, whole_metrics,
                    [question(1, 0.91), question(2, 0.86), question(None, 0.8, control=True)])  # fmt: skip
    return Measure.objects.create(tenant=cast.tenant, collection=corpus, status="done", variants=[small, whole],
                                  floor={"best_variant": 1, "note": ""}, **extra)  # fmt: skip


def test_no_star_where_every_variant_ties_nor_on_controls_answered_of_an_unfloored_run(staff, cast, corpus) -> None:
    tied = {"ndcg_at_10": 0.9, "hit_at_5": 1.0, "mrr": 0.75, "found": 2, "controls_answered": 1}
    measure = two_variants(cast, corpus, dict(tied), {**tied, "controls_answered": 2}, request={"floor": None})

    page = staff.get(reverse("admin:retrieval_measure_change", args=[measure.pk])).content.decode()

    assert "★" not in page.split("<tbody>")[1].split("</tbody>")[0]  # all tied; controls answered says nothing
    assert "every control answers" in page


def test_a_floored_run_stars_the_fewest_controls_answered_and_never_the_most(staff, cast, corpus) -> None:
    measure = two_variants(cast, corpus, {"ndcg_at_10": 0.5, "controls_answered": 2},
                           {"ndcg_at_10": 0.9, "controls_answered": 0}, request={"floor": 0.8})  # fmt: skip

    page = staff.get(reverse("admin:retrieval_measure_change", args=[measure.pk])).content.decode()

    assert '<td class="kb-best">0 ★</td>' in page and "2 ★" not in page
    assert '<td class="kb-best">0.900 ★</td>' in page and "0.500 ★" not in page


def test_the_charts_name_variants_by_number_and_the_legend_lists_each_in_full(staff, cast, corpus) -> None:
    measure = two_variants(cast, corpus, {"ndcg_at_10": 0.5}, {"ndcg_at_10": 0.9})

    page = staff.get(reverse("admin:retrieval_measure_change", args=[measure.pk])).content.decode()

    charts = "".join(part.split("</svg>")[0] for part in page.split('class="kb-chart"')[1:])
    assert ">variant 1<" in charts and ">variant 2<" in charts and "chunk_size" not in charts
    legend = page.split('id="kb-variant-legend"')[1].split("</ul>")[0]
    assert "variant 1</strong>: chunk_size = 60, chunk_overlap = 0" in legend
    assert "variant 2</strong>: chunk_strategy = structure" in legend


def test_apply_asks_first_saying_each_setting_before_and_after_and_the_documents_marked_stale(
    staff, cast, corpus
) -> None:
    measure = two_variants(cast, corpus, {"ndcg_at_10": 0.5}, {"ndcg_at_10": 0.9})
    url = reverse("admin:retrieval_measure_apply", args=[measure.pk])
    before = (corpus.chunk_size, corpus.chunk_overlap)

    asked = staff.post(url, {"variant": "0"})  # the result page's button

    assert asked.status_code == 200
    page = asked.content.decode()
    row = page.split('data-setting="chunk_size"')[1].split("</tr>")[0]
    assert f'<td class="kb-before">{before[0]}</td>' in row and '<td class="kb-after">60</td>' in row
    assert 'data-setting="chunk_overlap"' in page
    assert "<strong>2 documents</strong> will be marked stale" in page
    assert "No, take me back" in page and 'value="Apply"' in page
    corpus.refresh_from_db()
    assert (corpus.chunk_size, corpus.chunk_overlap) == before  # asking changed nothing
    assert not corpus.documents.filter(stale=True).exists()
    assert staff.get(url, {"variant": "0", "confirmed": "yes"}).status_code == 403  # only ever a POST
    corpus.refresh_from_db()
    assert corpus.chunk_size == before[0]

    done = staff.post(url, {"variant": "0", "confirmed": "yes"})
    assert done.status_code == 302
    corpus.refresh_from_db()
    assert (corpus.chunk_size, corpus.chunk_overlap) == (60, 0)
    assert corpus.documents.filter(stale=True).count() == 2


def test_apply_of_a_missing_variant_says_what_to_do_and_changes_nothing(staff, cast, corpus) -> None:
    measure = two_variants(cast, corpus, {"ndcg_at_10": 0.5}, {"ndcg_at_10": 0.9})
    url = reverse("admin:retrieval_measure_apply", args=[measure.pk])
    for asked in ({"variant": "7"}, {"variant": "x"}, {}):
        answer = staff.post(url, asked, follow=True)
        assert answer.status_code == 200 and "Not applied" in answer.content.decode()
    assert not corpus.documents.filter(stale=True).exists()


def test_apply_of_a_setting_left_empty_says_what_empty_means_as_the_evaluation_page_does(staff, cast, corpus) -> None:
    """The walk (issue 41): "around: not set → 0" left the editor guessing what "not set" searched with; the
    evaluation's page says "not set: 1"."""
    assert corpus.around is None
    asked = variant(corpus, {"around": 0}, {"ndcg_at_10": 0.9}, [question(1, 0.9)])
    measure = Measure.objects.create(tenant=cast.tenant, collection=corpus, status="done", variants=[asked],
                                     floor={"best_variant": 0, "note": ""})  # fmt: skip

    page = staff.post(reverse("admin:retrieval_measure_apply", args=[measure.pk]), {"variant": "0"}).content.decode()

    row = page.split('data-setting="around"')[1].split("</tr>")[0]
    assert '<td class="kb-before">not set: 1</td>' in row and '<td class="kb-after">0</td>' in row
    assert "No document is marked stale" in page


def test_apply_that_cannot_be_done_says_why_not_to_choose_a_variant(staff, cast, corpus) -> None:
    # The service's refusals are ValueErrors too: they were answered "choose a variant with its button", which the
    # person had just done; each now says its own reason.
    measure = two_variants(cast, corpus, {"ndcg_at_10": 0.5}, {"ndcg_at_10": 0.9})
    measure.variants[0]["floor"]["suggested"] = None
    measure.save(update_fields=["variants"])
    url = reverse("admin:retrieval_measure_apply", args=[measure.pk])
    floored = staff.post(url + "?floor=1", {"variant": "0"}, follow=True).content.decode()
    assert "no floor separates them" in floored and "choose a variant" not in floored
    missing = staff.post(url, {"variant": "7"}, follow=True).content.decode()
    assert "this measure has variants" in missing

    failed = two_variants(cast, corpus, {"ndcg_at_10": 0.5}, {"ndcg_at_10": 0.9})
    Measure.objects.filter(pk=failed.pk).update(status="failed")
    url = reverse("admin:retrieval_measure_apply", args=[failed.pk])
    answer = staff.post(url, {"variant": "0", "confirmed": "yes"}, follow=True).content.decode()
    assert "only a finished measure" in answer and "choose a variant" not in answer
    assert not corpus.documents.filter(stale=True).exists()
