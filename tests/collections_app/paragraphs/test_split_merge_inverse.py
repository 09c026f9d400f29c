"""A split and a merge of its two halves are exact inverses (issue 41, finding 3): the merge joins with exactly
what the split took out, at every door (services, API, admin) and in every rebuild's replay; a heading split off
its text stays on its own line when they are merged back."""

from __future__ import annotations

import html

import pytest

from collections_app.models import Chunk, EditOperation, ParagraphEdit
from collections_app.services.documents import split_parts
from collections_app.services.paragraph_edits import paragraph_edit, paragraph_merge_next, paragraph_split
from tests.collections_app.paragraphs.conftest import base, paragraph, paragraphs

HEADED = "Refunds\n\nRefunds are paid back within five working days to the card used for the purchase."


def test_split_parts_keep_what_lies_between_the_halves():
    assert split_parts("Booking trips\nAll business trips", 13) == ("Booking trips", "\n", "All business trips")
    assert split_parts("Booking trips\n\n  All trips", 15) == ("Booking trips", "\n\n  ", "All trips")
    assert split_parts("glued", 3) == ("glu", "", "ed")
    assert split_parts("edge", 0) is None and split_parts("edge ", 4) is None


@pytest.mark.parametrize(
    ("text", "cut_before"),
    [
        (HEADED, "Refunds are"),  # the heading off its text, at the paragraph break
        ("Booking trips\nAll business trips are booked through the travel desk.", "All business"),  # one newline
        ("Refunds are paid back within five days.  The card is credited.", "The card"),  # two spaces
        ("Refunds are paid back within five working days.", "working"),  # inside a sentence
        ("Refunds are paid back within fiveworking days.", "working"),  # inside a word: nothing between
    ],
)
def test_merging_the_two_halves_of_a_split_gives_the_paragraph_back_exactly(handbook, text, cut_before):
    refunds = paragraph(handbook, "Refunds are paid")
    paragraph_edit(document=handbook, paragraph_id=refunds.pk, text=text, by="ada")
    at = text.index(cut_before)
    if text[at - 1] == " " and cut_before == "working":
        at -= 1  # the cursor before the space, as an editor may put it

    head, tail = paragraph_split(document=handbook, paragraph_id=refunds.pk, at=at, by="ada")
    assert head.text + text[len(head.text) : len(text) - len(tail.text)] + tail.text == text
    assert tail.continues is ("\n" not in text[len(head.text) : len(text) - len(tail.text)])

    (merged,) = paragraph_merge_next(document=handbook, paragraph_id=refunds.pk, by="ada")

    assert merged.text == text and Chunk.objects.get(pk=refunds.pk).text == text
    merge = ParagraphEdit.objects.filter(document=handbook, operation=EditOperation.MERGE_NEXT).get()
    assert merge.params["separator"] == text[len(head.text) : len(text) - len(tail.text)]


def test_a_heading_split_off_and_merged_back_keeps_its_line_through_a_rebuild(
    cast, handbook, django_capture_on_commit_callbacks
):
    refunds = paragraph(handbook, "Refunds are paid")
    paragraph_edit(document=handbook, paragraph_id=refunds.pk, text=HEADED, by="ada")
    paragraph_split(document=handbook, paragraph_id=refunds.pk, at=len("Refunds"), by="ada")
    assert [p.text for p in paragraphs(handbook)][:2] == ["Refunds", HEADED.split("\n\n")[1]]
    paragraph_merge_next(document=handbook, paragraph_id=refunds.pk, by="ada")
    assert paragraphs(handbook)[0].text == HEADED  # never "Refunds Refunds are paid…"

    # A rechunk replays edit, split and merge from the parser output: the same text again.
    with django_capture_on_commit_callbacks(execute=True):
        answer = cast.editor.post(f"{base(handbook)}/rechunk")
    assert answer.status_code == 202, answer.content
    assert paragraphs(handbook)[0].text == HEADED
    assert set(ParagraphEdit.objects.filter(document=handbook).values_list("status", flat=True)) == {"applied"}


def test_a_split_recorded_before_its_separator_was_kept_still_merges_back_exactly(handbook):
    refunds = paragraph(handbook, "Refunds are paid")
    paragraph_edit(document=handbook, paragraph_id=refunds.pk, text=HEADED, by="ada")
    paragraph_split(document=handbook, paragraph_id=refunds.pk, at=len("Refunds") + 1, by="ada")
    split = ParagraphEdit.objects.get(document=handbook, operation=EditOperation.SPLIT)
    split.params = {"at": split.params["at"]}  # as splits made before issue 41 were recorded
    split.save(update_fields=["params"])

    (merged,) = paragraph_merge_next(document=handbook, paragraph_id=refunds.pk, by="ada")

    assert merged.text == HEADED


