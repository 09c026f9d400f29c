"""An editor fixes paragraphs by hand in Chromium, on a real Word file: edit in place, split at the cursor, merge
with the next, hide (struck through, out of searches), the history, and revert. The page's numbers (paragraphs,
tokens, under-50-token share) follow. A screenshot of each step goes to var/test-artifacts/paragraphs-*.png."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth.models import User

from accounts.issuing import api_key_create
from accounts.models import Membership, Role, Tenant
from collections_app.models import Chunk, Collection, Document, ParagraphEdit
from collections_app.services.collections import collection_create
from collections_app.services.documents import document_create
from collections_app.services.paragraph_edits import paragraph_edit
from retrieval.selectors.search import resolve_scope, search
from tests.collections_app.paragraphs.conftest import HANDBOOK
from tests.files.documents import docx_bytes

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "a long paragraphs password"
FIXED = "Refunds\n\nRefunds are paid back within five working days to the Quokka card used for the purchase."


@pytest.fixture
def document() -> Document:
    tenant = Tenant.objects.create(name="acme")
    editor = User.objects.create_user("edna", password=PASSWORD, is_staff=True)
    Membership.objects.create(user=editor, tenant=tenant, role=Role.EDITOR)
    collection = collection_create(tenant=tenant, name="handbook", min_score=0)
    # Committed at once (transactional test): the ingestion task runs inline (Q_CLUSTER sync).
    document_create(
        collection=collection, filename="handbook.docx", content=io.BytesIO(docx_bytes(HANDBOOK)), uploaded_by="edna"
    )
    document = Document.objects.get(collection=collection)
    assert document.status == "done", document.error
    return document


def rows(document: Document) -> list[Chunk]:
    return list(Chunk.objects.filter(document=document).editable().order_by("position__ordinal"))


def found(collection: Collection, query: str) -> str:
    """What a search of the collection hands back now (every paragraph a candidate: the floor is off)."""
    key = api_key_create(tenant=collection.tenant, role="viewer").key
    answer = search(scope=resolve_scope(key=key, names=None, reader=None), query=query, top_n=8, around=0)
    return "\n".join(r["text"] for r in answer.results)


def log_in(page, base: str) -> None:
    page.goto(f"{base}/admin/")
    page.fill("#id_username", "edna")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")


def open_paragraphs(page, base: str, document: Document) -> None:
    log_in(page, base)
    page.goto(f"{base}/admin/collections_app/document/{document.pk}/paragraphs/")
    page.wait_for_selector("#paragraph-numbers")


def paragraph(page, ordinal: int):
    return page.locator(f"#p{ordinal}")


def test_an_editor_edits_splits_merges_hides_and_reverts_in_the_admin(offline_page, live_server, document, screenshot):
    page = offline_page
    base = live_server.url
    log_in(page, base)

    # 1. From the document's page to its paragraphs.
    page.goto(f"{base}/admin/collections_app/document/{document.pk}/change/")
    page.click("text=Edit paragraphs")
    page.wait_for_selector("#paragraph-numbers")
    assert page.locator(".kb-para").count() == 3
    assert page.inner_text("#paragraph-count") == "3"
    screenshot(page, "paragraphs-1-list")

    # 2. Edit in place: the first paragraph's typo fixed, saved, found by search under its new word.
    paragraph(page, 0).locator("textarea").fill(FIXED)
    paragraph(page, 0).locator("button[value=edit]").click()
    page.wait_for_selector("text=Paragraph saved and embedded again")
    assert rows(document)[0].text == FIXED and rows(document)[0].edited
    assert "Quokka" in found(document.collection, "Quokka card")
    assert page.locator("#p0 .kb-para-where").inner_text().endswith("edited")
    screenshot(page, "paragraphs-2-edited")

    # 3. Split at the cursor: the cursor put before "to the Quokka card".
    at = FIXED.index("to the Quokka")
    paragraph(page, 0).locator("textarea").evaluate(f"(el) => {{ el.focus(); el.setSelectionRange({at}, {at}); }}")
    paragraph(page, 0).locator("button[value=split]").click()
    page.wait_for_selector("#p3")
    assert [r.text for r in rows(document)][:2] == [FIXED[:at].rstrip(), "to the Quokka card used for the purchase."]
    assert page.locator(".kb-para").count() == 4 and page.inner_text("#paragraph-count") == "4"
    screenshot(page, "paragraphs-3-split")

    # 4. Merge with next: the two halves are one again (same section), rejoined with a space.
    paragraph(page, 0).locator("button[value=merge]").click()
    page.wait_for_selector("text=Paragraphs merged")
    assert page.locator(".kb-para").count() == 3
    assert rows(document)[0].text == FIXED
    screenshot(page, "paragraphs-4-merged")

    # 5. Hide the shipping paragraph: struck through here, out of searches; the numbers leave it out.
    paragraph(page, 1).locator("button[value=hide]").click()
    page.wait_for_selector("#p1.kb-hidden")
    struck = paragraph(page, 1).locator("textarea").evaluate("(el) => getComputedStyle(el).textDecorationLine")
    assert struck == "line-through"
    assert page.inner_text("#paragraph-count") == "2"
    assert "Parcels" not in found(document.collection, "parcels warehouse morning")
    screenshot(page, "paragraphs-5-hidden")

    # 6. The history lists every edit, newest first; reverting the hide shows the paragraph again.
    history = page.locator("#edit-history .edit-row")
    assert [history.nth(i).get_attribute("data-operation") for i in range(history.count())] == [
        "hide", "merge_next", "split", "edit",
    ]  # fmt: skip
    history.nth(0).locator("button[value=revert]").click()
    page.wait_for_selector("text=Edit reverted")
    assert page.locator("#p1.kb-hidden").count() == 0 and not rows(document)[1].hidden
    assert "Parcels" in found(document.collection, "parcels warehouse morning")
    statuses = page.locator("#edit-history .edit-row")
    assert statuses.nth(0).get_attribute("data-operation") == "revert"
    assert statuses.nth(1).get_attribute("data-status") == "reverted"
    assert ParagraphEdit.objects.filter(document=document).count() == 5
    screenshot(page, "paragraphs-6-history-reverted")
    assert page.outside_requests == []


def test_typing_not_saved_is_not_dropped_without_asking(offline_page, live_server, document):
    """Every button on the page reloads it: another paragraph's Hide dropped the typing in this one silently."""
    page = offline_page
    base = live_server.url
    open_paragraphs(page, base, document)
    saved = rows(document)[0].text
    paragraph(page, 0).locator("textarea").fill(FIXED)

    asked = []

    def answer(dialog, accept: bool) -> None:
        asked.append(dialog.message)
        dialog.accept() if accept else dialog.dismiss()

    # Another paragraph's Hide: asked, naming the paragraph; "no" keeps the page and the typing as they were.
    page.once("dialog", lambda dialog: answer(dialog, accept=False))
    paragraph(page, 1).locator("button[value=hide]").click()
    page.wait_for_timeout(300)
    assert asked == ["Paragraph #0 has changes that are not saved. Leave them and go on?"]
    assert paragraph(page, 0).locator("textarea").input_value() == FIXED
    assert not rows(document)[1].hidden

    # "Yes": the Hide goes through, the typing is dropped as the editor chose.
    page.once("dialog", lambda dialog: answer(dialog, accept=True))
    with page.expect_navigation():
        paragraph(page, 1).locator("button[value=hide]").click()
    assert rows(document)[1].hidden and rows(document)[0].text == saved

    # The paragraph's own Save carries the typing: nothing asked.
    paragraph(page, 0).locator("textarea").fill(FIXED)
    page.on("dialog", lambda dialog: answer(dialog, accept=False))
    paragraph(page, 0).locator("button[value=edit]").click()
    page.wait_for_selector("text=Paragraph saved and embedded again")
    assert len(asked) == 2 and rows(document)[0].text == FIXED


