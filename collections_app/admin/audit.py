"""Admin: the audit records of ingestion — paragraphs (chunks) and builds; read by every member, written by none."""

from __future__ import annotations

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from collections_app.ingestion.languages import language_shown
from collections_app.models import Build, Chunk
from collections_app.selectors import UNLISTED_DOCUMENT_COLUMNS
from doors.admin.base import AuditAdmin
from doors.admin.display import LanguageFilter, key_value_rows


@admin.register(Chunk)
class ChunkAdmin(AuditAdmin):
    list_display = ["document", "ordinal", "page", "section_trail", "language_name", "short_text"]
    list_filter = [("language", LanguageFilter), "collection"]
    list_select_related = ["document"]
    search_fields = ["text"]
    fields = ["document_link", "collection", "ordinal", "page", "section_trail", "language_name", "labels",
              "text", "metadata_shown"]  # fmt: skip
    readonly_fields = ["document_link", "section_trail", "language_name", "metadata_shown"]

    def get_queryset(self, request):  # type: ignore[no-untyped-def]
        # Its document by name only (a large one's JSON columns are megabytes, read once per listed row), and
        # no vector nor keyword index: nothing here shows them.
        return (
            super()
            .get_queryset(request)
            .select_related("document")
            .defer("embedding", "search_vector", *(f"document__{c}" for c in UNLISTED_DOCUMENT_COLUMNS))
        )

    def get_ordering(self, request):  # type: ignore[no-untyped-def]
        if request.GET.get("document__id__exact"):
            # One document's paragraphs (the document page's link): in the order of the unique index
            # (document, generation, ordinal), so a page of a large document reads that page's rows, not all
            # of them sorted. The same order as the model's, the generation searches read first during a re-index.
            return ["document_id", "generation", "ordinal"]
        return super().get_ordering(request)

    def lookup_allowed(self, lookup, value, request=None) -> bool:  # type: ignore[no-untyped-def]
        # Filter by document through the URL (?document__id__exact=...), linked from the document page.
        return lookup in {"document__id__exact", "document"} or super().lookup_allowed(lookup, value, request)

    @admin.display(description="document")
    def document_link(self, obj: Chunk) -> str:
        return format_html(
            '<a href="{}">{}</a>',
            reverse("admin:collections_app_document_change", args=[obj.document_id]),
            obj.document,
        )

    @admin.display(ordering="language", description="language")
    def language_name(self, obj: Chunk) -> str:
        return language_shown(obj.language)

    @admin.display(description="section")
    def section_trail(self, obj: Chunk) -> str:
        return " › ".join(obj.section)

    @admin.display(description="text")
    def short_text(self, obj: Chunk) -> str:
        return obj.text[:120]

    @admin.display(description="metadata")
    def metadata_shown(self, obj: Chunk) -> str:
        return key_value_rows(obj.metadata, empty="none")


@admin.register(Build)
class BuildAdmin(AuditAdmin):
    list_display = [
        "built_at", "collection", "document", "built_from", "model", "dims", "passages",
        "refused_names", "warning_lines",
    ]  # fmt: skip
    list_filter = ["collection", "model"]
    list_select_related = ["collection", "document"]
    # Each stored value once, as a person reads it (refused and warnings were listed raw and read again).
    fields = ["built_at", "collection_link", "document_link", "built_from", "model", "dims", "passages",
              "method_shown", "refused_names", "warning_lines"]  # fmt: skip
    readonly_fields = ["built_at", "collection_link", "document_link", "method_shown", "refused_names", "warning_lines"]

    def get_queryset(self, request):  # type: ignore[no-untyped-def]
        # Each build's document by name only: a large one's JSON columns would be read once per listed build.
        return (
            super()
            .get_queryset(request)
            .select_related("collection", "document")
            .defer(*(f"document__{c}" for c in UNLISTED_DOCUMENT_COLUMNS))
        )

    def lookup_allowed(self, lookup, value, request=None) -> bool:  # type: ignore[no-untyped-def]
        # Filter by document through the URL, linked from the document page's "Builds".
        return lookup in {"document__id__exact", "document"} or super().lookup_allowed(lookup, value, request)

    @admin.display(description="collection")
    def collection_link(self, obj: Build) -> str:
        url = reverse("admin:collections_app_collection_change", args=[obj.collection_id])
        return format_html('<a href="{}">{}</a>', url, obj.collection)

    @admin.display(description="document")
    def document_link(self, obj: Build) -> str:
        if obj.document_id is None:
            return "— (the whole collection, or a document since deleted)"
        url = reverse("admin:collections_app_document_change", args=[obj.document_id])
        return format_html('<a href="{}">{}</a>', url, obj.document)

    @admin.display(description="method")
    def method_shown(self, obj: Build) -> str:
        return key_value_rows(obj.method, empty="not recorded")

    @admin.display(description="refused")
    def refused_names(self, obj: Build) -> str:
        # Three answers, never collapsed: unknown, nothing, or the names.
        if obj.refused is None:
            return "not recorded"
        return ", ".join(obj.refused) if obj.refused else "nothing refused"

    @admin.display(description="warnings")
    def warning_lines(self, obj: Build) -> str:
        return "; ".join(obj.warnings) if obj.warnings else "none"
