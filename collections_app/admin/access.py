"""Admin: tenants, memberships, API keys, agents and reader labels — who may reach what.

A tenant's admin gives memberships and keys, never a role above its own (RoleGrantAdmin).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied
from django.db.models import Field, Model, QuerySet
from django.http import HttpRequest, HttpResponse
from django_q import models as q_models

from accounts.delegation import delegation_label
from accounts.issuing import ANY_READER, Delegation, api_key_create, api_key_delegate
from accounts.models import Agent, ApiKey, Membership, Role, Tenant
from collections_app.models import Collection, ReaderLabel
from collections_app.services.deletion import DeleteBusy, tenant_delete
from doors.admin.base import (
    RoleGrantForm,
    SuperuserOnlyAdmin,
    TenantScopedAdmin,
    superuser_only,
)
from doors.admin.roles import grantable_roles

# Not any one tenant's: people, groups and the task queue (its rows name every tenant's documents).
superuser_only(
    admin.site, get_user_model(), Group, q_models.Schedule, q_models.Success, q_models.Failure, q_models.OrmQ
)


@admin.register(Tenant)
class TenantAdmin(SuperuserOnlyAdmin):
    list_display = ["name", "created_at"]
    search_fields = ["name"]

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        rows = Tenant.all_objects.deleting().order_by("deleting_at", "name").values_list("name", "deleting_at")[:50]
        deleting = [{"name": name, "since": since} for name, since in rows]
        return super().changelist_view(request, {"kb_being_deleted": deleting, **(extra_context or {})})

    def get_deleted_objects(
        self, objs: Sequence[Tenant] | QuerySet[Tenant], request: HttpRequest
    ) -> tuple[list[str], dict[str, int], set[str], list[str]]:
        # Not the stock list of every row the cascade reaches (a tenant's paragraphs, one by one): counts.
        tenants = list(objs)
        summary = {
            "collections (removed in the background; gone from every search at once)": Collection.objects.filter(
                tenant__in=tenants
            ).count(),
            "API keys (refused at once)": ApiKey.objects.filter(tenant__in=tenants).count(),
        }
        refused = {str(self.opts.verbose_name) for t in tenants if not self.has_delete_permission(request, t)}
        return [str(t) for t in tenants], summary, refused, []

    def delete_model(self, request: HttpRequest, obj: Tenant) -> None:
        try:
            tenant_delete(tenant=obj)
        except DeleteBusy as busy:  # a collection of it is being imported: the 403 page says why
            raise PermissionDenied(str(busy)) from busy

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Tenant]) -> None:
        for tenant in queryset:
            self.delete_model(request, tenant)


class RoleGrantAdmin(TenantScopedAdmin):
    """Keys and memberships: only a tenant's admin gives them, and never a role above its own."""

    manage_role = Role.ADMIN

    def get_form(
        self, request: HttpRequest, obj: Model | None = None, change: bool = False, **kwargs: Any
    ) -> type[forms.ModelForm[Model]]:
        form = super().get_form(request, obj, change=change, **kwargs)
        return type(form.__name__, (form,), {"granter": request})

    def formfield_for_choice_field(
        self, db_field: Field[Any, Any], request: HttpRequest, **kwargs: Any
    ) -> forms.TypedChoiceField | None:
        if db_field.name == "role":
            kwargs["choices"] = [(r.value, r.label) for r in grantable_roles(request)]
        return super().formfield_for_choice_field(db_field, request, **kwargs)


class MembershipForm(RoleGrantForm):
    class Meta:
        model = Membership
        fields = ["user", "tenant", "role"]


@admin.register(Membership)
class MembershipAdmin(RoleGrantAdmin):
    form = MembershipForm
    list_display = ["user", "tenant", "role"]
    list_filter = ["role", "tenant"]
    list_select_related = ["user", "tenant"]


