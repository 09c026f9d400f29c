"""Admin: the audit records of ingestion — paragraphs (chunks) and builds; read by every member, written by none."""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from accounts.models import Role
from collections_app.models import Build, Chunk, Collection
from collections_app.selectors import UNLISTED_DOCUMENT_COLUMNS
from collections_app.services.gate import GATED_METRICS
from collections_app.services.reindex import collection_cutover
from doors.admin.base import AuditAdmin, ToolPage
from doors.admin.display import LanguageFilter, as_sentence, key_value_rows
from doors.admin.roles import may
from infra.errors import DomainError
from ingestion.languages import language_shown


@admin.register(Chunk)
class ChunkAdmin(AuditAdmin):
    list_display = ["document", "ordinal", "page", "section_trail", "language_name", "short_text"]
    list_filter = [("language", LanguageFilter), "collection"]
    list_select_related = ["document"]
    search_fields = ["text"]
    fields = ["document_link", "collection", "ordinal", "page", "section_trail", "language_name", "labels",
              "text", "metadata_shown"]  # fmt: skip
    readonly_fields = ["document_link", "ordinal", "section_trail", "language_name", "metadata_shown"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Chunk]:
        # Its document by name only (a large one's JSON columns are megabytes, read once per listed row), and
        # no vector nor keyword index: nothing here shows them.
        rows = (
            super()
            .get_queryset(request)
            .select_related("document")
            .defer("embedding", "search_vector", *(f"document__{c}" for c in UNLISTED_DOCUMENT_COLUMNS))
        )
        if document := _document_asked(request):
            # Named on the places too, so their (document, generation, ordinal) index serves get_ordering's order.
            rows = rows.filter(position__document_id=document)
        return rows

    def get_ordering(self, request: HttpRequest) -> list[Any] | tuple[Any, ...]:
        if _document_asked(request):
            # One document's paragraphs (the document page's link): in the order of the places' unique index
            # (document, generation, ordinal), so a page of a large document reads that page's rows, not all
            # of them sorted. The same order as the model's, the generation searches read first during a re-index.
            return ["position__document_id", "position__generation", "position__ordinal"]
        return super().get_ordering(request)

    @admin.display(description="ordinal", ordering="position__ordinal")
    def ordinal(self, obj: Chunk) -> int:
        return obj.ordinal

    def lookup_allowed(self, lookup: str, value: str, request: HttpRequest) -> bool:
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
        "refused_names", "warning_lines", "gate_badge",
    ]  # fmt: skip
    list_filter = ["collection", "model", "gate_passed"]
    list_select_related = ["collection", "document"]
    # Each stored value once, as a person reads it (refused and warnings were listed raw and read again).
    fields = ["built_at", "collection_link", "document_link", "built_from", "model", "dims", "passages",
              "method_shown", "refused_names", "warning_lines", "gate_shown"]  # fmt: skip
    readonly_fields = ["built_at", "collection_link", "document_link", "method_shown", "refused_names", "warning_lines",
                       "gate_shown"]  # fmt: skip

    def get_queryset(self, request: HttpRequest) -> QuerySet[Build]:
        # Each build's document by name only: a large one's JSON columns would be read once per listed build.
        return (
            super()
            .get_queryset(request)
            .select_related("collection", "document")
            .defer(*(f"document__{c}" for c in UNLISTED_DOCUMENT_COLUMNS))
        )

    def lookup_allowed(self, lookup: str, value: str, request: HttpRequest) -> bool:
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

    @admin.display(description="golden gate", ordering="gate_passed")
    def gate_badge(self, obj: Build) -> str:
        # Three answers, never collapsed: not asked or could not judge (null), passed, held back.
        if obj.gate_passed is None:
            return "cannot judge" if str((obj.gate or {}).get("reason", "")).startswith("cannot") else "—"
        if obj.gate_passed:
            return "passed"
        return "held back, cut over anyway" if (obj.gate or {}).get("cut_over_anyway") else "held back"

    @admin.display(description="golden gate")
    def gate_shown(self, obj: Build) -> SafeString:
        """The serving build's evaluation beside the new one's, the reason, and "cut over anyway" when waiting."""
        gate = obj.gate or {}
        if not gate:
            return format_html("{}", "not recorded")
        reason = format_html("<p>{}</p>", gate.get("reason", ""))
        serving, candidate = gate.get("serving") or {}, gate.get("candidate") or {}
        if not serving:
            return reason
        # format_html_join: a str.join of SafeStrings is a plain str, which format_html would escape (the rows
        # were printed as text, and the browser moved them out of the table).
        rows = format_html_join(
            "",
            "<tr><th>{}</th><td>{}</td><td>{}</td></tr>",
            ((name, _metric(serving, name), _metric(candidate, name))
             for name in (*GATED_METRICS, "hit_at_1", "mrr", "found", "questions")),
        )  # fmt: skip
        table = format_html(
            '<table class="kb-rows kb-gate"><thead><tr><th></th><th>serving build</th><th>this build</th></tr>'
            "</thead><tbody>{}</tbody></table>",
            rows,
        )
        anyway = gate.get("cut_over_anyway")
        if anyway:
            return format_html("{}{}<p>Cut over anyway by {} at {}.</p>", reason, table, anyway["by"], anyway["at"])
        return format_html("{}{}", reason, table)

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        # A held-back re-index still waiting: its admins get "Cut over anyway" (templates/.../build/change_form).
        build = self.get_object(request, unquote(object_id))
        context = dict(extra_context or {})
        waiting = build is not None and build.gate_passed is False and _still_waiting(build)
        if build is not None and waiting and may(request, build.tenant_id, Role.ADMIN):
            context["kb_cut_over_url"] = reverse("admin:collections_app_build_cut_over_anyway", args=[build.pk])
        return super().change_view(request, object_id, form_url, context)

    tool_pages: tuple[ToolPage, ...] = (
        ToolPage("<path:object_id>/cut-over-anyway/", "cut_over_anyway_view", "cut_over_anyway"),
    )

    def cut_over_anyway_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """An admin of the tenant cuts a held-back generation over (POST only), named in the new build record."""
        build = self.get_object(request, unquote(object_id))
        if build is None:
            raise Http404("no such build")
        if request.method != "POST" or not may(request, build.tenant_id, Role.ADMIN):
            raise PermissionDenied
        if build.gate_passed is not False or not _still_waiting(build):
            self.message_user(request, "That re-index is no longer waiting: nothing to cut over.", messages.WARNING)
        else:
            try:
                collection_cutover(collection=build.collection, generation=build.gate["generation"],
                                   anyway_by=request.user.get_username() or "an admin")  # fmt: skip
            except DomainError as exc:
                self.message_user(request, as_sentence(str(exc)), messages.ERROR)
            else:
                self.message_user(request, f"{build.collection}: the held-back re-index now answers searches.")
        return HttpResponseRedirect(reverse("admin:collections_app_build_change", args=[build.pk]))


def _document_asked(request: HttpRequest) -> uuid.UUID | None:
    """The one document whose paragraphs the chunk list is asked for (?document__id__exact=), if a valid id."""
    try:
        return uuid.UUID(request.GET.get("document__id__exact") or "")
    except ValueError:
        return None


def _metric(metrics: dict[str, Any], name: str) -> str:
    value = metrics.get(name)
    return "—" if value is None else (f"{value:.3f}" if isinstance(value, float) else str(value))


def _still_waiting(build: Build) -> bool:
    generation = (build.gate or {}).get("generation")
    return Collection.objects.filter(pk=build.collection_id, reindex_generation=generation).exists()