def test_a_save_refused_because_someone_else_changed_the_paragraph_keeps_the_typing(
    offline_page, live_server, document
):
    """A rewrite saved after another editor changed the paragraph is refused; the page came back with the other
    editor's text and the rewrite was gone, with nothing to copy it from."""
    page = offline_page
    base = live_server.url
    open_paragraphs(page, base, document)
    paragraph(page, 0).locator("textarea").fill(FIXED)
    theirs = "Refunds\n\nRefunds take five days."
    paragraph_edit(document=document, paragraph_id=rows(document)[0].pk, text=theirs, by="bob")

    asked = []

    def dismiss(dialog) -> None:
        asked.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", dismiss)
    with page.expect_navigation():  # to the page's load: its scripts have run
        paragraph(page, 0).locator("button[value=edit]").click()
    page.wait_for_selector("text=changed since you read it")
    assert asked == []  # saving never asks
    assert rows(document)[0].text == theirs  # refused
    assert page.url.endswith("#p0")  # back at the paragraph
    # The rewrite is back in its box, beside what the paragraph says now, and still counts as unsaved typing.
    assert paragraph(page, 0).locator("textarea").input_value() == FIXED
    assert "Refunds take five days." in paragraph(page, 0).locator(".kb-unsaved-note").inner_text()
    paragraph(page, 1).locator("button[value=hide]").click()
    page.wait_for_timeout(300)
    assert asked == ["Paragraph #0 has changes that are not saved. Leave them and go on?"]

    # Saved again on purpose, over the text the editor has now read: it goes through.
    paragraph(page, 0).locator("button[value=edit]").click()
    page.wait_for_selector("text=Paragraph saved and embedded again")
    assert rows(document)[0].text == FIXED
    assert paragraph(page, 0).locator("textarea").input_value() == FIXED
    assert page.locator(".kb-unsaved-note").count() == 0


def test_typing_dropped_on_purpose_does_not_come_back_in_another_paragraphs_box(offline_page, live_server, document):
    """Back after a merge: Chromium put the dropped typing back into the box at the same place on the page, now
    another paragraph's (the merge moved every later one up), and its Save wrote it over that paragraph."""
    page = offline_page
    base = live_server.url
    open_paragraphs(page, base, document)
    before = [p.text for p in rows(document)]
    paragraph(page, 1).locator("textarea").fill("Parcels leave at noon.")
    page.on("dialog", lambda dialog: dialog.accept())  # the editor drops the typing
    paragraph(page, 0).locator("input[name=across_sections]").check()
    with page.expect_navigation():
        paragraph(page, 0).locator("button[value=merge]").click()
    assert len(rows(document)) == len(before) - 1

    page.go_back()
    page.wait_for_selector("#paragraph-numbers")
    page.wait_for_timeout(300)
    shown = [paragraph(page, n).locator("textarea").input_value() for n in range(len(before) - 1)]
    assert shown == [p.text for p in rows(document)]
