"""Edit, split, merge with the next, hide: each changes what a search finds, embeds only what changed, keeps
labels, page and section, and is an edit row of its own."""

from __future__ import annotations

import numpy as np

from accounts.readers import reader_create
from collections_app.models import Chunk, Collection, ParagraphEdit
from embedding import get_embedder
from tests.collections_app.paragraphs.conftest import (
    base,
    paragraph,
    paragraphs,
    search,
    texts,
    uploaded,
)
from tests.files.documents import docx_bytes


def test_an_edit_changes_what_searches_find_and_embeds_that_paragraph_only(cast, handbook, embedded):
    refunds = paragraph(handbook, "Refunds are paid")
    assert "Quokka" not in texts(search(cast.viewer, "Quokka"))
    new_text = "Refunds\n\nRefunds reach the Quokka card account within five working days."

    answer = cast.editor.patch(f"{base(handbook)}/paragraphs/{refunds.pk}", {"text": new_text}, format="json")

    assert answer.status_code == 200, answer.content
    (shown,) = answer.json()["paragraphs"]
    assert shown["id"] == str(refunds.pk) and shown["text"] == new_text and shown["edited"] is True
    assert len(embedded.texts) == 1 and embedded.texts[0].endswith(new_text)  # one paragraph, nothing re-parsed
    (hit,) = [r for r in search(cast.viewer, "Quokka") if "Quokka" in r["text"]]
    assert hit["chunk_id"] == str(refunds.pk) and hit["section"] == ["Refunds"]
    assert "card used for the purchase" not in texts(search(cast.viewer, "card used for the purchase"))
    # Its vector is the model's for the new text with its breadcrumb, like any ingested paragraph's.
    row = Chunk.objects.get(pk=refunds.pk)
    fresh = get_embedder(handbook.collection.embedding_alias).embed_passages([embedded.texts[0]])[0]
    assert np.allclose(np.array(row.embedding), np.array(fresh), atol=1e-5)
    edit = ParagraphEdit.objects.get(document=handbook)
    assert (edit.operation, edit.status) == ("edit", "applied") and edit.by.startswith("key ")
    assert edit.before[0]["text"] == refunds.text and edit.after[0]["text"] == new_text


def test_a_split_makes_two_paragraphs_on_the_same_page_each_found_on_its_own(cast, manual, embedded):
    returns = paragraph(manual, "Goods may be returned")
    at = returns.text.index("Opened software")

    answer = cast.editor.post(f"{base(manual)}/paragraphs/{returns.pk}/split", {"at": at}, format="json")

    assert answer.status_code == 200, answer.content
    first, second = answer.json()["paragraphs"]
    assert first["id"] == str(returns.pk) and first["text"].endswith("original packaging.")
    assert second["text"] == "Opened software cannot be returned once its seal is broken."
    assert first["page"] == second["page"] == 1 and first["section"] == second["section"] == ["Returns"]
    assert len(embedded.texts) == 2  # the two halves, nothing else
    assert [p.ordinal for p in paragraphs(manual)] == [0, 1, 2]  # the warranty moved on by one
    assert paragraphs(manual)[2].text.startswith("Warranty")
    results = search(cast.viewer, "opened software seal broken", top_n=1)
    assert results[0]["chunk_id"] == second["id"] and results[0]["page"] == 1
    assert "thirty days" not in results[0]["text"]


def test_a_change_made_on_text_that_has_changed_since_is_a_409_and_changes_nothing(cast, manual):
    returns = paragraph(manual, "Goods may be returned")
    read = returns.text
    at = read.index("Opened software")
    url = f"{base(manual)}/paragraphs/{returns.pk}"
    assert cast.editor.post(f"{url}/split", {"at": at, "previous_text": read}, format="json").status_code == 200
    after_split = [p.text for p in paragraphs(manual)]

    # Another client read the paragraph before that split: its save would put the split-off half back in twice.
    stale = cast.editor.patch(url, {"text": read.replace("Goods", "GOODS"), "previous_text": read}, format="json")
    late_split = cast.editor.post(f"{url}/split", {"at": 10, "previous_text": read}, format="json")

    assert stale.status_code == late_split.status_code == 409
    assert "changed since you read it" in str(stale.json())
    assert [p.text for p in paragraphs(manual)] == after_split


def test_a_split_out_of_bounds_is_a_400_that_says_where_to_cut(cast, manual):
    returns = paragraph(manual, "Goods may be returned")
    answer = cast.editor.post(f"{base(manual)}/paragraphs/{returns.pk}/split", {"at": 5000}, format="json")
    assert answer.status_code == 400
    assert "between 1 and" in str(answer.json())
    assert Chunk.objects.get(pk=returns.pk).text == returns.text


def test_merge_needs_asking_across_a_section_and_takes_the_first_ones_section(cast, handbook, embedded):
    refunds, shipping = paragraph(handbook, "Refunds are paid"), paragraph(handbook, "Parcels leave")
    url = f"{base(handbook)}/paragraphs/{refunds.pk}/merge-next"

    refused = cast.editor.post(url, {}, format="json")
    assert refused.status_code == 400 and "another section" in str(refused.json())
    assert embedded.texts == []

    answer = cast.editor.post(url, {"across_sections": True}, format="json")
    assert answer.status_code == 200, answer.content
    (merged,) = answer.json()["paragraphs"]
    assert merged["text"] == f"{refunds.text}\n\n{shipping.text}" and merged["section"] == ["Refunds"]
    assert len(embedded.texts) == 1
    assert not Chunk.objects.filter(pk=shipping.pk).exists()
    assert [p.ordinal for p in paragraphs(handbook)] == [0, 1]
    (hit,) = [r for r in search(cast.viewer, "parcels warehouse morning") if "Parcels" in r["text"]]
    assert hit["chunk_id"] == str(refunds.pk) and "Refunds are paid" in hit["text"]


