"""Admin: reader labels of per-reader documents, and the paragraphs every reader may read.

- DocumentLabelsAdminMixin (DocumentAdmin): a "Reader labels" page of its own (like UserAdmin's password
  page) whose form calls `document_labels_set` — the paragraphs are relabelled at once, nothing re-parsed
  or re-embedded; a "Reader labels" tool on the document's page; a warning on that page while the
  document's paragraphs are readable by every reader; a list filter for documents without labels.
- CollectionReadersAdminMixin (CollectionAdmin): the collection's page warns "N paragraphs readable by every
  reader" (the live count of the paragraphs searches read), linking to the documents without labels.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html

from accounts.models import Role
from collections_app.models import UNLABELLED, Build, Chunk, Collection
from collections_app.services.labels import (
    MAX_LABELS,
    InvalidLabels,
    document_labels_set,
    unlabelled_paragraphs,
    unlabelled_warning,
)
from collections_app.services.reader_access import ReaderAccessNeedsAdmin
from doors.admin.base import ToolPage, object_for_tool
from doors.admin.roles import role_in

# Builds of the document shown on its labels page (the rest are in the builds list).
RECENT_BUILDS = 5


class DocumentLabelsForm(forms.Form):
    labels = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4, "cols": 40}),
        help_text=f"One label per line (at most {MAX_LABELS}). A reader holding one of them may read this "
        "document's paragraphs; with none, every reader may.",
    )

    def label_list(self) -> list[str]:
        return [line.strip() for line in self.cleaned_data.get("labels", "").splitlines() if line.strip()]


class UnlabelledFilter(admin.SimpleListFilter):
    title = "reader labels"
    parameter_name = "labelled"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [("no", "none (readable by every reader)"), ("yes", "some")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if self.value() == "no":
            return queryset.filter(UNLABELLED)
        if self.value() == "yes":
            return queryset.exclude(UNLABELLED)
        return queryset


def unlabelled_documents_url(collection: Collection) -> str:
    url = reverse("admin:collections_app_document_changelist")
    return f"{url}?collection__id__exact={collection.pk}&{UnlabelledFilter.parameter_name}=no"


class DocumentLabelsAdminMixin(admin.ModelAdmin):
    def get_list_filter(self, request: HttpRequest) -> list[Any]:
        return [*super().get_list_filter(request), UnlabelledFilter]

    tool_pages: tuple[ToolPage, ...] = (ToolPage("<path:object_id>/labels/", "labels_view", "labels"),)

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        context = dict(extra_context or {})
        document = self.get_object(request, unquote(object_id)) if request.method == "GET" else None
        if document is not None and document.collection.per_reader:
            if self.has_change_permission(request, document):
                url = reverse(f"{self.admin_site.name}:collections_app_document_labels", args=[document.pk])
                shown = ", ".join(document.labels) if document.labels else "none"
                context["kb_tools"] = [*context.get("kb_tools", []), (f"Reader labels: {shown}", url)]
            count = unlabelled_paragraphs(collection=document.collection, document=document)
            if count:
                messages.warning(request, f"{unlabelled_warning(count)}: give this document reader labels.")
        return super().change_view(request, object_id, form_url, context)

    def labels_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        document = object_for_tool(self, request, object_id, change=True)
        form = DocumentLabelsForm(request.POST or None, initial={"labels": "\n".join(document.labels)})
        if request.method == "POST" and form.is_valid():
            try:
                document_labels_set(
                    document=document,
                    labels=form.label_list(),
                    role=role_in(request, document.tenant_id) or Role.VIEWER,
                )
            except (InvalidLabels, ReaderAccessNeedsAdmin) as exc:
                form.add_error("labels", str(exc))
            else:
                shown = ", ".join(document.labels) if document.labels else "no labels (every reader may read it)"
                self.message_user(request, f"{document.filename} now carries {shown}; its paragraphs are relabelled.")
                return HttpResponseRedirect(
                    reverse(f"{self.admin_site.name}:collections_app_document_change", args=[document.pk])
                )
        paragraphs = Chunk.objects.filter(document=document).live().paragraphs()
        context = {
            **self.admin_site.each_context(request),
            "title": f"Reader labels of {document.filename}",
            "opts": self.opts,
            "original": document,
            "form": form,
            "per_reader": document.collection.per_reader,
            "paragraphs": paragraphs.count(),
            "unlabelled": paragraphs.unlabelled().count(),
            "builds": Build.objects.filter(document=document).order_by("-built_at")[:RECENT_BUILDS],
            "builds_url": reverse(f"{self.admin_site.name}:collections_app_build_changelist")
            + f"?document__id__exact={document.pk}",
        }
        return TemplateResponse(request, "admin/collections_app/document/reader_labels.html", context)


class CollectionReadersAdminMixin(admin.ModelAdmin):
    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        collection = self.get_object(request, unquote(object_id)) if request.method == "GET" else None
        if collection is not None and collection.per_reader:
            count = unlabelled_paragraphs(collection=collection)
            if count:
                messages.warning(
                    request,
                    format_html(
                        '{} — <a href="{}">the documents without labels</a>.',
                        unlabelled_warning(count),
                        unlabelled_documents_url(collection),
                    ),
                )
        return super().change_view(request, object_id, form_url, extra_context)
