"""The retrieval admin's bases: pages read and written by the tenant's editors and admins only (the API's rule
for golden questions, evaluations and measures), and records read by the tenant's admins only (model calls, gap
dismissals)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import Model, QuerySet
from django.http import HttpRequest

from accounts.models import Role
from collections_app.models import Collection
from doors.admin.base import AuditAdmin, TenantScopedAdmin
from doors.admin.roles import may, tenants_where


class EditorsOnly(TenantScopedAdmin):
    """Read and written by the tenant's editors and admins only."""

    def has_module_permission(self, request: HttpRequest) -> bool:
        return super().has_module_permission(request) and may(request, None, Role.EDITOR)

    def has_view_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        if request.user.is_superuser:
            return super().has_view_permission(request, obj)
        return may(request, None if obj is None else self.tenant_id_of(obj), Role.EDITOR)

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        queryset = super().get_queryset(request)
        tenants = tenants_where(request, Role.EDITOR)
        return queryset if tenants is None else queryset.filter(tenant__in=tenants)

    def get_object(self, request: HttpRequest, object_id: str, from_field: str | None = None) -> Any:
        # A viewer of the row's tenant is told "forbidden" (403), as on every kbsite page; only another tenant's
        # row does not exist for it. The list itself shows the tenants where the person is an editor.
        tenants = tenants_where(request, Role.VIEWER)
        rows = self.model._default_manager.all()
        rows = rows if tenants is None else rows.filter(tenant__in=tenants)
        try:
            return rows.get(pk=object_id)
        except (self.model.DoesNotExist, ValidationError, ValueError):
            return None

    def editable_collections(self, request: HttpRequest) -> QuerySet[Collection]:
        tenants = tenants_where(request, Role.EDITOR)
        collections = Collection.objects.order_by("name")
        return collections if tenants is None else collections.filter(tenant__in=tenants)


class AdminsOnlyAudit(AuditAdmin):
    """Records read by the tenant's admins only (what model calls cost, which gaps were hidden), written by no one."""

    view_role = Role.ADMIN

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

    def get_object(self, request: HttpRequest, object_id: str, from_field: str | None = None) -> Any:
        # A member of the row's tenant below admin is told "forbidden" (403), as on every kbsite page; only
        # another tenant's row does not exist for it. The list itself shows admins' tenants only.
        tenants = tenants_where(request, Role.VIEWER)
        rows = self.model._default_manager.all()
        rows = rows if tenants is None else rows.filter(tenant__in=tenants)
        try:
            return rows.get(pk=object_id)
        except (self.model.DoesNotExist, ValidationError, ValueError):
            return None
