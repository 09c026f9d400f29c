"""Admin base classes: tenant-scoped pages granted by membership role (rules in roles.py).

- TenantScopedAdmin: rows, list filters and form dropdowns come only from the person's tenants; reading
  needs any membership, writing needs `manage_role` in the row's tenant.
- AuditAdmin: read-only records (builds, search events, paragraphs): nobody adds, changes or deletes
  them in the admin, superusers included.
- SuperuserOnlyAdmin: pages that are not any one tenant's (tenants, users, the task queue).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import get_fields_from_path, unquote
from django.contrib.auth import get_user_model
from django.core.exceptions import FieldDoesNotExist, PermissionDenied
from django.db.models import ForeignKey, ManyToManyField, Model, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import URLPattern, path, reverse

from accounts.models import Role, Tenant
from doors.admin.roles import grantable_roles, may, roles_of, tenants_where


def object_for_tool(model_admin: admin.ModelAdmin, request: HttpRequest, object_id: str, *, change: bool) -> Any:
    """The row a tool page (preview, OCR, labels, re-index, …) works on: found through the admin's tenant-scoped
    queryset (another tenant's row is a 404, as a missing one), and readable (or, with `change`, changeable)
    by this person, else 403."""
    found = model_admin.get_object(request, unquote(object_id))
    if found is None:
        raise Http404(f"no such {model_admin.opts.verbose_name}")
    allowed = model_admin.has_change_permission if change else model_admin.has_view_permission
    if not allowed(request, found):
        raise PermissionDenied
    return found


@dataclass(frozen=True)
class ToolPage:
    """One page an admin adds beside its stock ones (a preview, a re-index, an import): `route` under the admin's
    URL, the name of the method that answers, and the last part of the URL name, which is
    `<app>_<model>_<name>` as Django names its own admin pages."""

    route: str
    view: str
    name: str


def without_deleted_collections(queryset: QuerySet) -> QuerySet:
    """Rows of a collection being deleted (a build, a golden question, a collection file, ...) left out of a page:
    from the deletion's commit nothing of it is shown while its rows go in the background. Rows of no collection
    stay. (doors imports no content app: the collection is found by its field.)"""
    try:
        field = queryset.model._meta.get_field("collection")
    except FieldDoesNotExist:
        return queryset
    related = getattr(field, "related_model", None)
    if not field.is_relation or related is None or not any(f.name == "deleting_at" for f in related._meta.fields):
        return queryset
    return queryset.filter(collection__deleting_at__isnull=True)


class TenantScopedAdmin(admin.ModelAdmin):
    tenant_field = "tenant"  # the path from a row to its tenant
    manage_role: Role | None = Role.EDITOR  # None: nobody writes here (audit records)
    # Each class in the MRO (an admin and each of its mixins) lists its own; get_urls gathers them all.
    tool_pages: tuple[ToolPage, ...] = ()

    # --- what the person may do -------------------------------------------------------------------

    def tenant_id_of(self, obj: Model) -> uuid.UUID:
        return getattr(obj, f"{self.tenant_field}_id")

    def has_module_permission(self, request: HttpRequest) -> bool:
        return super().has_module_permission(request) if request.user.is_superuser else bool(roles_of(request))

    def has_view_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        if request.user.is_superuser:
            return super().has_view_permission(request, obj)
        return may(request, None if obj is None else self.tenant_id_of(obj), Role.VIEWER)

    def _may_manage(self, request: HttpRequest, obj: Model | None) -> bool:
        if self.manage_role is None:
            return False
        return may(request, None if obj is None else self.tenant_id_of(obj), self.manage_role)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return self._may_manage(request, None) and (
            not request.user.is_superuser or super().has_add_permission(request)
        )

    def add_view(self, request: HttpRequest, form_url: str = "", extra_context: Any = None) -> HttpResponse:
        # Someone who may read this page but not add to it is sent back to its list and told why, not shown
        # a bare 403 page with no way back.
        if self.manage_role is not None and not self.has_add_permission(request) and self.has_view_permission(request):
            plural = self.opts.verbose_name_plural
            messages.error(request, f"Only tenant {self.manage_role.label}s add {plural}; ask one of them.")
            opts = self.opts
            return HttpResponseRedirect(
                reverse(f"{self.admin_site.name}:{opts.app_label}_{opts.model_name}_changelist")
            )
        return super().add_view(request, form_url, extra_context)

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return self._may_manage(request, obj) and (
            not request.user.is_superuser or super().has_change_permission(request, obj)
        )

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return self._may_manage(request, obj) and (
            not request.user.is_superuser or super().has_delete_permission(request, obj)
        )

    def manageable(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        """The part of a selection the person may act on (actions take only these rows)."""
        if self.manage_role is None:
            return queryset.none()
        tenants = tenants_where(request, self.manage_role)
        return queryset if tenants is None else queryset.filter(**{f"{self.tenant_field}__in": tenants})

    # --- what the person sees ---------------------------------------------------------------------

    def get_urls(self) -> list[URLPattern]:
        # In MRO order, before the stock pages: `<path:object_id>/` would otherwise swallow them.
        pages = [page for klass in type(self).__mro__ for page in vars(klass).get("tool_pages", ())]
        prefix = f"{self.opts.app_label}_{self.opts.model_name}"
        own = [
            path(page.route, self.admin_site.admin_view(getattr(self, page.view)), name=f"{prefix}_{page.name}")
            for page in pages
        ]
        return [*own, *super().get_urls()]

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        queryset = super().get_queryset(request)
        tenants = tenants_where(request, Role.VIEWER)
        if tenants is None:  # a superuser: every tenant but those being deleted (a member's roles leave them out)
            queryset = queryset.filter(**{f"{self.tenant_field}__deleting_at__isnull": True})
        else:
            queryset = queryset.filter(**{f"{self.tenant_field}__in": tenants})
        return without_deleted_collections(queryset)

    def get_list_filter(self, request: HttpRequest) -> list[Any]:
        # A related filter lists only what the visible rows point at (RelatedOnlyFieldListFilter follows
        # get_queryset), never every tenant's names.
        return [_related_only(self.model, spec) for spec in super().get_list_filter(request)]

    def formfield_for_foreignkey(
        self, db_field: ForeignKey, request: HttpRequest, **kwargs: Any
    ) -> forms.ModelChoiceField | None:
        queryset = self.scoped_choices(db_field.related_model, request)
        if queryset is not None:
            kwargs["queryset"] = queryset
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def formfield_for_manytomany(
        self, db_field: ManyToManyField, request: HttpRequest, **kwargs: Any
    ) -> forms.ModelMultipleChoiceField | None:
        queryset = self.scoped_choices(db_field.related_model, request)
        if queryset is not None:
            kwargs["queryset"] = queryset
        return super().formfield_for_manytomany(db_field, request, **kwargs)

    def scoped_choices(self, model: type[Model], request: HttpRequest) -> QuerySet | None:
        """A dropdown's choices: only from tenants where the person may write here (None: leave as is)."""
        tenants = tenants_where(request, self.manage_role or Role.ADMIN)
        if tenants is None:
            return None
        if model is Tenant:
            return Tenant.objects.filter(pk__in=tenants)
        if model is get_user_model():
            # Only people already members of those tenants; new people are a superuser's to create.
            return model.objects.filter(memberships__tenant__in=tenants).distinct()
        if any(f.name == "tenant" for f in model._meta.get_fields()):
            return model._default_manager.filter(tenant__in=tenants)
        return model._default_manager.none()  # an unscoped model offers nothing to non-superusers

    def get_deleted_objects(
        self, objs: Sequence[Model] | QuerySet, request: HttpRequest
    ) -> tuple[list[str], dict[str, int], set[str], list[str]]:
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        # Audit rows go with what they record (a document's paragraphs, a collection's builds): deleting
        # the owner is the editor's call; deleting the records on their own is refused by AuditAdmin.
        audit = {m._meta.verbose_name for m, a in self.admin_site._registry.items() if isinstance(a, AuditAdmin)}
        return deleted, counts, perms_needed - audit, protected


class AuditAdmin(TenantScopedAdmin):
    """Records of what happened: read by every member, written and deleted by no one here."""

    manage_role = None


class SuperuserOnlyAdmin(admin.ModelAdmin):
    """Mixed before a ModelAdmin: the page exists only for superusers."""

    def has_module_permission(self, request: HttpRequest) -> bool:
        return request.user.is_superuser and super().has_module_permission(request)

    def has_view_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return request.user.is_superuser and super().has_view_permission(request, obj)

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return request.user.is_superuser and super().has_add_permission(request, *args)

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return request.user.is_superuser and super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return request.user.is_superuser and super().has_delete_permission(request, obj)


def superuser_only(site: admin.AdminSite, *models: type[Model]) -> None:
    """Re-register other apps' admins (auth, django_q) as superuser-only, keeping their pages as they are."""
    for model in models:
        if not site.is_registered(model):
            continue
        current = type(site.get_model_admin(model))
        site.unregister(model)
        site.register(model, type(f"SuperuserOnly{current.__name__}", (SuperuserOnlyAdmin, current), {}))


class RoleGrantForm(forms.ModelForm):
    """A form that gives a role (a key's, a membership's): never above the granter's own in that tenant.

    The admin's get_form sets `granter` to the request.
    """

    granter: HttpRequest | None = None

    def clean(self) -> dict[str, Any]:
        data = super().clean() or self.cleaned_data
        tenant, role = data.get("tenant"), data.get("role")
        if self.granter is not None and tenant is not None and role:
            allowed = grantable_roles(self.granter, tenant.pk)
            if Role(role) not in allowed:
                ceiling = allowed[-1] if allowed else "nothing"
                self.add_error("role", f"In {tenant} you may grant at most {ceiling}.")
        return data


def _related_only(model: type[Model], spec: Any) -> Any:
    if isinstance(spec, str) and get_fields_from_path(model, spec)[-1].is_relation:
        return (spec, admin.RelatedOnlyFieldListFilter)
    return spec
