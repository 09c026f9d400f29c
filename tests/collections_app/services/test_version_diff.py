"""The diff of two versions of a document: paragraphs added, removed and changed, the changed words marked."""

from __future__ import annotations

import pytest

from collections_app.models import Document, DocumentVersion
from collections_app.services.documents import (
    VersionsNotComparable,
    document_versions_diff,
    paragraphs_diff,
    words_diff,
)

V1 = (
    b"# Travel\n\nBusiness trips under 500 km are taken by train, second class.\n\n"
    b"Hotel nights are refunded up to 140 euros in capitals.\n\nThe daily allowance abroad is 45 euros.\n"
)
V2 = (
    b"# Travel\n\nHotel nights are refunded up to 160 euros in capitals.\n\nThe daily allowance abroad is 45 euros.\n\n"
    b"Taxis are refunded with a receipt.\n"
)


def test_paragraphs_kept_removed_added_and_changed_in_document_order() -> None:
    old = ["Travel", "Trains are second class.", "Hotels up to 140 euros in capitals.", "Allowance is 45 euros."]
    new = ["Travel", "Hotels up to 160 euros in capitals.", "Allowance is 45 euros.", "Taxis need a receipt."]

    rows = paragraphs_diff(old, new)

    assert [(r.kind, r.old_number, r.new_number) for r in rows] == [
        ("same", 1, 1), ("removed", 2, None), ("changed", 3, 2), ("same", 4, 3), ("added", None, 4),
    ]  # fmt: skip
    changed = rows[2]
    assert changed.old_marks == [("same", "Hotels up to "), ("removed", "140"), ("same", " euros in capitals.")]
    assert changed.new_marks == [("same", "Hotels up to "), ("added", "160"), ("same", " euros in capitals.")]


def test_a_paragraph_unlike_any_other_is_removed_and_added_never_paired() -> None:
    rows = paragraphs_diff(["Parking is in the garage."], ["Lunch is served at noon."])
    assert [r.kind for r in rows] == ["removed", "added"]


def test_marked_words_next_to_each_other_are_one_phrase_and_the_texts_are_whole() -> None:
    old_marks, new_marks = words_diff("refunded in capitals", "refunded in all big capitals")
    assert new_marks == [("same", "refunded in "), ("added", "all big "), ("same", "capitals")]
    assert "".join(t for _, t in old_marks) == "refunded in capitals"
    assert "".join(t for _, t in new_marks) == "refunded in all big capitals"


def test_long_runs_of_unchanged_paragraphs_are_counted_not_shown() -> None:
    old = [f"Paragraph {n} stays." for n in range(20)]
    new = [*old[:10], "A new paragraph.", *old[10:]]
    rows = paragraphs_diff(old, new, context=1)
    assert [(r.kind, r.count) for r in rows] == [("skipped", 9), ("same", 0), ("added", 0), ("same", 0), ("skipped", 9)]


def test_no_change_is_all_same() -> None:
    assert {r.kind for r in paragraphs_diff(["a b", "c"], ["a b", "c"])} == {"same"}


def test_two_uploaded_versions_compare_as_their_files_read_either_way(cast, collection, upload) -> None:
    assert upload(cast.editor, collection, "travel.md", V1).status_code == 202
    assert upload(cast.editor, collection, "travel.md", V2).status_code == 202
    document = Document.objects.get(collection=collection)
    assert document.version == 2 and DocumentVersion.objects.filter(document=document).count() == 2

    diff = document_versions_diff(document=document, old=1, new=2, context=None)

    assert [r.kind for r in diff.rows] == ["same", "removed", "changed", "same", "added"]
    assert (diff.added, diff.removed, diff.changed) == (1, 1, 1)
    assert diff.rows[1].old.startswith("Business trips under 500 km")
    assert ("added", "160") in diff.rows[2].new_marks and ("removed", "140") in diff.rows[2].old_marks
    assert diff.rows[4].new == "Taxis are refunded with a receipt."
    backwards = document_versions_diff(document=document, old=2, new=1, context=None)
    assert [r.kind for r in backwards.rows] == ["same", "added", "changed", "same", "removed"]


def test_an_unknown_version_or_a_lost_original_says_why(cast, collection, upload) -> None:
    assert upload(cast.editor, collection, "travel.md", V1).status_code == 202
    assert upload(cast.editor, collection, "travel.md", V2).status_code == 202
    document = Document.objects.get(collection=collection)
    with pytest.raises(VersionsNotComparable, match="has no version 7"):
        document_versions_diff(document=document, old=1, new=7)
    first = DocumentVersion.objects.get(document=document, number=1)
    assert first.file.name
    first.file.storage.delete(first.file.name)
    with pytest.raises(VersionsNotComparable, match="original of version 1 is no longer stored"):
        document_versions_diff(document=document, old=1, new=2)


def test_an_older_version_too_slow_to_read_again_is_said_not_waited_for(cast, collection, upload, monkeypatch) -> None:
    from collections_app.services.documents import _diff
    from ingestion import OutOfTime

    assert upload(cast.editor, collection, "slow.md", V1 + b"\nSlow.\n").status_code == 202
    assert upload(cast.editor, collection, "slow.md", V2).status_code == 202
    document = Document.objects.get(collection=collection)
    asked: list[float] = []

    def too_slow(path, filename, options, budgets, **kwargs):
        asked.append(budgets.seconds)
        raise OutOfTime()

    monkeypatch.setattr(_diff, "parse_document_bounded", too_slow)
    with pytest.raises(VersionsNotComparable, match="takes over 60 s, longer than a page waits"):
        document_versions_diff(document=document, old=1, new=2)
    assert asked == [_diff.PARSE_SECONDS]
