"""Admin: the trash (issue 41). Deleting a document (its page's Delete, the list's "Delete selected") moves it to
its collection's trash after a confirmation that names the golden questions referring to it; the Trash page lists
what was deleted, by whom and when, with Restore, Purge now and "Empty trash" (asked first)."""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html

from accounts.models import Role
from collections_app.models import Collection, Document
from collections_app.selectors import UNLISTED_DOCUMENT_COLUMNS
from collections_app.services.documents import (
    NotInTrash,
    RestoreConflict,
    document_golden_references,
    document_purge,
    document_restore,
    document_trash,
    restore_until,
    trash_days,
    trash_empty,
)
from doors.admin.base import TenantScopedAdmin, ToolPage
from doors.admin.roles import tenants_where


class TrashAdminMixin(TenantScopedAdmin):
    """For DocumentAdmin: deletion to the trash, and the trash's pages."""

    tool_pages: tuple[ToolPage, ...] = (
        ToolPage("trash/", "trash_view", "trash"),
        ToolPage("trash/empty/", "trash_empty_view", "trash_empty"),
    )
    delete_confirmation_template = "admin/collections_app/document/trash_confirmation.html"

    # --- deleting: to the trash -------------------------------------------------------------------------

    def delete_model(self, request: HttpRequest, obj: Document) -> None:
        document_trash(document=obj, by=request.user.get_username(), user=request.user)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Document]) -> None:
        for document in queryset:
            document_trash(document=document, by=request.user.get_username(), user=request.user)

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> tuple[list[Any], dict[str, int], set[str], list]:
        # What the confirmation lists: the documents alone (their paragraphs, versions and attachments are not
        # deleted but kept in the trash with them), never a walk of every related row (10,000 paragraphs).
        documents = list(objs)
        perms_needed = set() if all(self.has_delete_permission(request, d) for d in documents) else {"document"}
        return [d.filename for d in documents], {"documents": len(documents)}, perms_needed, []

    def delete_view(self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None) -> Any:
        context = dict(extra_context or {})
        if request.method != "POST":
            document = self.get_object(request, object_id)
            if document is not None:
                context.update(_confirmation(request, [document], title=f"Move {document.filename} to the trash?"))
        return super().delete_view(request, object_id, context)

    def response_delete(self, request: HttpRequest, obj_display: str, obj_id: Any) -> HttpResponse:
        trashed = Document.all_objects.filter(pk=obj_id).values_list("collection_id", "trashed_at").first()
        until = restore_until(trashed[1]) if trashed else None
        self.message_user(
            request,
            f"Moved {obj_display} to the trash"
            + (f"; it can be restored until {until:%Y-%m-%d %H:%M} UTC." if until else "; it can be restored from it."),
            messages.SUCCESS,
        )
        url = reverse("admin:collections_app_document_changelist")
        return HttpResponseRedirect(f"{url}?collection__id__exact={trashed[0]}" if trashed else url)

    @admin.action(description="Delete the selected documents (to the trash)", permissions=["delete"])
    def delete_selected(self, request: HttpRequest, queryset: QuerySet[Document]) -> HttpResponse | None:
        documents = list(self.manageable(request, queryset).select_related("collection"))
        if not documents:
            self.message_user(request, "None of the selected documents is yours to delete.", messages.WARNING)
            return None
        if request.POST.get("post"):
            for document in documents:
                document_trash(document=document, by=request.user.get_username(), user=request.user)
            self.message_user(
                request,
                f"{len(documents)} document(s) moved to the trash: "
                f"{', '.join(d.filename for d in documents[:10])}{' …' if len(documents) > 10 else ''}.",
                messages.SUCCESS,
            )
            return None
        context = {
            **self.admin_site.each_context(request),
            **_confirmation(request, documents, title=f"Move {len(documents)} document(s) to the trash?"),
            "opts": self.opts,
            "queryset": documents,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            "bulk": True,
        }
        return TemplateResponse(request, "admin/collections_app/document/trash_confirmation.html", context)

    # --- the trash's pages ------------------------------------------------------------------------------

    def trash_view(self, request: HttpRequest) -> HttpResponse:
        """The trash of one collection (?collection=<id>), or of every collection this person reads; a POST restores
        or purges one document (`restore` / `purge` = its id)."""
        # The editors' page, as the API's: who deleted what, and the buttons that bring it back or purge it.
        if not self.has_change_permission(request):
            raise PermissionDenied
        collection = _collection_asked(request)
        if request.method == "POST":
            return self._trash_act(request, collection)
        documents = _trash_of(request, collection)
        rows = [
            {
                "document": d,
                "by": d.trashed_by_name or "someone no longer known",
                "until": restore_until(d.trashed_at),
            }
            for d in documents[:500]
        ]
        context = {
            **self.admin_site.each_context(request),
            "title": f"Trash of {collection.name}" if collection else "Trash",
            "opts": self.opts,
            "collection": collection,
            "rows": rows,
            "total": documents.count(),
            "days": trash_days(),
            "may_empty": collection is not None and bool(rows),
            "documents_url": reverse("admin:collections_app_document_changelist")
            + (f"?collection__id__exact={collection.pk}" if collection else ""),
        }
        return TemplateResponse(request, "admin/collections_app/document/trash.html", context)

    def _trash_act(self, request: HttpRequest, collection: Collection | None) -> HttpResponse:
        action = "restore" if "restore" in request.POST else "purge" if "purge" in request.POST else None
        document_id = request.POST.get(action or "", "")
        document = _trash_of(request, collection).filter(pk=document_id).first() if _is_uuid(document_id) else None
        if action is None or document is None:
            self.message_user(request, "That document is no longer in the trash.", messages.WARNING)
        else:
            try:
                if action == "restore":
                    document_restore(document=document)
                    url = reverse("admin:collections_app_document_change", args=[document.pk])
                    self.message_user(
                        request, format_html('Restored <a href="{}">{}</a>: it answers searches again.', url,
                                             document.filename), messages.SUCCESS,
                    )  # fmt: skip
                else:
                    document_purge(document=document)
                    self.message_user(request, f"Purged {document.filename} for good.", messages.SUCCESS)
            except (RestoreConflict, NotInTrash) as exc:
                self.message_user(request, str(exc), messages.ERROR)
        return HttpResponseRedirect(request.get_full_path())

    def trash_empty_view(self, request: HttpRequest) -> HttpResponse:
        """ "Empty trash" of one collection: asks first (GET), then purges every document in it (POST)."""
        if not self.has_change_permission(request):
            raise PermissionDenied
        collection = _collection_asked(request)
        trash = reverse("admin:collections_app_document_trash")
        if collection is None:  # one collection's trash at a time: the page says so and links the trash
            context = {**self.admin_site.each_context(request), "title": "Empty which trash?", "opts": self.opts,
                       "back": trash}  # fmt: skip
            return TemplateResponse(request, "admin/collections_app/document/trash_empty.html", context)
        back = f"{trash}?collection={collection.pk}"
        if request.method == "POST":
            purged = trash_empty(collection_id=collection.pk)
            self.message_user(
                request, f"The trash of {collection.name} was emptied: {purged} document(s) purged for good."
            )
            return HttpResponseRedirect(back)
        documents = _trash_of(request, collection)
        context = {
            **self.admin_site.each_context(request),
            "title": f"Empty the trash of {collection.name}?",
            "opts": self.opts,
            "collection": collection,
            "documents": documents[:200],
            "total": documents.count(),
            "back": back,
        }
        return TemplateResponse(request, "admin/collections_app/document/trash_empty.html", context)

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        # The list links to the trash: of the collection it is filtered on, else of every collection.
        if not self.has_change_permission(request):
            return super().changelist_view(request, extra_context)
        collection_id = request.GET.get("collection__id__exact", "")
        url = reverse("admin:collections_app_document_trash")
        if _is_uuid(collection_id):
            url += f"?collection={collection_id}"
        trashed = _trash_of(request, None)
        if _is_uuid(collection_id):
            trashed = trashed.filter(collection_id=collection_id)
        context = {"kb_trash_url": url, "kb_trash_count": trashed.count(), **(extra_context or {})}
        return super().changelist_view(request, context)