class AgentForm(forms.ModelForm):
    class Meta:
        model = Agent
        fields = ["tenant", "name", "collections"]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or self.cleaned_data
        tenant = data.get("tenant")
        foreign = [c.name for c in data.get("collections") or [] if tenant is not None and c.tenant_id != tenant.pk]
        if foreign:
            self.add_error("collections", f"Not collections of {tenant}: {', '.join(foreign)}.")
        return data


@admin.register(Agent)
class AgentAdmin(TenantScopedAdmin):
    form = AgentForm
    manage_role = Role.ADMIN
    list_display = ["name", "tenant", "created_at"]
    list_filter = ["tenant"]
    filter_horizontal = ["collections"]
    list_select_related = ["tenant"]


class ApiKeyForm(RoleGrantForm):
    class Meta:
        model = ApiKey
        fields = ["tenant", "name", "role", "agent", "any_reader", "readers", "revoked"]
        labels = {"any_reader": "Acts for any reader", "readers": "Acts for these readers"}

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        tenant, agent = data.get("tenant"), data.get("agent")
        if tenant is not None and agent is not None and agent.tenant_id != tenant.pk:
            # api_key_create refuses it too; said here so the form shows it instead of failing on save.
            self.add_error("agent", f"{agent} is an agent of another tenant.")
        foreign = [r.name for r in data.get("readers") or [] if tenant is not None and r.tenant_id != tenant.pk]
        if foreign:
            self.add_error("readers", f"Not readers of {tenant}: {', '.join(foreign)}.")
        return data

    def delegation(self) -> Delegation:
        return ANY_READER if self.cleaned_data.get("any_reader") else list(self.cleaned_data.get("readers") or [])


@admin.register(ApiKey)
class ApiKeyAdmin(RoleGrantAdmin):
    form = ApiKeyForm
    list_display = [
        "prefix", "name", "tenant", "role", "agent", "acts_for_readers", "created_at", "last_used_at", "revoked",
    ]  # fmt: skip
    list_filter = ["role", "revoked", "any_reader", "tenant"]
    list_select_related = ["tenant", "agent"]
    readonly_fields = ["prefix", "created_at", "last_used_at"]
    filter_horizontal = ["readers"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[ApiKey]:
        return super().get_queryset(request).prefetch_related("readers")  # one query for the list's readers

    @admin.display(description="acts for readers")
    def acts_for_readers(self, obj: ApiKey) -> str:
        return delegation_label(obj)

    def get_fields(self, request: HttpRequest, obj: ApiKey | None = None) -> Any:
        # A new key is issued live; revoking is a change to an existing one.
        if obj is None:
            return ["tenant", "name", "role", "agent", "any_reader", "readers"]
        return super().get_fields(request, obj)

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        # The key's only many-to-many is its readers, and the service sets them (api_key_delegate checks their
        # tenant), in place of the form's own save_m2m. The key has no inlines, so there are no formsets to save.
        api_key_delegate(key=form.instance, readers=form.delegation())

    def save_model(self, request: HttpRequest, obj: ApiKey, form: Any, change: bool) -> None:
        if change:
            return super().save_model(request, obj, form, change)
        # Issued by the service, which checks the agent's tenant and keeps only the secret's hash.
        issued = api_key_create(
            tenant=obj.tenant, role=obj.role, agent=obj.agent, name=obj.name, readers=form.delegation()
        )
        for field in ApiKey._meta.concrete_fields:  # the admin goes on with (logs, redirects to) this key
            setattr(obj, field.attname, getattr(issued.key, field.attname))
        obj._state.adding = False
        self.message_user(
            request,
            f"The new key is {issued.secret} — copy it now: it is stored hashed and will not be shown again.",
            messages.WARNING,
        )


@admin.register(ReaderLabel)
class ReaderLabelAdmin(TenantScopedAdmin):
    manage_role = Role.ADMIN
    list_display = ["name", "tenant", "description"]
    list_filter = ["tenant"]
