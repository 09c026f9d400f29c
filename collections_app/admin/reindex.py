"""Admin: stale documents and the re-index — what was built with settings since changed, and rebuilding it.

- StaleAdminMixin (documents): the `stale` badge on the list and the page; the list filters on it.
- ReindexAdminMixin (collections): the "Re-index" action and page, the progress (documents done / total, and
  why a run stopped) on the list and the page, refreshed live while pending, and "Preview chunking" of one of
  the collection's documents. The work is services/reindex.py's; these pages only start it and show it.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.db.models import Count, Q, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from collections_app.admin.collection_files import import_state
from collections_app.admin.preview import preview_page
from collections_app.models import Collection, Document, DocumentStatus
from collections_app.selectors import UNLISTED_DOCUMENT_COLUMNS
from collections_app.services.reindex import collection_reindex
from doors.admin.base import TenantScopedAdmin, ToolPage, object_for_tool
from infra.errors import DomainError

STALE_HELP = "built with chunking or embedding settings the collection no longer has; a re-index rebuilds it"


def stale_badge(stale: bool) -> SafeString:
    if not stale:
        return format_html("{}", "—")
    return format_html('<span class="kb-badge kb-badge-stale" title="{}">stale — re-index</span>', STALE_HELP)


class StaleAdminMixin(admin.ModelAdmin):
    """Mixed into DocumentAdmin: the `stale_shown` column and field."""

    @admin.display(ordering="stale", description="stale")
    def stale_shown(self, obj: Document) -> SafeString:
        return stale_badge(obj.stale)


def stale_count_of(collection: Collection) -> int:
    annotated = getattr(collection, "stale_count", None)
    return annotated if annotated is not None else collection.documents.filter(stale=True).count()


def reindex_state(collection: Collection) -> SafeString:
    """The collection's re-index as a person reads it: pending with its progress, stopped with why, or stale."""
    done, total = collection.reindex_done, collection.reindex_total
    if collection.reindex_generation is not None:
        if collection.reindex_error:
            return format_html(
                '<span data-kb-reindex="{}" data-kb-pending="0"><span class="kb-badge kb-badge-error">stopped</span> '
                "{} / {} documents — {}. Searches still answer from the previous build; re-index again to resume "
                "where it stopped.</span>",
                collection.pk,
                done,
                total,
                collection.reindex_error,
            )
        return format_html(
            '<span data-kb-reindex="{}" data-kb-pending="1"><span class="kb-badge kb-badge-parsing">re-indexing</span> '
            '<progress max="{}" value="{}"></progress> <span class="kb-reindex-count">{} / {} documents</span> — '
            "searches answer from the previous build until the cutover.</span>",
            collection.pk,
            max(total, 1),
            done,
            done,
            total,
        )
    # An import running, or failed and leaving nothing: never "up to date" (the collection's page says more above).
    importing = import_state(collection, brief=True)
    if importing is not None:
        return format_html('<span data-kb-reindex="{}" data-kb-pending="0">{}</span>', collection.pk, importing)
    stale = stale_count_of(collection)
    if stale:
        shown = format_html(
            '<span class="kb-badge kb-badge-stale" title="{}">{} stale — re-index</span>', STALE_HELP, stale
        )
    elif total:
        shown = format_html(
            '<span class="kb-badge kb-badge-done">up to date</span> last re-index: '
            '<span class="kb-reindex-count">{} / {} documents</span>',
            done,
            total,
        )
    else:
        shown = format_html('<span class="kb-badge kb-badge-done">up to date</span>')
    return format_html('<span data-kb-reindex="{}" data-kb-pending="0">{}</span>', collection.pk, shown)


