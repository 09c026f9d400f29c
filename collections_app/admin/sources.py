"""Admin: where documents come from — email attachments and their message, zip uploads, folder sources.

- Document page: the message an attachment belongs to, and a message's attachments, as links.
- Document upload: a .zip imports each member (archive_import) and lands on the collection's documents,
  with what was not imported shown as warnings.
- Collection page: its folder source (a folder under the tenant's own folder of KB_FOLDER_SOURCES_ROOT, which
  only the tenant's admins see and set), and an action that queues a sync.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.models import LogEntry
from django.core.files.uploadedfile import UploadedFile
from django.db.models import Model, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from collections_app.models import Collection, Document
from collections_app.services.archives import ArchiveRefused, InsufficientStorage, archive_import
from collections_app.services.documents import FileTooLarge
from collections_app.services.folder_sources import (
    FolderSourceError,
    folder_source_configured,
    folder_sources_adopt_legacy,
)
from doors.admin.display import as_sentence
from ingestion import UnsupportedFile


class AttachmentsAdminMixin:
    """Read-only links between a message and its attachments (add "attached_to", "attachment_links")."""

    @admin.display(description="attached to")
    def attached_to(self, obj: Document) -> str:
        if obj.parent_id is None:
            return "—"
        url = reverse("admin:collections_app_document_change", args=[obj.parent_id])
        # Its name only: `obj.parent` would read the whole row, a large message's parser output included.
        name = Document.objects.filter(pk=obj.parent_id).values_list("filename", flat=True).first()
        return format_html('<a href="{}">{}</a>', url, name or obj.parent_id)

    @admin.display(description="attachments")
    def attachment_links(self, obj: Document) -> str:
        attachments = list(obj.attachments.order_by("filename").values_list("pk", "filename", "status"))
        if not attachments:
            return "—"
        change = "admin:collections_app_document_change"
        return format_html_join(
            ", ",
            '<a href="{}">{}</a> ({})',
            ((reverse(change, args=[pk]), name, status) for pk, name, status in attachments),
        )


class ArchiveUploadAdminMixin:
    """A .zip uploaded in the admin imports each member, as the API does (DocumentAdmin.save_model hands it over)."""

    def save_archive(self, request: HttpRequest, obj: Document, form: forms.ModelForm, upload: UploadedFile) -> None:
        """Called by the admin's save_model for a .zip; the admin then lands on the collection's documents."""
        collection = form.cleaned_data["collection"]
        obj._archive_collection = collection  # type: ignore[attr-defined]
        try:
            result = archive_import(
                collection=collection,
                filename=upload.name or "",
                content=upload,  # type: ignore[arg-type]  # an UploadedFile reads as the binary file it is
                uploaded_by=request.user.get_username(),
                source_uri=form.cleaned_data.get("source_uri", ""),
            )
        except (UnsupportedFile, ArchiveRefused, FileTooLarge, InsufficientStorage) as exc:
            self.message_user(request, f"Not imported: {exc}", messages.ERROR)  # type: ignore[attr-defined]
            return
        created = sum(1 for m in result.members if m.created)
        held = len(result.members) - created
        self.message_user(  # type: ignore[attr-defined]
            request, f"From {upload.name}: {created} document(s) imported, {held} already held.", messages.SUCCESS
        )
        for warning in result.warnings:
            self.message_user(request, f"In {upload.name}: {warning}", messages.WARNING)  # type: ignore[attr-defined]

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        if not hasattr(form.instance, "_archive_collection"):
            super().save_related(request, form, formsets, change)  # type: ignore[misc]

    def log_addition(self, request: HttpRequest, obj: Model, message: Any) -> LogEntry | None:
        if not hasattr(obj, "_archive_collection"):  # a zip is no one object; each member is its own document
            return super().log_addition(request, obj, message)  # type: ignore[misc]
        return None

    def response_add(self, request: HttpRequest, obj: Document, post_url_continue: str | None = None) -> HttpResponse:
        collection = getattr(obj, "_archive_collection", None)
        if collection is None:
            return super().response_add(request, obj, post_url_continue)  # type: ignore[misc]
        url = reverse("admin:collections_app_document_changelist")
        return HttpResponseRedirect(f"{url}?collection__id__exact={collection.pk}")


class FolderSourceAdminMixin:
    """A collection's folder source as its members see it (add "folder_source_shown"), and a sync action."""

    @admin.display(description="folder source")
    def folder_source_shown(self, obj: Collection) -> str:
        if folder_source_configured(obj):
            return "set by an admin of this tenant; synced by the action below, manage.py sync_collection or a schedule"
        return f"none (an admin of this tenant can choose a folder under KB_FOLDER_SOURCES_ROOT/{obj.tenant.name}/)"

    @admin.action(description="Sync the folder source now", permissions=["change"])
    def sync_folder_source(self, request: HttpRequest, queryset: QuerySet[Model]) -> None:
        from django_q.tasks import async_task

        try:
            folder_sources_adopt_legacy()  # a legacy variable is bound to its one collection before anything reads it
        except FolderSourceError as exc:
            self.message_user(request, as_sentence(str(exc)), messages.ERROR)  # type: ignore[attr-defined]
            return
        queued, skipped = [], []
        for collection in self.manageable(request, queryset):  # type: ignore[attr-defined]  # not a viewer's
            if not folder_source_configured(collection):
                skipped.append(collection.name)
                continue
            async_task(
                "collections_app.tasks.sync_folder_source",
                str(collection.pk),
                task_name=f"sync folder source of {collection.pk}",
                group="ingestion",
            )
            queued.append(collection.name)
        if queued:
            self.message_user(request, f"Folder sync queued for {', '.join(queued)}.")  # type: ignore[attr-defined]
        if skipped:
            self.message_user(  # type: ignore[attr-defined]
                request, f"No folder source for {', '.join(skipped)}: nothing to sync.", messages.WARNING
            )
