"""Admin: collection files — "Download as collection file" on collections, and the exports and imports with their
progress, a download link for a finished export, and the page that imports one as a new collection.

- The export action answers with each export's state, which the page follows (export_status.js asks
  <record>/status/) until it turns into the download link, or says why the export failed.
- The collection list says when a collection is being imported, or that its import failed (the collection then
  holds nothing: the import writes in one transaction), rather than "up to date" (import_state).

The work is services/collection_file's: these pages start it, show it and hand the file over. An export holds
whole paragraphs, which reader labels do not cut: starting one and downloading it need an editor's role.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Model, OuterRef, QuerySet, Subquery
from django.http import (
    FileResponse,
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseNotFound,
    HttpResponseRedirect,
    JsonResponse,
)
from django.template.defaultfilters import filesizeformat
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from accounts.models import Role, Tenant
from collections_app.models import (
    Chunk,
    Collection,
    CollectionFile,
    CollectionFileKind,
    CollectionFilePhase,
    CollectionFileStatus,
)
from collections_app.services.collection_file import (
    ExportExpired,
    collection_export_start,
    collection_file_open,
    collection_file_remove,
    collection_import,
)
from doors.admin.base import TenantScopedAdmin, ToolPage, object_for_tool
from doors.admin.roles import tenants_where
from infra.errors import DomainError


def _list_url() -> str:
    return reverse("admin:collections_app_collectionfile_changelist")


def download_name(collection: Collection) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in collection.name) + ".db"


def _phase(record: CollectionFile) -> str:
    return CollectionFilePhase(record.phase).label if record.phase else "waiting for a worker"


def entry_url(record_id: object) -> str:
    """The record's own page under Collection files (its progress, error, size and Download link)."""
    return reverse("admin:collections_app_collectionfile_change", args=[record_id])


def export_state(record: CollectionFile) -> SafeString:
    """An export as a person follows it: its progress, then the download link (or why it failed), and where it is
    listed (its entry under Collection files, which keeps the Download link after this page is left)."""
    name = record.collection.name
    entry = format_html('<a href="{}" class="kb-export-entry">Collection files</a>', entry_url(record.pk))
    if record.status == CollectionFileStatus.DONE and record.stored:
        url = reverse("admin:collections_app_collectionfile_download", args=[record.pk])
        return format_html(
            '<span data-kb-export="{}" data-kb-pending="0">Export of {} is ready: '
            '<a class="kb-export-download" href="{}">Download {}</a> ({}). '
            "It is also listed under {} with a Download link.</span>",
            record.pk, name, url, download_name(record.collection), filesizeformat(record.size), entry,
        )  # fmt: skip
    if record.status in (CollectionFileStatus.DONE, CollectionFileStatus.ERROR):
        # Done without a file: downloaded and removed since, or failed.
        return format_html(
            '<span data-kb-export="{}" data-kb-pending="0"><span class="kb-badge kb-badge-error">failed</span> '
            "Export of {}: {}. Start it again; the collection is as it was. Its entry under {} says the same.</span>",
            record.pk, name, record.error or "the file is no longer kept", entry,
        )  # fmt: skip
    status_url = reverse("admin:collections_app_collectionfile_status", args=[record.pk])
    return format_html(
        '<span data-kb-export="{}" data-kb-pending="1" data-kb-status-url="{}">The collection file of {} is being '
        'written ({} <progress max="{}" value="{}"></progress> {} / {} paragraphs); it will be listed under {} with '
        "a Download link, and the link appears here too when the file is ready.</span>",
        record.pk, status_url, name, _phase(record), max(record.total, 1), record.done, record.done, record.total,
        entry,
    )  # fmt: skip


# The latest import of each collection, annotated on the collection list (one query for the page).
_IMPORT_FIELDS = ("id", "status", "phase", "done", "total", "error")


def with_import_state(queryset: QuerySet[Collection]) -> QuerySet[Collection]:
    latest = CollectionFile.objects.filter(collection=OuterRef("pk"), kind=CollectionFileKind.IMPORT).order_by(
        "-created_at"
    )
    return queryset.annotate(**{f"import_{field}": Subquery(latest.values(field)[:1]) for field in _IMPORT_FIELDS})


def import_state(collection: Collection, *, brief: bool = False) -> SafeString | None:
    """The collection's import while it runs, or its failure while the collection holds nothing; else None.
    `brief`: a list's cell (the reason and the entry's link; what to do next is on the collection's page)."""
    if not hasattr(collection, "import_status"):
        latest = (
            CollectionFile.objects.filter(collection=collection, kind=CollectionFileKind.IMPORT)
            .order_by("-created_at")
            .values(*_IMPORT_FIELDS)
            .first()
        )
        for field in _IMPORT_FIELDS:
            setattr(collection, f"import_{field}", None if latest is None else latest[field])
    status = getattr(collection, "import_status", None)
    if status in (CollectionFileStatus.QUEUED, CollectionFileStatus.RUNNING):
        phase = getattr(collection, "import_phase", "")
        return format_html(
            '<span class="kb-badge kb-badge-parsing">importing</span> {} {} / {} paragraphs — it answers searches '
            "once all of it is in.",
            CollectionFilePhase(phase).label if phase else "waiting for a worker",
            getattr(collection, "import_done", 0),
            getattr(collection, "import_total", 0),
        )
    documents = getattr(collection, "document_count", None)  # the collection list's annotation
    if documents is None:
        documents = collection.documents.count()
    if status == CollectionFileStatus.ERROR and not documents and brief:
        return format_html(
            '<span class="kb-badge kb-badge-error">import failed</span> {} (<a href="{}" class="kb-import-entry">'
            "its entry</a>)",
            getattr(collection, "import_error", "") or "the import stopped",
            entry_url(getattr(collection, "import_id", "")),
        )
    if status == CollectionFileStatus.ERROR and not documents:
        return format_html(
            '<span class="kb-badge kb-badge-error">import failed</span> {}. Nothing of the file was kept: delete '
            "this collection, or import the file again under another name "
            '(<a href="{}" class="kb-import-entry">its entry under Collection files</a>).',
            getattr(collection, "import_error", "") or "the import stopped",
            entry_url(getattr(collection, "import_id", "")),
        )
    return None


