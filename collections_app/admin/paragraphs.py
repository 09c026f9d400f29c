"""Admin: a document's paragraphs page, where editors fix paragraphs by hand (issue 20).

DocumentParagraphsAdminMixin (DocumentAdmin) adds a page of its own (like UserAdmin's password page):
every live paragraph in order (hidden ones struck through), each editable in place — save, split at the cursor,
merge with the next, hide or show — with the document's edit history (revert) and the edits that no longer
apply (re-apply to a paragraph, discard). Each button posts one action, which calls one service and comes back
to the same place. The document's own page says how many edits no longer apply and links here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from collections_app.models import Chunk, Document, ParagraphEdit
from collections_app.selectors.paragraphs import (
    document_paragraph_edits,
    document_paragraphs_for_editors,
    document_stale_edits,
)
from collections_app.services.documents import text_hash
from collections_app.services.paragraph_edits import (
    EditPending,
    paragraph_edit,
    paragraph_edit_discard,
    paragraph_edit_reapply,
    paragraph_edit_revert,
    paragraph_edits_refusal,
    paragraph_hide,
    paragraph_merge_next,
    paragraph_split,
)
from collections_app.services.preview import document_paragraph_numbers
from doors.admin.base import ToolPage, object_for_tool
from doors.admin.display import as_sentence
from embedding import UnsearchableVector
from infra.errors import DomainError, Invalid

# Paragraphs on one page of the paragraphs page; the history shows the latest edits.
PARAGRAPHS_PER_PAGE = 100
HISTORY_SHOWN = 50
CLICK_TO_SPLIT = (
    "Click in the paragraph's text where it should split (with text on both sides of the cursor), then press "
    "“Split at the cursor”."
)
ACTIONS = ("edit", "split", "merge", "hide", "unhide", "revert", "reapply", "discard")
# The session key under which a refused Save keeps the editor's text for the page it redirects to (see _act).
UNSAVED_KEY = "kb_paragraph_unsaved"


class ParagraphActionForm(forms.Form):
    action = forms.ChoiceField(choices=[(a, a) for a in ACTIONS])
    paragraph = forms.UUIDField(required=False)
    edit = forms.UUIDField(required=False)
    text = forms.CharField(required=False, strip=False)
    # text_hash() of the paragraph's text as the page showed it: a save or split made on an older page is refused.
    seen = forms.CharField(required=False, max_length=64)
    at = forms.IntegerField(required=False, min_value=0)
    across_sections = forms.BooleanField(required=False)
    # Re-apply: the number (ordinal) of the paragraph the edit goes to, as the page shows it.
    target = forms.IntegerField(required=False, min_value=0)


MERGE_ACROSS = (
    "The next paragraph is in another section: tick “across sections” beside “Merge with next” to merge them (the "
    "merged paragraph takes this one's section)."
)


def stale_edits_warning(count: int) -> str:
    return f"{count} edit{'s' if count != 1 else ''} no longer appl{'y' if count != 1 else 'ies'}"


class DocumentParagraphsAdminMixin(admin.ModelAdmin):
    tool_pages: tuple[ToolPage, ...] = (ToolPage("<path:object_id>/paragraphs/", "paragraphs_view", "paragraphs"),)

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        context = dict(extra_context or {})
        document = self.get_object(request, unquote(object_id)) if request.method == "GET" else None
        if document is not None and self.has_change_permission(request, document):
            url = reverse(f"{self.admin_site.name}:collections_app_document_paragraphs", args=[document.pk])
            context["kb_tools"] = [*context.get("kb_tools", []), ("Edit paragraphs", url)]
            stale = document_stale_edits(document).count()
            if stale:
                messages.warning(request, as_sentence(f"{stale_edits_warning(stale)}: see “Edit paragraphs”."))
        return super().change_view(request, object_id, form_url, context)

    def paragraphs_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        # Editors' page, reading included: it shows hidden paragraphs, which no reader may read.
        document = object_for_tool(self, request, object_id, change=True)
        if request.method == "POST":
            return self._act(request, document)
        rows = document_paragraphs_for_editors(document)
        unsaved = _unsaved_taken(request, document)
        refusal = paragraph_edits_refusal(document=document)  # then no action is offered: none could run
        numbers = document_paragraph_numbers(
            document=document, paragraphs=list(rows.values_list("text", "hidden", "edited"))
        )
        page = Paginator(rows, PARAGRAPHS_PER_PAGE).get_page(request.GET.get("page"))
        shown = _shown(list(page.object_list), rows, unsaved)
        context = {
            **self.admin_site.each_context(request),
            "title": f"Paragraphs of {document.filename}",
            "opts": self.opts,
            "original": document,
            "page": page,
            "shown": shown,
            # A refused Save's text whose paragraph is not on this page (merged away, or on another page).
            "unsaved_elsewhere": unsaved if unsaved and not any(row.unsaved is not None for row in shown) else None,
            "numbers": numbers,
            "history": document_paragraph_edits(document).select_related("reverts")[:HISTORY_SHOWN],
            "stale": list(document_stale_edits(document)),
            "stale_warning": stale_edits_warning(document_stale_edits(document).count()),
            "can_edit": self.has_change_permission(request, document) and refusal is None,
            "refusal": refusal,
        }
        return TemplateResponse(request, "admin/collections_app/document/paragraphs.html", context)

    def _act(self, request: HttpRequest, document: Document) -> HttpResponse:
        form = ParagraphActionForm(request.POST)
        back = reverse(f"{self.admin_site.name}:collections_app_document_paragraphs", args=[document.pk])
        if not form.is_valid():
            messages.error(request, "That action could not be read; reload the page and try again.")
            return HttpResponseRedirect(back)
        data = form.cleaned_data
        by = request.user.get_username()
        try:
            changed = _dispatch(document, data, by)
        except (DomainError, UnsearchableVector) as exc:  # the model's bad vector: said, nothing changed
            messages.error(request, as_sentence(str(exc)))
            kept = None
            if data["action"] == "edit" and data["paragraph"] is not None:
                # The redirect reloads the page, which showed the stored text: the editor's typing (a rewrite
                # refused because someone else changed the paragraph meanwhile) was gone. Kept for the next page,
                # which opens at the paragraph, its box holding the typing again.
                request.session[UNSAVED_KEY] = {
                    "document": str(document.pk), "paragraph": str(data["paragraph"]), "text": data["text"],
                }  # fmt: skip
                kept = document_paragraphs_for_editors(document).filter(pk=data["paragraph"]).first()
            return HttpResponseRedirect(back + _where(request, kept))
        except EditPending:
            messages.info(
                request,
                "The text is long: it is being embedded in the background and applies in a minute or so (the "
                "history shows it pending until then; searches read the paragraph as it was).",
            )
            return HttpResponseRedirect(back + _where(request, None))
        self.message_user(request, _done(data["action"], changed))
        return HttpResponseRedirect(back + _where(request, changed[0] if changed else None))


def _dispatch(document: Document, data: dict[str, Any], by: str) -> list[Chunk]:
    action, paragraph = data["action"], data["paragraph"]
    if action in ("revert", "reapply", "discard"):
        edit = document_paragraph_edits(document).filter(pk=data["edit"]).first()
        if edit is None:
            raise _Missing("that edit is not this document's")
        return _on_edit(document, action, edit, data, by)
    if paragraph is None:
        raise _Missing("no paragraph was named")
    if action == "edit":
        seen = data["seen"] or None
        return paragraph_edit(document=document, paragraph_id=paragraph, text=data["text"], by=by, seen=seen)
    if action == "split":
        try:
            return paragraph_split(
                document=document, paragraph_id=paragraph, at=data["at"] or 0, by=by, seen=data["seen"] or None
            )
        except Invalid as exc:
            if exc.field != "at":
                raise
            # The page sends where the cursor stood: no cursor (or one at an edge) is a click still to make.
            raise Invalid(CLICK_TO_SPLIT, field="at") from exc
    if action == "merge":
        across = data["across_sections"]
        try:
            return paragraph_merge_next(document=document, paragraph_id=paragraph, by=by, across_sections=across)
        except Invalid as exc:
            if exc.field != "across_sections":
                raise
            # The page's words, not the API's: the box beside the button.
            raise Invalid(MERGE_ACROSS, field="across_sections") from exc
    return paragraph_hide(document=document, paragraph_id=paragraph, hidden=action == "hide", by=by)


def _on_edit(document: Document, action: str, edit: ParagraphEdit, data: dict[str, Any], by: str) -> list[Chunk]:
    if action == "revert":
        return paragraph_edit_revert(edit=edit, by=by)
    if action == "discard":
        paragraph_edit_discard(edit=edit)
        return []
    target = document_paragraphs_for_editors(document).filter(position__ordinal=data["target"]).first()
    if target is None:
        raise _Missing("no paragraph has that number: pick one from the list below")
    return paragraph_edit_reapply(edit=edit, paragraph_id=target.pk, by=by)


@dataclass(frozen=True)
class _Shown:
    """A paragraph on the page with what may be done to it: a merge only where there is a next paragraph it can
    merge with (not after the document's last, not across a hidden/shown pair), "across sections" only where the
    next one is in another section."""

    paragraph: Chunk
    following: Chunk | None
    merge: bool
    across: bool
    unsaved: str | None = None  # the editor's text a refused Save left unsaved, shown again in the box

    @property
    def seen(self) -> str:
        return text_hash(self.paragraph.text)


def _unsaved_taken(request: HttpRequest, document: Document) -> dict[str, str] | None:
    """The text a refused Save kept for this document's page (once: a later visit shows the page as stored)."""
    kept = request.session.pop(UNSAVED_KEY, None)
    if not isinstance(kept, dict) or kept.get("document") != str(document.pk):
        return None
    return kept


def _shown(paragraphs: list[Chunk], rows: Any, unsaved: dict[str, str] | None = None) -> list[_Shown]:
    if not paragraphs:
        return []
    after = rows.filter(position__ordinal__gt=paragraphs[-1].ordinal).only("section", "hidden").first()
    return [
        _Shown(
            paragraph=paragraph,
            following=following,
            merge=following is not None and following.hidden == paragraph.hidden,
            across=following is not None and list(following.section) != list(paragraph.section),
            unsaved=unsaved["text"] if unsaved and unsaved["paragraph"] == str(paragraph.pk) else None,
        )
        for paragraph, following in zip(paragraphs, [*paragraphs[1:], after], strict=True)
    ]


class _Missing(DomainError):
    meaning = "not_found"


def _done(action: str, changed: list[Chunk]) -> str:
    said = {
        "edit": "Paragraph saved and embedded again",
        "split": "Paragraph split in two",
        "merge": "Paragraphs merged",
        "hide": "Paragraph hidden from every reader",
        "unhide": "Paragraph shown again",
        "revert": "Edit reverted",
        "reapply": "Edit re-applied",
        "discard": "Edit discarded",
    }[action]
    return f"{said}." if not changed else f"{said}: paragraph #{changed[0].ordinal}."


def _where(request: HttpRequest, changed: Chunk | None) -> str:
    # Back to the page and the paragraph the editor was at.
    page = request.POST.get("page") or ""
    query = f"?page={page}" if page.isdigit() else ""
    if changed is not None:
        query = f"?page={changed.ordinal // PARAGRAPHS_PER_PAGE + 1}"
        return f"{query}#p{changed.ordinal}"
    return query
