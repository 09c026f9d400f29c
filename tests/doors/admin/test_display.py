"""A result's matched paragraph marked in its text: escaped, clamped, never broken by a bad offset."""

from __future__ import annotations

from doors.admin.display import marked_text


def test_a_match_is_wrapped_in_mark_and_the_rest_of_the_text_is_escaped():
    text = "Intro <b>bold</b>. Money is paid back within five days."
    start = text.index("Money")
    shown = marked_text(text, [{"paragraph_id": "p", "start": start, "end": len(text), "score": 0.8712}])
    assert shown == (
        'Intro &lt;b&gt;bold&lt;/b&gt;. <mark class="kb-match" title="matched paragraph, score 0.871">'
        "Money is paid back within five days.</mark>"
    )


def test_no_matches_is_the_escaped_text_and_bad_offsets_mark_nothing_or_are_clamped():
    assert marked_text("a < b", []) == "a &lt; b"
    assert marked_text("abc", [{"start": 2, "end": 1}, {"start": "x", "end": 2}]) == "abc"
    assert (
        marked_text("abc", [{"start": 1, "end": 99}]) == 'a<mark class="kb-match" title="matched paragraph">bc</mark>'
    )


def test_two_matches_are_marked_in_order_and_an_overlapping_one_is_dropped():
    shown = marked_text("one two three", [{"start": 8, "end": 13}, {"start": 0, "end": 3}, {"start": 2, "end": 6}])
    assert shown.count("<mark") == 2
    assert shown.startswith('<mark class="kb-match" title="matched paragraph">one</mark> two ')


def test_with_the_cited_paragraph_named_only_its_span_is_highlighted_and_the_other_matches_underlined():
    text = "Returns. Refunds go to the card. Delivery."
    spans = [
        {"paragraph_id": "refunds", "start": 9, "end": 32, "score": 0.93},
        {"paragraph_id": "returns", "start": 0, "end": 8, "score": 0.85},
    ]
    shown = marked_text(text, spans, best="refunds")
    assert '<mark class="kb-match" title="matched paragraph, score 0.930">Refunds go to the card.</mark>' in shown
    assert '<mark class="kb-match-also" title="also matched, score 0.850">Returns.</mark>' in shown
    assert shown.endswith(" Delivery.")  # a neighbour that did not match stays plain