def import_failed(collection: Collection) -> bool:
    """Its latest import failed and the collection holds nothing (read after import_state)."""
    return (
        getattr(collection, "import_status", None) == CollectionFileStatus.ERROR
        and import_state(collection) is not None
    )


class CollectionExportAdminMixin(TenantScopedAdmin):
    """Mixed into CollectionAdmin: the "Download as collection file" action, the same from the collection's own
    page (<collection>/export/: asks, then starts), and each collection's import state."""

    def get_queryset(self, request: HttpRequest) -> QuerySet[Collection]:
        return with_import_state(super().get_queryset(request))

    tool_pages: tuple[ToolPage, ...] = (ToolPage("<path:object_id>/export/", "export_view", "export"),)

    def export_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """Asks first (GET), then starts the export (POST) and goes back to the collection's page, whose message
        follows it to its Download link."""
        collection = object_for_tool(self, request, object_id, change=True)
        if request.method == "POST":
            self._export(request, [collection])
            return HttpResponseRedirect(reverse("admin:collections_app_collection_change", args=[collection.pk]))
        context = {
            **self.admin_site.each_context(request),
            "title": f"Download {collection.name} as a collection file?",
            "opts": self.opts,
            "original": collection,
            "paragraphs": Chunk.objects.live().paragraphs().filter(collection=collection).count(),
            "download_name": download_name(collection),
        }
        return TemplateResponse(request, "admin/collections_app/collection/export.html", context)

    def _export(self, request: HttpRequest, collections: list[Collection]) -> None:
        started = []
        for collection in collections:
            record = collection_export_start(collection=collection, created_by=request.user.get_username())
            # Already written when the task ran at once (a synchronous cluster): then the link is there at once.
            started.append(CollectionFile.objects.select_related("collection").get(pk=record.pk))
        if started:
            self.message_user(
                request,
                format_html_join(" ", "{}", ((export_state(record),) for record in started)),
                messages.SUCCESS,
            )

    @admin.action(description="Download as collection file", permissions=["change"])
    def export_collection_file(self, request: HttpRequest, queryset: QuerySet[Collection]) -> None:
        collections = list(self.manageable(request, queryset))
        self._export(request, collections)
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

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def delete_model(self, request: HttpRequest, obj: CollectionFile) -> None:
        collection_file_remove(record=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[CollectionFile]) -> None:
        for record in queryset:
            collection_file_remove(record=record)

    tool_pages: tuple[ToolPage, ...] = (
        ToolPage("<path:object_id>/download/", "download_view", "download"),
        ToolPage("<path:object_id>/status/", "status_view", "status"),
    )

    def add_view(
        self, request: HttpRequest, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        # Adding one is importing a file: a file to read, not a row to fill in.
        if not self.has_add_permission(request):
            raise PermissionDenied
        return self.import_view(request)

    @admin.display(description="progress")
    def progress(self, obj: CollectionFile) -> SafeString:
        if obj.status in (CollectionFileStatus.QUEUED, CollectionFileStatus.RUNNING):
            return format_html(
                '{} <progress max="{}" value="{}"></progress> {} / {} paragraphs', _phase(obj), max(obj.total, 1),
                obj.done, obj.done, obj.total,
            )  # fmt: skip
        if obj.status == CollectionFileStatus.ERROR:
            # The list is where an editor looks after an import: "error" alone sent them to open each row.
            return format_html("failed: {}", obj.error or "no reason was recorded")
        return format_html("{} / {} paragraphs", obj.done, obj.total)

    @admin.display(description="file")
    def download(self, obj: CollectionFile) -> SafeString:
        if obj.kind != CollectionFileKind.EXPORT or obj.status != CollectionFileStatus.DONE or not obj.stored:
            return format_html("{}", "—")
        url = reverse("admin:collections_app_collectionfile_download", args=[obj.pk])
        return format_html('<a href="{}">Download</a>', url)

    def download_view(self, request: HttpRequest, object_id: str) -> HttpResponse | FileResponse:
        record = object_for_tool(self, request, object_id, change=False)
        # Whole paragraphs, whatever their reader labels: an editor's, as the API's export is.
        if not self._may_manage(request, record):
            raise PermissionDenied
        if record.kind != CollectionFileKind.EXPORT or record.status != CollectionFileStatus.DONE or not record.stored:
            raise Http404("this export is not ready")
        try:
            file = collection_file_open(record)
        except ExportExpired as exc:
            return HttpResponseNotFound(format_html("<p>{}</p>", str(exc)))
        return FileResponse(
            file,
            as_attachment=True,
            filename=download_name(record.collection),
            content_type="application/vnd.sqlite3",
        )

    def status_view(self, request: HttpRequest, object_id: str) -> JsonResponse:
        """An export's state while the page that started it follows it (export_status.js asks every 1.5 s)."""
        record = object_for_tool(self, request, object_id, change=False)
        if not self._may_manage(request, record):
            raise PermissionDenied  # it hands over the download link: an editor's, as the download is
        if record.kind != CollectionFileKind.EXPORT:
            raise Http404("not an export")
        pending = record.status in (CollectionFileStatus.QUEUED, CollectionFileStatus.RUNNING)
        return JsonResponse({"pending": pending, "html": str(export_state(record))})

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
