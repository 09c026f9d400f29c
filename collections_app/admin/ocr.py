"""Admin: the OCR languages of a document — "Language of scanned text" on upload, and an OCR page of its own.

The page (like UserAdmin's password page) lets the editor change the Tesseract languages; saving calls
document_options_update, which re-parses from the original only once the editor ticks the confirmation.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html
from django.utils.text import capfirst

from collections_app.models import Document
from collections_app.services.ingest_options import (
    REPARSE_WARNING,
    InvalidIngestOptions,
    ReparseNeedsConfirmation,
    document_options_update,
    ingest_options_validate,
    no_original_to_reparse,
)
from doors.admin.base import ToolPage, object_for_tool
from ingestion.ocr import SCANNED_TEXT_LANGUAGES


def scanned_text_field() -> forms.ChoiceField:
    return forms.ChoiceField(
        label="Language of scanned text",
        required=False,
        choices=[(key, label) for key, (label, _) in SCANNED_TEXT_LANGUAGES.items()],
        help_text="Images and scanned PDF pages are read by Tesseract OCR in this language.",
    )


def scanned_text_langs(choice: str) -> list[str]:
    """The upload form's choice as validated `tesseract_langs` ([] = the default languages)."""
    langs = SCANNED_TEXT_LANGUAGES[choice or ""][1]
    try:  # e.g. the language's Tesseract data is not installed: say so before the upload is stored
        return ingest_options_validate({"tesseract_langs": langs})["tesseract_langs"] if langs else []
    except InvalidIngestOptions as exc:
        raise forms.ValidationError(str(exc)) from exc


class DocumentOcrForm(forms.Form):
    """The OCR languages of one document; changing them re-parses it, so the editor confirms."""

    scanned_text_language = scanned_text_field()
    other_languages = forms.CharField(
        required=False,
        label="Or Tesseract language codes",
        help_text="Instead of the choice above, e.g. srp srp_latn eng.",
    )
    confirm_reparse = forms.BooleanField(required=False, label="Yes, re-parse this document from its original")

    @staticmethod
    def initial_for(document: Document) -> dict[str, str]:
        langs = list(document.ingest_options.get("tesseract_langs") or [])
        preset = next((key for key, (_, value) in SCANNED_TEXT_LANGUAGES.items() if value == langs), None)
        return {"scanned_text_language": preset} if preset is not None else {"other_languages": " ".join(langs)}

    def tesseract_langs(self) -> list[str]:
        other = self.cleaned_data.get("other_languages", "").replace("+", " ").replace(",", " ").split()
        return other or SCANNED_TEXT_LANGUAGES[self.cleaned_data.get("scanned_text_language") or ""][1]


class OcrAdminMixin(admin.ModelAdmin):
    """Mixed into DocumentAdmin: the `ocr_languages` read-only field links to the OCR page."""

    @admin.display(description="OCR languages")
    def ocr_languages(self, obj: Document) -> str:
        if not obj.has_original:
            return "— imported from a collection file: no original to read again with OCR"
        langs = obj.ingest_options.get("tesseract_langs") or []
        mineru = obj.ingest_options.get("mineru_lang")
        url = reverse(f"{self.admin_site.name}:collections_app_document_ocr", args=[obj.pk])
        return format_html(
            'Tesseract: {}{} — <a href="{}">change OCR languages</a>',
            "+".join(langs) if langs else "default (English and other Latin-script text)",
            f"; MinerU: {mineru}" if mineru else "",
            url,
        )

    tool_pages: tuple[ToolPage, ...] = (ToolPage("<path:object_id>/ocr/", "ocr_view", "ocr"),)

    def ocr_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        document = object_for_tool(self, request, object_id, change=True)
        if not document.has_original:  # nothing to re-parse: said on the document's page, not as a form that fails
            self.message_user(request, no_original_to_reparse(document), messages.WARNING)
            return HttpResponseRedirect(
                reverse(f"{self.admin_site.name}:collections_app_document_change", args=[document.pk])
            )
        # The API's wording ends with how to confirm over the API; the checkbox says that here.
        warning = capfirst(REPARSE_WARNING.partition(" Send ")[0])
        form = DocumentOcrForm(request.POST or None, initial=DocumentOcrForm.initial_for(document))
        if request.method == "POST" and form.is_valid():
            langs = form.tesseract_langs()
            try:
                document_options_update(
                    document=document,
                    changes={"tesseract_langs": langs},
                    confirm_reparse=form.cleaned_data["confirm_reparse"],
                )
            except InvalidIngestOptions as exc:
                form.add_error(None, str(exc))
            except ReparseNeedsConfirmation:
                form.add_error("confirm_reparse", warning)
            else:
                shown = "+".join(langs) if langs else "the default languages"
                self.message_user(request, f"Re-parsing {document.filename} with OCR in {shown}.")
                return HttpResponseRedirect(
                    reverse(f"{self.admin_site.name}:collections_app_document_change", args=[document.pk])
                )
        context = {
            **self.admin_site.each_context(request),
            "title": f"OCR languages of {document.filename}",
            "opts": self.opts,
            "original": document,
            "form": form,
            "reparse_warning": warning,
            "mineru_lang": document.ingest_options.get("mineru_lang") or "",
        }
        return TemplateResponse(request, "admin/collections_app/document/ocr.html", context)
