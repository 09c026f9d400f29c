"""The document's paragraphs page: every action posts to one service and comes back; the document's page says
how many edits no longer apply; another tenant's document is a 404."""

from __future__ import annotations

from collections_app.models import ParagraphEdit
from tests.collections_app.paragraphs.conftest import HANDBOOK, paragraph, paragraphs, uploaded
from tests.files.documents import docx_bytes


def page_url(document) -> str:
    return f"/admin/collections_app/document/{document.pk}/paragraphs/"


def test_the_page_lists_paragraphs_with_their_numbers_and_an_edit_saves_in_place(cast, collection, upload, staff):
    document = uploaded(cast, collection, upload, "handbook.docx", docx_bytes(HANDBOOK))
    shown = staff.get(page_url(document))
    assert shown.status_code == 200
    html = shown.content.decode()
    assert html.count('class="kb-para"') == 3 and 'id="paragraph-count">3<' in html
    refunds = paragraph(document, "Refunds are paid")

    answer = staff.post(page_url(document), {"action": "edit", "paragraph": refunds.pk, "text": "Refunds: 5 days."})

    assert answer.status_code == 302 and answer["Location"].endswith("#p0")
    assert paragraphs(document)[0].text == "Refunds: 5 days."
    edit = ParagraphEdit.objects.get(document=document)
    assert edit.by == "ada" and edit.operation == "edit"
    followed = staff.get(answer["Location"]).content.decode()
    assert "Paragraph saved and embedded again" in followed and 'data-operation="edit"' in followed


def test_a_refused_action_says_why_and_changes_nothing(cast, collection, upload, staff):
    document = uploaded(cast, collection, upload, "handbook.docx", docx_bytes(HANDBOOK))
    refunds = paragraph(document, "Refunds are paid")
    answer = staff.post(page_url(document), {"action": "merge", "paragraph": refunds.pk}, follow=True)
    assert "another section" in answer.content.decode() and "tick “across sections”" in answer.content.decode()
    assert len(paragraphs(document)) == 3 and not ParagraphEdit.objects.exists()


def test_a_save_from_a_page_opened_before_a_split_is_refused_and_loses_nothing(cast, collection, upload, staff):
    # Two tabs: the first splits a paragraph, the second saves the text it still shows. Saved, the split-off half
    # would be in the document twice.
    document = uploaded(cast, collection, upload, "handbook.docx", docx_bytes(HANDBOOK))
    refunds = paragraph(document, "Refunds are paid")
    old_tab = staff.get(page_url(document)).content.decode()
    seen = old_tab.split(f'name="paragraph" value="{refunds.pk}"', 1)[1].split('name="seen" value="', 1)[1][:64]
    at = refunds.text.index(" ", 5) + 1
    staff.post(
        page_url(document), {"action": "split", "paragraph": refunds.pk, "at": at, "text": refunds.text, "seen": seen}
    )
    after_split = [p.text for p in paragraphs(document)]

    stale = {"action": "edit", "paragraph": refunds.pk, "text": refunds.text.upper(), "seen": seen}
    answer = staff.post(page_url(document), stale, follow=True)

    assert "changed since you read it" in answer.content.decode()
    assert [p.text for p in paragraphs(document)] == after_split and len(after_split) == 4
    fresh = staff.post(page_url(document), {**stale, "seen": ""}, follow=True)  # a page without it: as before
    assert "Paragraph saved" in fresh.content.decode()


def test_the_document_page_says_how_many_edits_no_longer_apply(cast, collection, upload, staff):
    document = uploaded(cast, collection, upload, "handbook.docx", docx_bytes(HANDBOOK))
    for contains, text in (("Salaries", "Salaries: monthly."), ("Parcels", "Parcels: daily.")):
        staff.post(page_url(document), {"action": "edit", "paragraph": paragraph(document, contains).pk, "text": text})
    changed = [(0, "Staff handbook", ""), (1, "Refunds", "Refunds take a week."), (1, "Shipping", "Parcels go."),
               (1, "Payroll", "Salaries are paid twice a month.")]  # fmt: skip
    upload(cast.editor, collection, "handbook.docx", docx_bytes(changed))

    page = staff.get(f"/admin/collections_app/document/{document.pk}/change/").content.decode()
    assert "2 edits no longer apply" in page
    listing = staff.get(page_url(document)).content.decode()
    assert listing.count('class="stale-edit"') == 2 and "Re-apply" in listing


def test_another_tenants_document_is_a_404(cast, collection, upload, staff):
    from collections_app.services.collections import collection_create

    theirs = collection_create(tenant=cast.outsider_tenant, name="theirs")
    document = uploaded(cast, collection, upload, "handbook.docx", docx_bytes(HANDBOOK))
    document.collection = theirs
    document.tenant = cast.outsider_tenant
    document.save(update_fields=["collection", "tenant"])
    assert staff.get(page_url(document)).status_code == 404
    assert staff.post(page_url(document), {"action": "hide", "paragraph": "x"}).status_code == 404


def test_while_an_edit_of_the_document_is_pending_an_action_says_so_and_changes_nothing(
    cast, collection, upload, staff
):
    document = uploaded(cast, collection, upload, "handbook.docx", docx_bytes(HANDBOOK))
    refunds = paragraph(document, "Refunds are paid")
    ParagraphEdit.objects.create(
        tenant=cast.tenant, collection=collection, document=document, operation="edit", status="pending",
        anchor={"hash": "0" * 64}, before=[{"text": refunds.text}], after=[{"text": "A long text."}],
        params={"paragraph": str(refunds.pk)},
    )  # fmt: skip

    answer = staff.post(page_url(document), {"action": "edit", "paragraph": refunds.pk, "text": "Refunds: 5 days."})

    assert answer.status_code == 302
    shown = staff.get(answer["Location"]).content.decode()
    assert "An edit of this document is being embedded (pending); try again in a moment" in shown
    assert paragraphs(document)[0].text == refunds.text
    assert [e.status for e in ParagraphEdit.objects.filter(document=document)] == ["pending"]


def test_a_save_of_a_paragraph_merged_away_meanwhile_gives_the_typing_back_to_copy(cast, collection, upload, staff):
    # Two tabs: the first merges the paragraph into the one before it, the second saves a rewrite of it. Refused,
    # the page came back without the paragraph and without the rewrite.
    document = uploaded(cast, collection, upload, "handbook.docx", docx_bytes(HANDBOOK))
    first, second = paragraphs(document)[:2]
    staff.post(page_url(document), {"action": "merge", "paragraph": first.pk, "across_sections": "on"})
    rewrite = 'Parcels <b>"damaged"</b> in transit are replaced.'

    answer = staff.post(page_url(document), {"action": "edit", "paragraph": second.pk, "text": rewrite}, follow=True)

    html = answer.content.decode()
    assert 'id="unsaved-elsewhere"' in html
    assert "Parcels &lt;b&gt;&quot;damaged&quot;&lt;/b&gt; in transit are replaced." in html
    assert 'id="unsaved-elsewhere"' not in staff.get(page_url(document)).content.decode()  # given back once
