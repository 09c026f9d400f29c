"""Admin: the searches audit — every search, refused or not, filtered by refused (three values), collection,
agent and date; its trace as a table; the documents it returned; the checks of the citations an answer built
on it made (counts per fact); what a judge's refusal withheld; the question where it was kept. The list says
refused in one word (the full meaning on hover and on the event).

What a search event may hold beyond its figures is for the tenant's admins only: the question (kept only
when KB_AUDIT_QUESTIONS is on, and the pages say whether it is) and the results a refusal withheld.
Viewers and editors see that they exist, not what they say.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.conf import settings
from django.contrib import admin
from django.contrib.admin.views.main import ChangeList
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from accounts.models import Role
from collections_app.models import Collection
from collections_app.selectors import document_filenames
from doors.admin.base import AuditAdmin
from doors.admin.display import REFUSED_SHOWN, shown_value, table
from doors.admin.roles import may, tenants_where
from ingestion.languages import language_shown
from retrieval.admin.try_search import TrySearchAdminMixin
from retrieval.models import SearchEvent

# Which count of a stage is "how many candidates it handed on", by stage: the first one present.
CANDIDATE_COUNTS = ("candidates", "hits", "after", "results", "supported", "returned")


class RefusedFilter(admin.SimpleListFilter):
    """Three answers, never collapsed: refused, approved, and could not refuse (no judge; the API's null)."""

    title = "refused"
    parameter_name = "refused"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [
            ("true", "refused: nothing answers"),
            ("false", "approved by the judge"),
            ("null", "no judge: could not refuse"),
        ]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        value = self.value()
        if value == "true":
            return queryset.filter(refused=True)
        if value == "false":
            return queryset.filter(refused=False)
        if value == "null":
            return queryset.filter(refused__isnull=True)
        return queryset


class CollectionFilter(admin.SimpleListFilter):
    """Searches that read a collection (stored by name: an event outlives renames), from the person's tenants."""

    title = "collection"
    parameter_name = "collection"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        tenants = tenants_where(request, Role.VIEWER)
        collections = Collection.objects.all() if tenants is None else Collection.objects.filter(tenant__in=tenants)
        names = sorted(set(collections.values_list("name", flat=True)))
        return [(name, name) for name in names]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        value = self.value()
        return queryset.filter(collections__contains=[value]) if value else queryset


def trace_rows(stages: Iterable[Mapping[str, Any]]) -> list[tuple[str, str, str, str, str, str]]:
    """A stored trace as (stage, status, reason, ms, candidates, other counts), in the order the stages ran."""
    rows = []
    for stage in stages:
        counts = dict(stage.get("counts") or {})
        candidate_key = next((k for k in CANDIDATE_COUNTS if k in counts), None)
        candidates = "" if candidate_key is None else f"{shown_value(counts.pop(candidate_key))} ({candidate_key})"
        ms = stage.get("ms")
        rows.append(
            (
                str(stage.get("stage", "")),
                str(stage.get("status", "")),
                str(stage.get("reason") or ""),
                "" if ms is None else f"{ms}",
                candidates,
                ", ".join(f"{k}: {shown_value(v)}" for k, v in counts.items()),
            )
        )
    return rows


# A citation check's counts, as its table heads them.
CHECK_FACTS = {
    "exists": "exist", "current": "current", "replaced": "replaced", "deleted": "deleted", "surfaced": "surfaced",
    "readable": "readable", "quote_exact": "quote exact", "quote_normalised": "quote normalised",
    "quote_absent": "quote absent",
}  # fmt: skip
CHECKS_NOTE = (
    "POST /api/citations/verify (MCP verify_citations) with this search's id: how many of the citations checked "
    "held each fact. Counts only: no quote and no paragraph is kept."
)
# Returned documents named in a row of the list before the rest are counted.
LISTED_DOCUMENTS = 2


class SearchEventChangeList(ChangeList):
    """The audit list: the file names of the page's returned documents read in one query, not one per row."""

    def get_results(self, request: HttpRequest) -> None:
        super().get_results(request)
        events = list(self.result_list)  # evaluated once: the template iterates the same cached rows
        names = document_filenames((e.tenant_id, d) for e in events for d in e.documents)
        for event in events:
            event.kb_document_names = [names.get((str(event.tenant_id), str(d))) for d in event.documents]


def recording_note() -> str:
    if settings.KB_AUDIT_QUESTIONS:
        return "Question recording (KB_AUDIT_QUESTIONS) is on: questions are kept, shown to the tenant's admins."
    return "Question recording (KB_AUDIT_QUESTIONS) is off: no question is kept, only what ran and how long."


@admin.register(SearchEvent)
class SearchEventAdmin(TrySearchAdminMixin, AuditAdmin):
    list_display = [
        "created_at", "tenant", "asked_by", "collections_shown", "refused_label", "reason_shown", "results",
        "documents_listed", "latency_ms",
    ]  # fmt: skip
    list_filter = [
        RefusedFilter, CollectionFilter, "agent", "on_behalf_of", ("created_at", admin.DateFieldListFilter), "tenant",
    ]  # fmt: skip
    list_select_related = ["tenant", "agent", "api_key"]
    date_hierarchy = "created_at"
    readonly_fields = [
        "created_at", "asked_by", "on_behalf_of", "reader", "collection_links", "refused_shown", "reason_shown",
        "floor", "threshold", "around", "results", "documents_shown", "latency_ms", "question_language_shown",
        "trace_shown", "question_shown", "withheld_shown", "citation_checks_shown",
    ]  # fmt: skip

    MAIN_FIELDS = [
        "created_at", "tenant", "asked_by", "on_behalf_of", "reader", "collection_links", "refused_shown",
        "reason_shown", "floor", "threshold", "around", "results", "documents_shown", "latency_ms",
        "question_language_shown",
    ]  # fmt: skip

    @admin.display(description="question language")
    def question_language_shown(self, obj: SearchEvent) -> str:
        return language_shown(obj.question_language)

    def get_fieldsets(self, request: HttpRequest, obj: SearchEvent | None = None) -> Any:
        fieldsets: list[tuple[str | None, dict[str, Any]]] = [
            (None, {"fields": self.MAIN_FIELDS}),
            ("Trace", {"fields": ["trace_shown"]}),
            ("Citations checked", {"fields": ["citation_checks_shown"], "description": CHECKS_NOTE}),
            ("Question", {"fields": ["question_shown"], "description": recording_note()}),
        ]
        if obj is not None and obj.refused is True:
            fieldsets.append(("What the judge withheld", {"fields": ["withheld_shown"]}))
        return fieldsets

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return SearchEventChangeList

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> Any:
        return super().changelist_view(request, {**(extra_context or {}), "kb_recording_note": recording_note()})

    def get_object(self, request: HttpRequest, object_id: str, from_field: str | None = None) -> Any:
        # The display methods have no request: whether this person is an admin of the event's tenant is
        # decided here, once, and travels on the row they render.
        event = super().get_object(request, object_id, from_field)
        if event is not None:
            event.kb_admin_may_read = may(request, event.tenant_id, Role.ADMIN)
        return event

    # --- what each field shows -------------------------------------------------------------------------

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

    @admin.display(description="refused", ordering="refused")
    def refused_label(self, obj: SearchEvent) -> str:
        # Three answers, never collapsed: one word in the list, what it means on hover.
        word, meaning = REFUSED_SHOWN[obj.refused]
        return format_html('<span class="kb-refused" title="{}">{}</span>', meaning, word)

    @admin.display(description="refused")
    def refused_shown(self, obj: SearchEvent) -> str:
        return REFUSED_SHOWN[obj.refused][1]

    @admin.display(description="documents")
    def documents_listed(self, obj: SearchEvent) -> str:
        """The documents the answer returned: the first few by name, how many more, all of them on hover."""
        if not obj.documents:
            return "—"
        names = [n or "(deleted)" for n in getattr(obj, "kb_document_names", [None] * len(obj.documents))]
        shown = ", ".join(names[:LISTED_DOCUMENTS])
        more = f" +{len(names) - LISTED_DOCUMENTS} more" if len(names) > LISTED_DOCUMENTS else ""
        return format_html('<span class="kb-documents" title="{}">{}{}</span>', "\n".join(names), shown, more)

    @admin.display(description="documents returned")
    def documents_shown(self, obj: SearchEvent) -> str:
        if not obj.documents:
            return "none"
        names = document_filenames((obj.tenant_id, d) for d in obj.documents)
        change = "admin:collections_app_document_change"
        return format_html(
            "<ol class=\"kb-returned\">{}</ol>",
            format_html_join(
                "",
                "<li>{}</li>",
                ((format_html('<a href="{}">{}</a>', reverse(change, args=[d]), names[(str(obj.tenant_id), d)])
                  if (str(obj.tenant_id), d) in names else f"a document deleted since ({d})",) for d in obj.documents),
            ),
        )  # fmt: skip

    @admin.display(description="reason")
    def reason_shown(self, obj: SearchEvent) -> str:
        return getattr(obj, "reason", "") or "—"

    @admin.display(description="trace")
    def trace_shown(self, obj: SearchEvent) -> str:
        return table(["stage", "status", "reason", "ms", "candidates", "other counts"], trace_rows(obj.stages))

    @admin.display(description="question")
    def question_shown(self, obj: SearchEvent) -> str:
        question = getattr(obj, "question", "")
        if not question:
            if settings.KB_AUDIT_QUESTIONS:
                return "not recorded (recording was off when this search ran)"
            return "not recorded (KB_AUDIT_QUESTIONS is off)"
        if not getattr(obj, "kb_admin_may_read", False):
            return "recorded; shown to the tenant's admins only"
        return question

    @admin.display(description="checks")
    def citation_checks_shown(self, obj: SearchEvent) -> str:
        checks = obj.citation_checks.select_related("agent", "on_behalf_of", "api_key").order_by("created_at")
        return table(
            ["checked", "by", "on behalf of", "citations", *CHECK_FACTS.values()],
            ((f"{c.created_at:%Y-%m-%d %H:%M:%S}", f"agent {c.agent}" if c.agent_id else f"key {c.api_key}",
              c.on_behalf_of or "—", c.citations, *(shown_value(c.counts.get(k)) for k in CHECK_FACTS))
             for c in checks),
            empty="no citation of this answer was checked",
        )  # fmt: skip

    @admin.display(description="withheld")
    def withheld_shown(self, obj: SearchEvent) -> str:
        withheld = list(getattr(obj, "withheld", None) or [])
        if not withheld:
            return "nothing recorded"
        if not getattr(obj, "kb_admin_may_read", False):
            return f"{len(withheld)} results; shown to the tenant's admins only"
        return table(["document", "section", "score", "text"], (_withheld_row(r) for r in withheld))


def _withheld_row(result: Mapping[str, Any]) -> tuple[str, str, str, str]:
    document = result.get("document") or {}
    score = result.get("score")
    return (
        str(document.get("filename", "") if isinstance(document, Mapping) else document),
        " › ".join(result.get("section") or []),
        "" if score is None else f"{score:.3f}" if isinstance(score, float) else str(score),
        str(result.get("text", ""))[:600],
    )
