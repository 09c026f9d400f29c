"""Admin of the chat model's two faces: collections' judges (editors) and what model calls cost (admins).

Registered from RetrievalConfig.ready(), beside retrieval/admin.py (the searches audit).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import Count, Q, QuerySet, Sum
from django.db.models.functions import TruncDate
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from doors.admin.base import TenantScopedAdmin
from retrieval.admin.editors_only import AdminsOnlyAudit
from retrieval.models import CollectionJudge, ModelCall
from retrieval.services.judges import JUDGE_MAX_TIMEOUT, judge_warnings

DAILY_ROWS = 200  # the per-agent-per-day table lists at most this many days × agents (the filters narrow it)


class CollectionJudgeForm(forms.ModelForm):
    class Meta:
        model = CollectionJudge
        fields = ["collection", "enabled", "model", "timeout", "prompt"]

    def clean_timeout(self) -> float | None:
        timeout = self.cleaned_data.get("timeout")
        if timeout is not None and not 0 < timeout <= JUDGE_MAX_TIMEOUT:
            raise forms.ValidationError(f"Give a number of seconds above 0 and at most {JUDGE_MAX_TIMEOUT:g}.")
        return timeout


@admin.register(CollectionJudge)
class CollectionJudgeAdmin(TenantScopedAdmin):
    """A collection's judge: with KB_LLM_URL set, a search of the collection may be refused."""

    form = CollectionJudgeForm
    list_display = ["collection", "tenant", "enabled", "model_shown", "timeout"]
    list_filter = ["tenant", "enabled"]
    list_select_related = ["collection", "tenant"]

    @admin.display(description="model")
    def model_shown(self, obj: CollectionJudge) -> str:
        return obj.model or "KB_LLM_MODEL"

    def save_model(self, request: HttpRequest, obj: CollectionJudge, form: Any, change: bool) -> None:
        obj.tenant_id = obj.collection.tenant_id  # the collection's tenant, never a second choice
        super().save_model(request, obj, form, change)
        for warning in judge_warnings(obj):
            messages.warning(request, f"{obj.collection}: {warning}.")


@admin.register(ModelCall)
class ModelCallAdmin(AdminsOnlyAudit):
    """What model calls cost, charged per agent: read by the tenant's admins only."""

    list_display = ["created_at", "tenant", "agent_name", "kind", "model", "collection", "tokens_in", "tokens_out",
                    "duration_ms", "ok"]  # fmt: skip
    list_filter = ["tenant", "kind", "agent", "ok"]
    list_select_related = ["tenant", "collection"]
    date_hierarchy = "created_at"
    fields = ["created_at", "tenant", "agent_name", "agent", "search", "kind", "model", "collection", "tokens_in",
              "tokens_out", "duration_ms", "ok"]  # fmt: skip

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        response = super().changelist_view(request, extra_context)
        if isinstance(response, TemplateResponse) and response.context_data and "cl" in response.context_data:
            # The totals follow the list's own filters and date drill-down (cl.queryset).
            response.context_data.update(daily_totals(response.context_data["cl"].queryset))
        return response


def daily_totals(calls: QuerySet) -> dict[str, Any]:
    """Model calls per agent per day, with the totals of the whole selection."""
    sums = {
        "calls": Count("id"),
        "failed": Count("id", filter=Q(ok=False)),
        "tokens_in": Sum("tokens_in"),
        "tokens_out": Sum("tokens_out"),
        "duration_ms": Sum("duration_ms"),
    }
    rows = list(
        calls.order_by()
        .annotate(day=TruncDate("created_at"))
        .values("day", "agent_name")
        .annotate(**sums)
        .order_by("-day", "agent_name")[:DAILY_ROWS]
    )
    total = calls.order_by().aggregate(**sums)
    for row in [*rows, total]:
        row["seconds"] = round((row["duration_ms"] or 0) / 1000, 1)
    return {"daily_rows": rows, "daily_total": total}