def test_the_api_splits_and_merges_back_to_the_exact_text(cast, handbook):
    refunds = paragraph(handbook, "Refunds are paid")
    url = f"{base(handbook)}/paragraphs/{refunds.pk}"
    assert cast.editor.patch(url, {"text": HEADED}, format="json").status_code == 200

    split = cast.editor.post(f"{url}/split", {"at": len("Refunds")}, format="json")
    assert split.status_code == 200, split.content
    assert [p["text"] for p in split.json()["paragraphs"]] == ["Refunds", HEADED.split("\n\n")[1]]

    merged = cast.editor.post(f"{url}/merge-next", {}, format="json")
    assert merged.status_code == 200, merged.content
    assert merged.json()["paragraphs"][0]["text"] == HEADED
    listed = cast.editor.get(f"{base(handbook)}/paragraphs").json()["results"]
    assert listed[0]["text"] == HEADED and len(listed) == 3


def test_the_api_refuses_a_split_with_no_text_on_one_side_and_a_merge_of_the_last_saying_what_to_do(cast, handbook):
    refunds, payroll = paragraph(handbook, "Refunds are paid"), paragraph(handbook, "Salaries")
    before = [p.text for p in paragraphs(handbook)]
    at_end = cast.editor.post(
        f"{base(handbook)}/paragraphs/{refunds.pk}/split", {"at": len(refunds.text)}, format="json"
    )
    assert at_end.status_code == 400 and "leaves no text on one side" in str(at_end.json())
    last = cast.editor.post(f"{base(handbook)}/paragraphs/{payroll.pk}/merge-next", {}, format="json")
    assert last.status_code == 400 and "last paragraph" in str(last.json())
    assert [p.text for p in paragraphs(handbook)] == before
    assert not ParagraphEdit.objects.filter(document=handbook).exists()


def admin_url(document) -> str:
    return f"/admin/collections_app/document/{document.pk}/paragraphs/"


def test_the_admin_asks_for_a_click_in_the_text_when_the_split_has_no_cursor(handbook, staff):
    refunds = paragraph(handbook, "Refunds are paid")
    before = [p.text for p in paragraphs(handbook)]

    answer = staff.post(admin_url(handbook), {"action": "split", "paragraph": refunds.pk, "at": ""}, follow=True)

    assert "Click in the paragraph's text where it should split" in html.unescape(answer.content.decode())
    assert [p.text for p in paragraphs(handbook)] == before


def test_the_admin_splits_and_merges_back_to_the_exact_text(handbook, staff):
    refunds = paragraph(handbook, "Refunds are paid")
    staff.post(admin_url(handbook), {"action": "edit", "paragraph": refunds.pk, "text": HEADED})
    staff.post(admin_url(handbook), {"action": "split", "paragraph": refunds.pk, "at": len("Refunds")})
    assert len(paragraphs(handbook)) == 4
    staff.post(admin_url(handbook), {"action": "merge", "paragraph": refunds.pk})
    assert paragraphs(handbook)[0].text == HEADED


def test_the_admin_offers_merge_only_where_a_merge_can_run(handbook, staff):
    page = staff.get(admin_url(handbook)).content.decode()
    blocks = page.split('<div class="kb-para"')[1:]
    assert len(blocks) == 3
    assert ['value="merge"' in block for block in blocks] == [True, True, False]  # never on the last
    # The next paragraph is in another section: "across sections" is offered with the merge.
    assert all("across sections" in block for block in blocks[:2])


def test_the_admin_offers_no_action_while_none_could_run_and_says_why(handbook, staff):
    from collections_app.models import Collection

    collection = Collection.objects.get(pk=handbook.collection_id)
    Collection.objects.filter(pk=collection.pk).update(reindex_generation=collection.active_generation + 1)

    page = html.unescape(staff.get(admin_url(handbook)).content.decode())

    assert "No edit can be made now: a re-index of this collection is being built" in page
    assert 'value="split"' not in page and 'value="merge"' not in page and 'value="edit"' not in page
    Collection.objects.filter(pk=collection.pk).update(reindex_generation=None)
    again = staff.get(admin_url(handbook)).content.decode()
    assert "No edit can be made now" not in again and 'value="split"' in again
