"""Admin: search events — who searched which collections, refused or not, every stage, latency."""

from __future__ import annotations

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from collections_app.admin.base import AuditAdmin
from collections_app.admin.display import stages_table
from collections_app.models import Collection
from retrieval.models import SearchEvent


@admin.register(SearchEvent)
class SearchEventAdmin(AuditAdmin):
    list_display = [
        "created_at", "tenant", "asked_by", "collections_shown", "refused_shown", "floor", "results", "latency_ms",
    ]  # fmt: skip
    list_filter = ["tenant", "refused", "agent"]
    list_select_related = ["tenant", "agent", "api_key"]
    fields = ["created_at", "tenant", "asked_by", "on_behalf_of", "collection_links", "refused_shown", "floor",
              "around", "results", "latency_ms", "stages_shown"]  # fmt: skip
    readonly_fields = ["created_at", "asked_by", "collection_links", "refused_shown", "stages_shown"]

    @admin.display(description="asked by")
    def asked_by(self, obj: SearchEvent) -> str:
        if obj.agent_id is not None:
            return f"agent {obj.agent}"
        if obj.api_key_id is not None:
            return f"key {obj.api_key}"
        return "staff (try a search in the admin)"

    @admin.display(description="collections")
    def collections_shown(self, obj: SearchEvent) -> str:
        return ", ".join(obj.collections)

    @admin.display(description="collections")
    def collection_links(self, obj: SearchEvent) -> str:
        # Stored by name (a search event outlives renames); linked where a collection of that name exists.
        found = dict(
            Collection.objects.filter(tenant_id=obj.tenant_id, name__in=obj.collections).values_list("name", "pk")
        )
        if not obj.collections:
            return "none"
        change = "admin:collections_app_collection_change"
        return format_html_join(
            ", ",
            "{}",
            ((format_html('<a href="{}">{}</a>', reverse(change, args=[found[n]]), n) if n in found else n,)
             for n in obj.collections),
        )  # fmt: skip

    @admin.display(description="refused")
    def refused_shown(self, obj: SearchEvent) -> str:
        # Three answers, never collapsed.
        return {None: "null (no judge configured)", False: "no (the judge approved)", True: "yes (nothing answers)"}[
            obj.refused
        ]

    @admin.display(description="stages")
    def stages_shown(self, obj: SearchEvent) -> str:
        return stages_table(obj.stages)
