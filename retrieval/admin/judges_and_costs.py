"""Admin of the chat model's two faces: collections' judges (editors) and what model calls cost (admins).

Registered from RetrievalConfig.ready(), beside retrieval/admin.py (the searches audit).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import Count, Model, Q, QuerySet, Sum
from django.db.models.functions import TruncDate
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from accounts.models import Role
from doors.admin.base import AuditAdmin, TenantScopedAdmin
from doors.admin.roles import may, tenants_where
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
class ModelCallAdmin(AuditAdmin):
    """What model calls cost, charged per agent: read by the tenant's admins only."""

    view_role = Role.ADMIN
    list_display = ["created_at", "tenant", "agent_name", "kind", "model", "collection", "tokens_in", "tokens_out",
                    "duration_ms", "ok"]  # fmt: skip
    list_filter = ["tenant", "kind", "agent", "ok"]
    list_select_related = ["tenant", "collection"]
    date_hierarchy = "created_at"
    fields = ["created_at", "tenant", "agent_name", "agent", "search", "kind", "model", "collection", "tokens_in",
              "tokens_out", "duration_ms", "ok"]  # fmt: skip

    def has_module_permission(self, request: HttpRequest) -> bool:
        return super().has_module_permission(request) and may(request, None, self.view_role)

    def has_view_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        if request.user.is_superuser:
            return super().has_view_permission(request, obj)
        return may(request, None if obj is None else self.tenant_id_of(obj), self.view_role)

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        queryset = super().get_queryset(request)
        tenants = tenants_where(request, self.view_role)
        return queryset if tenants is None else queryset.filter(tenant__in=tenants)

    def get_object(self, request: HttpRequest, object_id: str, from_field: str | None = None) -> ModelCall | None:
        # A member of the row's tenant below admin is told "forbidden" (403), as on every kbsite page; only
        # another tenant's row does not exist for it. The list itself shows admins' tenants only.
        tenants = tenants_where(request, Role.VIEWER)
        rows = ModelCall.objects.all() if tenants is None else ModelCall.objects.filter(tenant__in=tenants)
        try:
            return rows.get(pk=object_id)
        except (ModelCall.DoesNotExist, ValidationError, ValueError):
            return None

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
