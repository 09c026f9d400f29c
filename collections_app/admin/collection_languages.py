"""Admin: the "Languages" section of a collection — its measured split and the pinned list.

The pinned list is the collection's `languages` field, saved through the same service as the API's
(codes checked against the supported ones, sr/hr/bs stored as sh); empty means measured.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest
from django.utils.html import format_html

from collections_app.models import Collection
from collections_app.selectors.languages import (
    LANGUAGE_SHARE_FLOOR,
    MAX_MEASURED_LANGUAGES,
    collection_language_shares,
    measured_languages,
)
from doors.admin.display import table
from ingestion.languages import SH, SUPPORTED_LANGUAGES, language_name, language_shown

PINNED_HELP = (
    "Language codes, comma-separated (e.g. mk,en), most important first: questions in another language are "
    "translated into these. A language the collection does not contain yet may be pinned. Empty: measured. "
    f"Supported: {', '.join(sorted(SUPPORTED_LANGUAGES))} (sh is {language_name(SH)}, both scripts)."
)


class CollectionLanguagesAdminMixin(admin.ModelAdmin):
    """Mixed into CollectionAdmin: the measured shares beside the pinned list (see languages_fieldset)."""

    def get_readonly_fields(self, request: HttpRequest, obj: Collection | None = None) -> list[str] | tuple[str, ...]:
        readonly = list(super().get_readonly_fields(request, obj))
        return [*readonly, "language_shares_shown"] if obj is not None else readonly

    def get_form(
        self, request: HttpRequest, obj: Collection | None = None, change: bool = False, **kwargs: Any
    ) -> type[forms.ModelForm[Collection]]:
        form = super().get_form(request, obj, change=change, **kwargs)
        if "languages" in form.base_fields:
            form.base_fields["languages"].label = "Pinned languages"
            form.base_fields["languages"].help_text = PINNED_HELP
        return form

    @admin.display(description="measured")
    def language_shares_shown(self, obj: Collection) -> str:
        shares = collection_language_shares(obj)
        rows = [
            (
                language_shown(s["language"]),
                s["paragraphs"],
                f"{s['share']:.1%}",
            )
            for s in shares
        ]
        measured = measured_languages(shares)
        summary = format_html(
            "<p>Measured languages: <strong>{}</strong>{}</p>",
            ", ".join(language_shown(code) for code in measured) or "none yet",
            format_html(" — pinned instead: <strong>{}</strong>", ", ".join(language_shown(c) for c in obj.languages))
            if obj.languages
            else "",
        )
        return format_html("{}{}", summary, table(["language", "paragraphs", "share"], rows, empty="no paragraphs yet"))


_SECTION = (
    f"A collection's languages are those making up at least {LANGUAGE_SHARE_FLOOR:.0%} of its paragraphs, "
    f"at most {MAX_MEASURED_LANGUAGES}, most frequent first — unless some are pinned here."
)


def languages_fieldset(obj: Collection | None) -> dict[str, Any]:
    """The "Languages" section of CollectionAdmin.get_fieldsets: the pinned list, and the measured split."""
    return {"fields": ["languages"] if obj is None else ["languages", "language_shares_shown"], "description": _SECTION}
