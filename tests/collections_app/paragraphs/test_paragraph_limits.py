"""What an editor's operation may make keeps the limits of what an import accepts, so whatever exports imports again
(issue 39, item 8)."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from collections_app.models import Chunk, Collection, ParagraphEdit
from collections_app.services.documents import merged_text
from infra.validation import MAX_PARAGRAPH_CHARS

from .conftest import base, paragraph, paragraphs, search, texts


def test_a_merge_past_the_import_limit_is_a_400_and_changes_nothing(cast, handbook) -> None:
    # Two neighbours each within the limit (an import accepts them), together past it.
    first, second = paragraph(handbook, "Refunds"), paragraph(handbook, "Parcels")
    half = MAX_PARAGRAPH_CHARS // 2 + 10
    Chunk.objects.filter(pk=first.pk).update(text=("Refunds are paid back. " * 5000)[:half])
    Chunk.objects.filter(pk=second.pk).update(text=("Parcels leave daily. " * 5000)[:half])
    before = [(p.pk, p.text) for p in paragraphs(handbook)]
    texts = dict(before)
    merged = len(merged_text(texts[first.pk], texts[second.pk], continues=second.continues))

    url = f"{base(handbook)}/paragraphs/{first.pk}/merge-next"
    answer = cast.editor.post(url, {"across_sections": True}, format="json")

    assert answer.status_code == 400, answer.status_code
    assert answer.json() == {
        "detail": f"the merged paragraph would hold {merged:,} characters: a paragraph holds at most "
        f"{MAX_PARAGRAPH_CHARS:,} (split one of the two first)"
    }
    assert [(p.pk, p.text) for p in paragraphs(handbook)] == before
    assert not ParagraphEdit.objects.filter(document=handbook).exists()


# --- long edits answer at once (issue 39, item 10) ---------------------------------------------------------------

# Past the longest text embedded inside a request; the words are ones the handbook does not hold.
LONG_TEXT = ("Quokka lockers stand beside the east stairwell and open with a staff badge. " * 160).strip()


def test_a_long_edit_answers_202_at_once_and_is_embedded_by_a_task(
    cast, handbook, embedded, django_capture_on_commit_callbacks
) -> None:
    refunds = paragraph(handbook, "Refunds are paid")
    url = f"{base(handbook)}/paragraphs/{refunds.pk}"

    with django_capture_on_commit_callbacks() as queued:  # the task is queued, not run: the request answers
        answer = cast.editor.patch(url, {"text": LONG_TEXT}, format="json")

    assert answer.status_code == 202, answer.status_code
    pending = answer.json()
    assert (pending["operation"], pending["status"]) == ("edit", "pending") and pending["after"][0]["text"] == LONG_TEXT
    assert embedded.texts == []  # nothing embedded while the request waited
    # Until the task has embedded it, searches read the paragraph as it was, and the history shows it pending.
    assert paragraph(handbook, "Refunds are paid").pk == refunds.pk
    assert "Quokka" not in texts(search(cast.viewer, "Quokka lockers east stairwell"))
    history = cast.editor.get(f"{base(handbook)}/paragraph-edits").json()
    assert [(e["id"], e["status"]) for e in history] == [(pending["id"], "pending")]

    for task in queued:
        task()

    assert [len(text) > len(LONG_TEXT) for text in embedded.texts] == [True]  # the text with its breadcrumb, once
    assert Chunk.objects.get(pk=refunds.pk).text == LONG_TEXT
    assert "Quokka lockers" in texts(search(cast.viewer, "Quokka lockers east stairwell"))
    edit = ParagraphEdit.objects.get(pk=pending["id"])
    assert edit.status == "applied" and edit.before[0]["text"] == refunds.text


def test_reverting_a_long_edit_answers_202_and_brings_the_old_text_back_through_a_task(
    cast, handbook, embedded, django_capture_on_commit_callbacks
) -> None:
    refunds = paragraph(handbook, "Refunds are paid")
    with django_capture_on_commit_callbacks(execute=True):
        cast.editor.patch(f"{base(handbook)}/paragraphs/{refunds.pk}", {"text": LONG_TEXT}, format="json")
    edit = ParagraphEdit.objects.get(document=handbook)
    assert edit.status == "applied"
    # The revert embeds the long text's predecessor, short here: made long by an earlier long edit.
    with django_capture_on_commit_callbacks(execute=True):
        cast.editor.patch(f"{base(handbook)}/paragraphs/{refunds.pk}", {"text": LONG_TEXT + " Again."}, format="json")
    second = ParagraphEdit.objects.filter(document=handbook).order_by("-created_at")[0]
    embedded.texts.clear()

    with django_capture_on_commit_callbacks() as queued:
        answer = cast.editor.post(f"{base(handbook)}/paragraph-edits/{second.pk}/revert", format="json")

    assert answer.status_code == 202, answer.status_code
    assert (answer.json()["operation"], answer.json()["status"]) == ("revert", "pending")
    assert embedded.texts == [] and Chunk.objects.get(pk=refunds.pk).text == LONG_TEXT + " Again."
    for task in queued:
        task()
    assert Chunk.objects.get(pk=refunds.pk).text == LONG_TEXT
    assert ParagraphEdit.objects.get(pk=second.pk).status == "reverted"
    assert ParagraphEdit.objects.get(pk=answer.json()["id"]).status == "applied"


def test_a_long_edit_that_no_longer_applies_when_its_task_runs_ends_failed_saying_why(
    cast, handbook, embedded, django_capture_on_commit_callbacks
) -> None:
    refunds = paragraph(handbook, "Refunds are paid")
    with django_capture_on_commit_callbacks() as queued:
        answer = cast.editor.patch(f"{base(handbook)}/paragraphs/{refunds.pk}", {"text": LONG_TEXT}, format="json")
    assert answer.status_code == 202
    Collection.objects.filter(pk=handbook.collection_id).update(reindex_generation=7)  # a re-index began meanwhile

    for task in queued:
        task()

    edit = ParagraphEdit.objects.get(pk=answer.json()["id"])
    assert edit.status == "failed" and "re-index" in edit.params["error"]
    assert Chunk.objects.get(pk=refunds.pk).text == refunds.text and embedded.texts == []
    history = cast.editor.get(f"{base(handbook)}/paragraph-edits").json()
    assert history[0]["status"] == "failed" and "re-index" in history[0]["params"]["error"]


def test_re_applying_a_long_stale_edit_answers_202_and_marks_it_re_applied_when_its_task_applies_it(
    cast, handbook, embedded, django_capture_on_commit_callbacks
) -> None:
    payroll = paragraph(handbook, "Salaries are paid")
    stale = ParagraphEdit.objects.create(
        tenant=cast.tenant, collection=handbook.collection, document=handbook, operation="edit", status="stale",
        anchor={"hash": "0" * 64}, before=[{"text": "gone"}], after=[{"text": LONG_TEXT}],
    )  # fmt: skip

    with django_capture_on_commit_callbacks() as queued:
        answer = cast.editor.post(
            f"{base(handbook)}/paragraph-edits/{stale.pk}/reapply", {"paragraph_id": str(payroll.pk)}, format="json"
        )

    assert answer.status_code == 202, answer.content[:300]
    assert embedded.texts == [] and ParagraphEdit.objects.get(pk=stale.pk).status == "stale"
    for task in queued:
        task()
    assert Chunk.objects.get(pk=payroll.pk).text == LONG_TEXT
    assert ParagraphEdit.objects.get(pk=answer.json()["id"]).status == "applied"
    assert ParagraphEdit.objects.get(pk=stale.pk).status == "reapplied"


# --- while a long edit is pending, the document's other edits wait (attack finding 7) ---------------------------

BUSY = "an edit of this document is being embedded (pending); try again in a moment"


def test_while_a_long_edit_is_pending_other_edits_of_the_document_answer_409_and_are_not_overwritten(
    cast, handbook, embedded, django_capture_on_commit_callbacks
) -> None:
    refunds, payroll = paragraph(handbook, "Refunds are paid"), paragraph(handbook, "Salaries are paid")
    url = f"{base(handbook)}/paragraphs/{refunds.pk}"
    with django_capture_on_commit_callbacks() as queued:
        pending = cast.editor.patch(url, {"text": LONG_TEXT}, format="json")
    assert pending.status_code == 202

    answers = [
        cast.editor.patch(url, {"text": "Refunds are paid within a week."}, format="json"),
        cast.editor.post(f"{url}/merge-next", {"across_sections": True}, format="json"),
        cast.editor.post(f"{url}/split", {"at": 5}, format="json"),
        cast.editor.patch(f"{base(handbook)}/paragraphs/{payroll.pk}", {"hidden": True}, format="json"),
        cast.editor.patch(f"{base(handbook)}/paragraphs/{payroll.pk}", {"text": LONG_TEXT + " Too."}, format="json"),
    ]

    assert [(a.status_code, a.json()) for a in answers] == [(409, {"detail": BUSY})] * len(answers)
    for task in queued:
        task()
    assert Chunk.objects.get(pk=refunds.pk).text == LONG_TEXT
    assert [(e.operation, e.status) for e in ParagraphEdit.objects.filter(document=handbook)] == [("edit", "applied")]
    # Once it is applied, the next edit goes through.
    assert cast.editor.patch(url, {"text": "Refunds are paid within a week."}, format="json").status_code == 200


def test_an_edit_pending_past_the_bound_ends_failed_when_the_next_edit_arrives(
    cast, handbook, embedded, django_capture_on_commit_callbacks
) -> None:
    refunds = paragraph(handbook, "Refunds are paid")
    url = f"{base(handbook)}/paragraphs/{refunds.pk}"
    with django_capture_on_commit_callbacks():  # its task never runs
        pending = cast.editor.patch(url, {"text": LONG_TEXT}, format="json")
    ParagraphEdit.objects.filter(pk=pending.json()["id"]).update(created_at=timezone.now() - timedelta(minutes=16))

    answer = cast.editor.patch(url, {"text": "Refunds are paid within a week."}, format="json")

    assert answer.status_code == 200, answer.content[:300]
    stuck = ParagraphEdit.objects.get(pk=pending.json()["id"])
    assert stuck.status == "failed" and stuck.params["error"] == "its embedding never finished"
    assert Chunk.objects.get(pk=refunds.pk).text == "Refunds are paid within a week."
