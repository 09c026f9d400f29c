"""Admin: the audit records of ingestion — paragraphs (chunks) and builds; read by every member, written by none."""

from __future__ import annotations

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from collections_app.models import Build, Chunk
from doors.admin.base import AuditAdmin
from doors.admin.display import key_value_rows


@admin.register(Chunk)
class ChunkAdmin(AuditAdmin):
    list_display = ["document", "ordinal", "page", "section_trail", "language", "short_text"]
    list_filter = ["language", "collection"]
    list_select_related = ["document"]
    search_fields = ["text"]
    fields = ["document_link", "collection", "ordinal", "page", "section_trail", "language", "labels", "text",
              "metadata_shown"]  # fmt: skip
    readonly_fields = ["document_link", "section_trail", "metadata_shown"]

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