def _confirmation(request: HttpRequest, documents: list[Document], *, title: str) -> dict[str, Any]:
    references = document_golden_references(documents=documents)
    days = trash_days()
    return {
        "title": title,
        "kb_documents": [(d, references.get(str(d.pk), [])) for d in documents],
        "kb_golden_total": sum(len(g) for g in references.values()),
        "kb_trash_days": days,
    }


def _collection_asked(request: HttpRequest) -> Collection | None:
    collection_id = request.GET.get("collection", "")
    if not collection_id:
        return None
    tenants = tenants_where(request, Role.EDITOR)
    found = Collection.objects.filter(pk=collection_id) if _is_uuid(collection_id) else Collection.objects.none()
    if tenants is not None:
        found = found.filter(tenant__in=tenants)
    collection = found.first()
    if collection is None:
        raise Http404("no such collection")
    return collection


def _trash_of(request: HttpRequest, collection: Collection | None) -> QuerySet[Document]:
    documents = (
        Document.all_objects.trashed()
        .exclude(parent__trashed_at__isnull=False)  # an attachment goes and comes back with its document
        .select_related("collection")
        .defer(*UNLISTED_DOCUMENT_COLUMNS)
        .order_by("-trashed_at", "id")
    )
    tenants = tenants_where(request, Role.EDITOR)  # the trash is the editors'
    if tenants is not None:
        documents = documents.filter(tenant__in=tenants)
    if collection is not None:
        documents = documents.filter(collection=collection)
    return documents


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except (ValueError, TypeError):
        return False
    return True
