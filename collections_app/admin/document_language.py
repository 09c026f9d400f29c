"""Admin: correct a document's language — a page of its own under the document, like the OCR page.

Saving calls document_language_set: the document and its paragraphs take the language at once and their
keyword index follows; nothing is parsed or embedded again. The language is pinned (every later build keeps
it); "Automatic" unpins it (document_language_unpin).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.db.models import Count
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from collections_app.models import Chunk
from collections_app.services.languages import document_language_set, document_language_unpin
from doors.admin.base import ToolPage, object_for_tool
from infra.errors import DomainError
from ingestion.languages import SUPPORTED_LANGUAGES, language_name, language_shown

AUTOMATIC = ("", "Automatic: detected from the text")


def language_choices() -> list[tuple[str, str]]:
    return sorted(((code, language_shown(code)) for code in SUPPORTED_LANGUAGES), key=lambda c: c[1])


class DocumentLanguageForm(forms.Form):
    language = forms.ChoiceField(
        choices=lambda: [AUTOMATIC, *language_choices()],
        required=False,
        help_text="Every paragraph of the document takes this language, also when the document is re-chunked, "
        "re-indexed or read again; its keywords are then matched with this language's word forms. Nothing is "
        "read or embedded again. Automatic gives the paragraphs their detected languages back.",
    )


class DocumentLanguageAdminMixin(admin.ModelAdmin):
    """Mixed into DocumentAdmin: a "Change language" button above the document, and its page."""

    tool_pages: tuple[ToolPage, ...] = (ToolPage("<path:object_id>/language/", "language_view", "language"),)

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        context = dict(extra_context or {})
        if "kb_tools" in context and request.method != "POST":
            document = self.get_object(request, unquote(object_id))
            if document is not None and self.has_change_permission(request, document):
                url = reverse(f"{self.admin_site.name}:collections_app_document_language", args=[document.pk])
                context["kb_tools"] = [*context["kb_tools"], ("Change language", url)]
        return super().change_view(request, object_id, form_url, context)

    def language_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        document = object_for_tool(self, request, object_id, change=True)
        form = DocumentLanguageForm(request.POST or None, initial={"language": document.language_pinned})
        if request.method == "POST" and form.is_valid():
            try:
                if form.cleaned_data["language"]:
                    document_language_set(document=document, language=form.cleaned_data["language"])
                    done = (
                        f"{document.filename} and its paragraphs are now labelled {language_name(document.language)}."
                    )
                else:
                    done = f"{document.filename}: {document_language_unpin(document=document).note}."
            except DomainError as exc:
                form.add_error(None, str(exc))
            else:
                self.message_user(request, done)
                return HttpResponseRedirect(
                    reverse(f"{self.admin_site.name}:collections_app_document_change", args=[document.pk])
                )
        counts = (
            Chunk.objects.filter(document=document)
            .live()
            .paragraphs()
            .values_list("language")
            .annotate(n=Count("id"))
            .order_by()
        )
        paragraphs = sorted(((language_name(code), n) for code, n in counts if n), key=lambda r: -r[1])
        context = {
            **self.admin_site.each_context(request),
            "title": f"Language of {document.filename}",
            "opts": self.opts,
            "original": document,
            "form": form,
            "paragraph_languages": paragraphs,
            "current": language_name(document.language),
        }
        return TemplateResponse(request, "admin/collections_app/document/language.html", context)
