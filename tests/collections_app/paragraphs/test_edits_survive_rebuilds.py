"""Edits are anchored to the parser output: a rechunk and a re-index replay them; a new version of the file that
changed a paragraph reports exactly the edits that no longer apply, which an editor re-applies or discards.
History: every edit is a row, and an edit can be reverted (not while a later one builds on it)."""

from __future__ import annotations

from collections_app.models import Chunk, Document, ParagraphEdit
from tests.collections_app.paragraphs.conftest import (
    HANDBOOK,
    base,
    paragraph,
    paragraphs,
    search,
    texts,
)
from tests.files.documents import docx_bytes, pdf_bytes

FIXED_REFUNDS = "Refunds\n\nRefunds are paid back within five working days to the Quokka card used for the purchase."


def edit_all_four_ways(cast, handbook: Document, manual: Document) -> None:
    """An edit and a hide in the Word file, a split and a merge in the PDF."""
    refunds = paragraph(handbook, "Refunds are paid")
    assert cast.editor.patch(f"{base(handbook)}/paragraphs/{refunds.pk}", {"text": FIXED_REFUNDS}, format="json")
    shipping = paragraph(handbook, "Parcels leave")
    assert cast.editor.patch(f"{base(handbook)}/paragraphs/{shipping.pk}", {"hidden": True}, format="json")
    returns = paragraph(manual, "Goods may be returned")
    at = returns.text.index("Opened software")
    assert cast.editor.post(f"{base(manual)}/paragraphs/{returns.pk}/split", {"at": at}, format="json")
    tail = paragraph(manual, "Opened software")
    merged = cast.editor.post(
        f"{base(manual)}/paragraphs/{tail.pk}/merge-next", {"across_sections": True}, format="json"
    )
    assert merged.status_code == 200, merged.content


def state(document: Document) -> list[tuple[str, bool, list[str], int | None]]:
    return [(p.text, p.hidden, list(p.section), p.page) for p in paragraphs(document)]


def test_a_rechunk_and_a_reindex_replay_every_edit(
    cast, handbook, manual, django_capture_on_commit_callbacks, embedded, settings
):
    edit_all_four_ways(cast, handbook, manual)
    edited = {d.pk: state(d) for d in (handbook, manual)}
    assert len(edited[manual.pk]) == 2 and edited[manual.pk][1][0].startswith("Opened software")
    old_ids = set(Chunk.objects.filter(document__in=[handbook, manual]).values_list("pk", flat=True))

    with django_capture_on_commit_callbacks(execute=True):
        for document in (handbook, manual):
            assert cast.editor.post(f"{base(document)}/rechunk").status_code == 202
    assert {d.pk: state(d) for d in (handbook, manual)} == edited
    assert not old_ids & set(Chunk.objects.filter(document__in=[handbook, manual]).values_list("pk", flat=True))
    assert set(ParagraphEdit.objects.values_list("status", flat=True)) == {"applied"}

    embedded.texts.clear()
    # Embedded afresh, not from the stored vectors (tests/collections_app/services/test_reindex.py: the default reuses
    # them), so what the model is given shows the replayed edits.
    settings.KB_EMBED_REUSE = False
    with django_capture_on_commit_callbacks(execute=True):
        answer = cast.editor.post(f"/api/manage/collections/{handbook.collection_id}/reindex")
    assert answer.status_code == 202, answer.content
    assert {d.pk: state(d) for d in (handbook, manual)} == edited
    # The re-index embedded every paragraph again (hidden ones too, for an unhide), edited text as it now reads.
    assert any(t.endswith(FIXED_REFUNDS) for t in embedded.texts) and len(embedded.texts) == 5
    assert set(ParagraphEdit.objects.values_list("status", flat=True)) == {"applied"}
    # And searches answer from the replayed edits.
    assert "Quokka" in texts(search(cast.viewer, "Quokka card"))
    assert "Parcels" not in texts(search(cast.viewer, "parcels warehouse morning"))
    (tail,) = [r for r in search(cast.viewer, "opened software seal") if r["text"].startswith("Opened software")]
    assert "two year warranty" in tail["text"] and tail["page"] == 1