class ReindexAdminMixin(TenantScopedAdmin):
    """Mixed into CollectionAdmin: <collection>/reindex/ (editors), reindex/status/ and preview/ (readers)."""

    def get_queryset(self, request: HttpRequest) -> QuerySet[Collection]:
        # The stale count of every row in the list's one query (the same join as the document count).
        return (
            super()
            .get_queryset(request)
            .annotate(
                stale_count=Count("documents", filter=Q(documents__stale=True, documents__trashed_at__isnull=True))
            )
        )

    tool_pages: tuple[ToolPage, ...] = (
        ToolPage("<path:object_id>/reindex/", "reindex_view", "reindex"),
        ToolPage("<path:object_id>/reindex/status/", "reindex_status_view", "reindex_status"),
        ToolPage("<path:object_id>/preview/", "preview_view", "preview"),
    )

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        context = dict(extra_context or {})
        collection = self.get_object(request, unquote(object_id))
        if collection is not None:
            site = self.admin_site.name
            tools = [("Preview chunking", reverse(f"{site}:collections_app_collection_preview", args=[collection.pk]))]
            if self.has_change_permission(request, collection):
                tools.append(("Re-index", reverse(f"{site}:collections_app_collection_reindex", args=[collection.pk])))
            context["kb_tools"] = [*context.get("kb_tools", []), *tools]
            context["kb_reindex_status_url"] = reverse(
                f"{site}:collections_app_collection_reindex_status", args=[collection.pk]
            )
        return super().change_view(request, object_id, form_url, context)

    @admin.display(description="re-index")
    def reindex_shown(self, obj: Collection) -> SafeString:
        return reindex_state(obj)

    @admin.action(description="Re-index the selected collections", permissions=["change"])
    def reindex(self, request: HttpRequest, queryset: QuerySet[Collection]) -> None:
        collections = list(self.manageable(request, queryset))  # a viewer's tenants' rows are left alone
        for collection in collections:
            self._start(request, collection)
        if skipped := queryset.count() - len(collections):
            self.message_user(request, f"{skipped} collection(s) left alone: you may only view them.", messages.WARNING)

    def _start(self, request: HttpRequest, collection: Collection) -> None:
        try:
            started = collection_reindex(collection=collection)
        except DomainError as exc:
            self.message_user(request, f"{collection.name}: {exc}", messages.ERROR)
            return
        self.message_user(
            request,
            f"Re-index of {collection.name} started ({started.reindex_done} / {started.reindex_total} documents "
            "already rebuilt). Searches answer from the previous build until the cutover.",
            messages.SUCCESS,
        )

    def reindex_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """Asks first (GET), then starts or resumes (POST) and goes back to the collection's page."""
        collection = object_for_tool(self, request, object_id, change=True)
        if request.method == "POST":
            self._start(request, collection)
            return HttpResponseRedirect(
                reverse(f"{self.admin_site.name}:collections_app_collection_change", args=[collection.pk])
            )
        context = {
            **self.admin_site.each_context(request),
            "title": f"Re-index {collection.name}?",
            "opts": self.opts,
            "original": collection,
            "documents": collection.documents.filter(status=DocumentStatus.DONE).count(),
            "stale": stale_count_of(collection),
            "state": reindex_state(collection),
        }
        return TemplateResponse(request, "admin/collections_app/collection/reindex.html", context)

    def reindex_status_view(self, request: HttpRequest, object_id: str) -> JsonResponse:
        """The page's live progress cell while a re-index is pending (its refresh script asks every 2 s)."""
        collection = object_for_tool(self, request, object_id, change=False)
        return JsonResponse(
            {"pending": collection.reindex_generation is not None, "html": str(reindex_state(collection))}
        )

    def preview_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """Preview chunking of one of the collection's documents (chosen; the first read one by default)."""
        collection = object_for_tool(self, request, object_id, change=False)
        # A choice of names: no document's JSON columns are read for it (the preview slices the chosen one's).
        documents = (
            collection.documents.filter(status=DocumentStatus.DONE)
            .defer(*UNLISTED_DOCUMENT_COLUMNS)
            .order_by("filename", "id")
        )
        asked = request.GET.get("document", "")
        chosen = documents.filter(pk=asked).first() if _is_uuid(asked) else None
        return preview_page(
            self,
            request,
            collection=collection,
            document=chosen or documents.first(),
            documents=documents,
            original=collection,
            may_apply=self.has_change_permission(request, collection),
        )


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True
