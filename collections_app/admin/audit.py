"""Admin: the audit records of ingestion — paragraphs (chunks) and builds; read by every member, written by none."""

from __future__ import annotations

from django.contrib import admin

from collections_app.admin.base import AuditAdmin
from collections_app.models import (
    Build,
    Chunk,
)


@admin.register(Chunk)
class ChunkAdmin(AuditAdmin):
    list_display = ["document", "ordinal", "page", "section_trail", "language", "short_text"]
    list_filter = ["language", "collection"]
    list_select_related = ["document"]
    search_fields = ["text"]
    exclude = ["embedding", "search_vector"]

    def lookup_allowed(self, lookup, value, request=None) -> bool:  # type: ignore[no-untyped-def]
        # Filter by document through the URL (?document__id__exact=...), linked from the document page.
        return lookup in {"document__id__exact", "document"} or super().lookup_allowed(lookup, value, request)

    @admin.display(description="section")
    def section_trail(self, obj: Chunk) -> str:
        return " › ".join(obj.section)

    @admin.display(description="text")
    def short_text(self, obj: Chunk) -> str:
        return obj.text[:120]


@admin.register(Build)
class BuildAdmin(AuditAdmin):
    list_display = [
        "built_at", "collection", "document", "built_from", "model", "dims", "passages",
        "refused_names", "warning_lines",
    ]  # fmt: skip
    list_filter = ["collection", "model"]
    list_select_related = ["collection", "document"]
    readonly_fields = ["refused_names", "warning_lines"]

    @admin.display(description="refused")
    def refused_names(self, obj: Build) -> str:
        # Three answers, never collapsed: unknown, nothing, or the names.
        if obj.refused is None:
            return "not recorded"
        return ", ".join(obj.refused) if obj.refused else "nothing refused"

    @admin.display(description="warnings")
    def warning_lines(self, obj: Build) -> str:
        return "; ".join(obj.warnings) if obj.warnings else "none"