def test_a_new_version_reports_exactly_the_edits_that_no_longer_apply(cast, handbook, upload):
    refunds, payroll = paragraph(handbook, "Refunds are paid"), paragraph(handbook, "Salaries")
    cast.editor.patch(f"{base(handbook)}/paragraphs/{refunds.pk}", {"text": FIXED_REFUNDS}, format="json")
    cast.editor.patch(f"{base(handbook)}/paragraphs/{payroll.pk}", {"text": "Salaries arrive monthly."}, format="json")
    shipping = paragraph(handbook, "Parcels leave")
    cast.editor.patch(f"{base(handbook)}/paragraphs/{shipping.pk}", {"hidden": True}, format="json")

    changed = [*HANDBOOK[:3], (1, "Payroll", "Salaries are paid on the 25th of each month by bank transfer.")]
    answer = upload(cast.editor, handbook.collection, "handbook.docx", docx_bytes(changed))
    assert answer.status_code == 202 and answer.json()["document_id"] == str(handbook.pk)  # its next version

    handbook.refresh_from_db()
    assert handbook.version == 2
    edits = {e.after[0]["text"]: e for e in ParagraphEdit.objects.filter(document=handbook)}
    assert edits["Salaries arrive monthly."].status == "stale"
    assert {e.status for t, e in edits.items() if t != "Salaries arrive monthly."} == {"applied"}
    assert [p.text for p in paragraphs(handbook) if p.hidden] == [shipping.text]
    assert paragraph(handbook, "Salaries").text.endswith("on the 25th of each month by bank transfer.")
    listed = cast.editor.get(f"{base(handbook)}/paragraph-edits").json()
    assert [e["status"] for e in listed if e["status"] == "stale"] == ["stale"]

    # Re-applied to the paragraph an editor chooses: a new edit, applied; the stale one says it went elsewhere.
    stale = edits["Salaries arrive monthly."]
    target = paragraph(handbook, "Salaries")
    reapplied = cast.editor.post(
        f"{base(handbook)}/paragraph-edits/{stale.pk}/reapply", {"paragraph_id": str(target.pk)}, format="json"
    )
    assert reapplied.status_code == 200, reapplied.content
    assert reapplied.json()["paragraphs"][0]["text"] == "Salaries arrive monthly."
    stale.refresh_from_db()
    assert stale.status == "reapplied"


def test_a_stale_edit_can_be_discarded_and_no_rebuild_tries_it_again(cast, manual, upload):
    warranty = paragraph(manual, "two year warranty")
    cast.editor.patch(f"{base(manual)}/paragraphs/{warranty.pk}", {"text": "Warranty: two years."}, format="json")
    pages = [[("Returns", "Goods may be returned within thirty days.")], [("Warranty", "Three years, parts only.")]]
    upload(cast.editor, manual.collection, "manual.pdf", pdf_bytes(pages))
    (stale,) = ParagraphEdit.objects.filter(document=manual, status="stale")

    assert cast.editor.post(f"{base(manual)}/paragraph-edits/{stale.pk}/discard").status_code == 204
    stale.refresh_from_db()
    assert stale.status == "discarded"
    assert cast.editor.post(f"{base(manual)}/paragraph-edits/{stale.pk}/discard").status_code == 409


def test_every_edit_is_a_row_and_a_revert_undoes_it_unless_a_later_edit_builds_on_it(
    cast, manual, embedded, django_capture_on_commit_callbacks
):
    returns = paragraph(manual, "Goods may be returned")
    original = returns.text
    split = cast.editor.post(
        f"{base(manual)}/paragraphs/{returns.pk}/split", {"at": original.index("Opened")}, format="json"
    ).json()["paragraphs"]
    second = split[1]["id"]
    cast.editor.patch(f"{base(manual)}/paragraphs/{second}", {"text": "Opened software: no returns."}, format="json")
    history = cast.editor.get(f"{base(manual)}/paragraph-edits").json()
    assert [e["operation"] for e in history] == ["edit", "split"]  # newest first
    assert history[1]["before"][0]["text"] == original
    assert [a["text"] for a in history[1]["after"]] == [split[0]["text"], split[1]["text"]]

    refused = cast.editor.post(f"{base(manual)}/paragraph-edits/{history[1]['id']}/revert")
    assert refused.status_code == 409 and "later edit" in str(refused.json())

    embedded.texts.clear()
    undone = cast.editor.post(f"{base(manual)}/paragraph-edits/{history[0]['id']}/revert")
    assert undone.status_code == 200, undone.content
    assert undone.json()["paragraphs"][0]["text"] == split[1]["text"]
    assert len(embedded.texts) == 1
    merged_back = cast.editor.post(f"{base(manual)}/paragraph-edits/{history[1]['id']}/revert")
    assert merged_back.status_code == 200, merged_back.content
    first, _ = paragraphs(manual)
    assert first.text == original
    assert [p.ordinal for p in paragraphs(manual)] == [0, 1]
    statuses = dict(ParagraphEdit.objects.filter(document=manual).values_list("operation", "status").distinct())
    assert statuses["split"] == statuses["edit"] == "reverted" and statuses["revert"] == "applied"
    assert cast.editor.post(f"{base(manual)}/paragraph-edits/{history[1]['id']}/revert").status_code == 409
    # A rebuild replays neither a reverted edit nor its revert: the chunker's own paragraphs come back.
    reverted = [p.text for p in paragraphs(manual)]
    with django_capture_on_commit_callbacks(execute=True):
        assert cast.editor.post(f"{base(manual)}/rechunk").status_code == 202
    assert [p.text for p in paragraphs(manual)] == reverted and not any(p.edited for p in paragraphs(manual))
