"""Admin: a tenant's collections — their settings, checked by the same service as the API's."""

from __future__ import annotations

import copy

from django import forms
from django.contrib import admin
from django.db import transaction
from django.db.models import Count

from collections_app.admin.base import TenantScopedAdmin
from collections_app.admin.sources import FolderSourceAdminMixin
from collections_app.exceptions import DomainError
from collections_app.ingestion.chunking import StrategyNotBuilt
from collections_app.models import Collection
from collections_app.services.collections import collection_create, collection_delete, collection_update
from collections_app.validation import name_problem


class CollectionForm(forms.ModelForm):
    """The collection's settings, checked by the same service as the API's (bounds, strategy, model, name)."""

    class Meta:
        model = Collection
        exclude: list[str] = []

    def settings_given(self) -> dict:
        """What the service is given: every setting for a new collection, the changed ones for an existing one."""
        fields = self.fields if self.instance._state.adding else self.changed_data
        return {f: self.cleaned_data[f] for f in fields if f in self.cleaned_data and f not in ("tenant", "name")}

    def clean_name(self) -> str:
        # collection_create takes the name apart from the settings it checks: the shared rule, here.
        name = self.cleaned_data["name"]
        problem = name_problem(name, max_chars=Collection._meta.get_field("name").max_length or 200)
        if problem:
            raise forms.ValidationError(f"The name {problem}.")
        return name

    def save_through_service(self) -> Collection:
        if self.instance._state.adding:  # (a new row has its UUID already)
            data = self.cleaned_data
            return collection_create(tenant=data["tenant"], name=data["name"], **self.settings_given())
        changes = self.settings_given()
        if "name" in self.changed_data:
            changes["name"] = self.cleaned_data["name"]
        return collection_update(collection=copy.copy(self.instance), **changes)

    def clean(self):  # type: ignore[no-untyped-def]
        data = super().clean()
        if self.errors:
            return data
        # A dry run of the service in a savepoint that is always rolled back: its refusals become form
        # errors beside their field, and save_model then runs it for real.
        try:
            with transaction.atomic():
                self.save_through_service()
                transaction.set_rollback(True)
        except (DomainError, StrategyNotBuilt) as exc:
            field = getattr(exc, "field", None) or ("chunk_strategy" if isinstance(exc, StrategyNotBuilt) else None)
            self.add_error(field if field in self.fields else None, str(exc))
        return data


@admin.register(Collection)
class CollectionAdmin(FolderSourceAdminMixin, TenantScopedAdmin):
    form = CollectionForm
    list_display = ["name", "tenant", "chunk_strategy", "embedding_alias", "document_count", "per_reader"]
    list_filter = ["tenant", "chunk_strategy", "per_reader"]
    list_select_related = ["tenant"]
    search_fields = ["name"]
    readonly_fields = ["metadata_schema", "folder_source", "created_at", "updated_at"]
    actions = ["sync_folder_source"]

    def get_queryset(self, request):  # type: ignore[no-untyped-def]
        return super().get_queryset(request).annotate(document_count=Count("documents"))

    @admin.display(ordering="document_count", description="documents")
    def document_count(self, obj: Collection) -> int:
        return obj.document_count  # type: ignore[attr-defined]

    def save_model(self, request, obj, form, change):  # type: ignore[no-untyped-def]
        saved = form.save_through_service()
        for field in Collection._meta.concrete_fields:  # the admin goes on with (logs, redirects to) this row
            setattr(obj, field.attname, getattr(saved, field.attname))
        obj._state.adding = False

    def delete_model(self, request, obj):  # type: ignore[no-untyped-def]
        collection_delete(collection=obj)  # its stored originals go too

    def delete_queryset(self, request, queryset):  # type: ignore[no-untyped-def]
        for collection in queryset:
            collection_delete(collection=collection)