def test_the_last_paragraph_has_no_next_to_merge_with(cast, handbook):
    payroll = paragraph(handbook, "Salaries")
    answer = cast.editor.post(f"{base(handbook)}/paragraphs/{payroll.pk}/merge-next", {}, format="json")
    assert answer.status_code == 400 and "last paragraph" in str(answer.json())


def test_a_hidden_paragraph_is_not_searched_until_it_is_shown_and_nothing_is_embedded(cast, handbook, embedded):
    shipping = paragraph(handbook, "Parcels leave")
    url = f"{base(handbook)}/paragraphs/{shipping.pk}"
    assert "Parcels" in texts(search(cast.viewer, "parcels warehouse"))

    hidden = cast.editor.patch(url, {"hidden": True}, format="json")
    assert hidden.status_code == 200 and hidden.json()["paragraphs"][0]["hidden"] is True
    assert "Parcels" not in texts(search(cast.viewer, "parcels warehouse"))
    # Still listed for editors, struck through in the admin.
    listing = cast.editor.get(f"{base(handbook)}/paragraphs").json()
    assert [p["hidden"] for p in listing["results"]] == [False, True, False]

    assert cast.editor.patch(url, {"hidden": False}, format="json").status_code == 200
    assert "Parcels" in texts(search(cast.viewer, "parcels warehouse"))
    assert embedded.texts == []  # hiding and showing embed nothing
    assert [e.operation for e in ParagraphEdit.objects.filter(document=handbook).order_by("created_at")] == [
        "hide",
        "unhide",
    ]


def test_no_edit_widens_reader_labels_a_split_of_a_labelled_paragraph_stays_labelled(cast, collection, upload):
    cast.admin.patch(f"/api/manage/collections/{collection.pk}", {"per_reader": True, "min_score": 0}, format="json")
    Collection.objects.filter(pk=collection.pk).update(per_reader=True)
    document = uploaded(cast, collection, upload, "payroll.docx", docx_bytes(
        [(1, "Payroll", "Salary bands are reviewed every spring. Bonuses are paid in December.")]
    ))  # fmt: skip
    assert cast.admin.patch(f"{base(document)}/labels", {"labels": ["hr"]}, format="json").status_code == 200
    reader_create(tenant=cast.tenant, name="bob@example.com", labels=["sales"])
    reader_create(tenant=cast.tenant, name="ada@example.com", labels=["hr"])
    salary = paragraph(document, "Salary bands")

    split = cast.editor.post(
        f"{base(document)}/paragraphs/{salary.pk}/split", {"at": salary.text.index("Bonuses")}, format="json"
    )
    assert split.status_code == 200, split.content
    assert [p["labels"] for p in split.json()["paragraphs"]] == [["hr"], ["hr"]]
    assert not Chunk.objects.filter(document=document).live().paragraphs().readable_by(["sales"]).exists()
    assert search(cast.viewer, "bonuses December", reader="bob@example.com") == []
    assert "Bonuses" in texts(search(cast.viewer, "bonuses December", reader="ada@example.com"))

    merged = cast.editor.post(f"{base(document)}/paragraphs/{salary.pk}/merge-next", {}, format="json")
    assert merged.json()["paragraphs"][0]["labels"] == ["hr"]
    edited = cast.editor.patch(f"{base(document)}/paragraphs/{salary.pk}", {"text": "Open to all?"}, format="json")
    assert edited.json()["paragraphs"][0]["labels"] == ["hr"]
    assert search(cast.viewer, "Open to all", reader="bob@example.com") == []


def test_an_edit_re_detects_the_language_unless_the_document_pins_it(cast, handbook):
    payroll = paragraph(handbook, "Salaries")
    german = "Gehälter werden am letzten Arbeitstag jedes Monats per Banküberweisung gezahlt."
    shown = cast.editor.patch(f"{base(handbook)}/paragraphs/{payroll.pk}", {"text": german}, format="json").json()
    assert shown["paragraphs"][0]["language"] == "de"

    assert cast.editor.patch(f"{base(handbook)}/language", {"language": "en"}, format="json").status_code == 200
    again = f"{german} Urlaub wird im Januar geplant."
    shown = cast.editor.patch(f"{base(handbook)}/paragraphs/{payroll.pk}", {"text": again}, format="json").json()
    assert shown["paragraphs"][0]["language"] == "en"


def test_paragraphs_are_editors_material_and_the_outsider_finds_nothing(cast, handbook):
    refunds = paragraph(handbook, "Refunds are paid")
    listing = f"{base(handbook)}/paragraphs"
    assert cast.viewer.get(listing).status_code == 403
    assert cast.outsider.get(listing).status_code == 404
    assert cast.outsider.patch(f"{listing}/{refunds.pk}", {"text": "x"}, format="json").status_code == 404
    assert cast.viewer.patch(f"{listing}/{refunds.pk}", {"text": "x"}, format="json").status_code == 403
    assert Chunk.objects.get(pk=refunds.pk).text == refunds.text
    page = cast.editor.get(listing, {"limit": 2, "offset": 1}).json()
    assert page["count"] == 3 and page["limit"] == 2 and page["offset"] == 1
    assert set(page["results"][0]) == {"id", "text", "ordinal", "page", "section", "language", "labels", "hidden",
                                       "edited"}  # fmt: skip
    assert [p["ordinal"] for p in page["results"]] == [1, 2]
