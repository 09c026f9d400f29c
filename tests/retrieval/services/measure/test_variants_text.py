"""Variants typed in the admin's Measure form: one a line, setting=value pairs or a JSON object."""

from __future__ import annotations

import pytest

from retrieval.services.measure import InvalidMeasure, preset_shown, variants_from_text


def test_each_line_is_a_variant_its_values_read_as_json_when_they_can() -> None:
    text = 'chunk_strategy=fixed chunk_size=128 around=0\n\n{"hybrid_weight": 0.5}\nparent_return=true, around=2'
    assert variants_from_text(text) == [
        {"chunk_strategy": "fixed", "chunk_size": 128, "around": 0},
        {"hybrid_weight": 0.5},
        {"parent_return": True, "around": 2},
    ]
    assert variants_from_text("  \n") == []


@pytest.mark.parametrize(("text", "said"), [("around", "line 1: 'around' is not setting=value"),
                                            ("around=1\n{oops", "line 2: not a JSON object"),
                                            ("[1, 2]", "line 1: '[1' is not setting=value")])  # fmt: skip
def test_a_line_that_is_no_variant_is_refused_by_its_number(text, said) -> None:
    with pytest.raises(InvalidMeasure, match=said.replace("[", r"\[")):
        variants_from_text(text)


def test_a_preset_reads_in_one_line() -> None:
    assert preset_shown("around") == "around=0 | around=1 | around=2 | around=3"
