"""Admin: collection files — "Download as collection file" on collections, and the exports and imports with their
progress, a download link for a finished export, and the page that imports one as a new collection.

The work is services/collection_file's: these pages start it, show it and hand the file over. An export holds
whole paragraphs, which reader labels do not cut: starting one and downloading it need an editor's role.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.core.files.storage import default_storage
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from collections_app.exceptions import DomainError
from collections_app.models import (
    CollectionFile,
    CollectionFileKind,
    CollectionFileStatus,
    Role,
    Tenant,
)
from collections_app.services.collection_file import collection_export_start, collection_file_remove, collection_import
from doors.admin.base import TenantScopedAdmin, object_for_tool
from doors.admin.roles import tenants_where


def _list_url() -> str:
    return reverse("admin:collections_app_collectionfile_changelist")


class CollectionExportAdminMixin(TenantScopedAdmin):
    """Mixed into CollectionAdmin: the "Download as collection file" action."""

    @admin.action(description="Download as collection file", permissions=["change"])
    def export_collection_file(self, request, queryset):  # type: ignore[no-untyped-def]
        collections = list(self.manageable(request, queryset))
        for collection in collections:
            collection_export_start(collection=collection, created_by=request.user.get_username())
        if collections:
            self.message_user(
                request,
                format_html(
                    'Export of {} collection(s) started: <a href="{}">follow it and download the file</a>.',
                    len(collections),
                    _list_url(),
                ),
                messages.SUCCESS,
            )
        if skipped := queryset.count() - len(collections):
            self.message_user(request, f"{skipped} collection(s) left alone: you may only view them.", messages.WARNING)


class CollectionImportForm(forms.Form):
    tenant = forms.ModelChoiceField(queryset=Tenant.objects.none(), help_text="The tenant the new collection is in.")
    name = forms.CharField(max_length=200, help_text="The new collection's name (unique in its tenant).")
    file = forms.FileField(help_text="One SQLite file in the collection format (store_meta, agents_chunks, …).")
    source = forms.CharField(
        max_length=200, required=False, help_text="Which collection of the file, when it holds several."
    )


# Every field is read-only: a record of what ran, written by its task.
FIELDS = ["created_at", "kind", "collection", "status", "progress", "re_embedded", "size", "error", "created_by",
          "finished_at", "download"]  # fmt: skip


@admin.register(CollectionFile)
class CollectionFileAdmin(TenantScopedAdmin):
    list_display = ["created_at", "kind", "collection", "status", "progress", "re_embedded", "size", "download"]
    list_filter = ["kind", "status"]
    list_select_related = ["collection"]
    fields = ["created_at", "kind", "collection", "status", "progress", "re_embedded", "size", "error", "created_by",
              "finished_at", "download"]  # fmt: skip
    readonly_fields = FIELDS
    actions = ["delete_selected"]

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:  # type: ignore[no-untyped-def]
        return False

    def delete_model(self, request, obj):  # type: ignore[no-untyped-def]
        collection_file_remove(record=obj)

    def delete_queryset(self, request, queryset):  # type: ignore[no-untyped-def]
        for record in queryset:
            collection_file_remove(record=record)

    def get_urls(self):  # type: ignore[no-untyped-def]
        view = self.admin_site.admin_view
        return [
            path(
                "<path:object_id>/download/", view(self.download_view), name="collections_app_collectionfile_download"
            ),
            *super().get_urls(),
        ]

    def add_view(self, request, form_url="", extra_context=None):  # type: ignore[no-untyped-def]
        # Adding one is importing a file: a file to read, not a row to fill in.
        if not self.has_add_permission(request):
            raise PermissionDenied
        return self.import_view(request)

    @admin.display(description="progress")
    def progress(self, obj: CollectionFile) -> SafeString:
        if obj.status in (CollectionFileStatus.QUEUED, CollectionFileStatus.RUNNING):
            return format_html(
                '<progress max="{}" value="{}"></progress> {} / {} paragraphs', max(obj.total, 1), obj.done, obj.done,
                obj.total,
            )  # fmt: skip
        return format_html("{} / {} paragraphs", obj.done, obj.total)

    @admin.display(description="file")
    def download(self, obj: CollectionFile) -> SafeString:
        if obj.kind != CollectionFileKind.EXPORT or obj.status != CollectionFileStatus.DONE or not obj.stored:
            return format_html("{}", "—")
        url = reverse("admin:collections_app_collectionfile_download", args=[obj.pk])
        return format_html('<a href="{}">Download</a>', url)

    def download_view(self, request: HttpRequest, object_id: str) -> FileResponse:
        record = object_for_tool(self, request, object_id, change=False)
        # Whole paragraphs, whatever their reader labels: an editor's, as the API's export is.
        if not self._may_manage(request, record):
            raise PermissionDenied
        if record.kind != CollectionFileKind.EXPORT or record.status != CollectionFileStatus.DONE or not record.stored:
            raise Http404("this export is not ready")
        filename = "".join(c if c.isalnum() or c in "-_." else "-" for c in record.collection.name) + ".db"
        return FileResponse(
            default_storage.open(record.stored, "rb"),
            as_attachment=True,
            filename=filename,
            content_type="application/vnd.sqlite3",
        )

    def import_view(self, request: HttpRequest) -> HttpResponse:
        tenants = tenants_where(request, Role.EDITOR)
        if tenants is not None and not tenants:
            raise PermissionDenied  # an editor of no tenant imports into none
        form = CollectionImportForm(request.POST or None, request.FILES or None)
        choices = Tenant.objects.all() if tenants is None else Tenant.objects.filter(pk__in=tenants)
        form.fields["tenant"].queryset = choices  # type: ignore[attr-defined]
        if request.method == "POST" and form.is_valid():
            try:
                record = collection_import(
                    tenant=form.cleaned_data["tenant"],
                    name=form.cleaned_data["name"],
                    content=form.cleaned_data["file"],
                    created_by=request.user.get_username(),
                    source=form.cleaned_data["source"] or None,
                )
            except DomainError as exc:
                form.add_error("name" if getattr(exc, "field", None) == "name" else "file", str(exc))
            else:
                self.message_user(
                    request,
                    f"Import of {record.collection.name} started: it answers searches once all of it is in.",
                    messages.SUCCESS,
                )
                return HttpResponseRedirect(_list_url())
        context = {
            **self.admin_site.each_context(request),
            "title": "Import a collection file",
            "opts": self.opts,
            "form": form,
        }
        return TemplateResponse(request, "admin/collections_app/collectionfile/import.html", context)
