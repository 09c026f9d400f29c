"""Admin: what changed between two versions of a document, a page of its own under the document's page.

Linked from the document's versions list ("compare with version N-1" on each version, and "compare two versions"
under it); any two versions are chosen on the page itself. The diff is collections_app/services/documents/_diff.py:
each version as its file reads, paragraph by paragraph, the changed words marked.
"""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse

from collections_app.models import Document, DocumentVersion
from collections_app.selectors import document_versions_for
from collections_app.services.documents import VersionsNotComparable, document_versions_diff
from doors.admin.base import ToolPage, object_for_tool


def versions_diff_url(document: Document, old: int | None = None, new: int | None = None) -> str:
    url = reverse("admin:collections_app_document_versions_diff", args=[document.pk])
    return url if old is None or new is None else f"{url}?old={old}&new={new}"


class VersionDiffAdminMixin(admin.ModelAdmin):
    tool_pages: tuple[ToolPage, ...] = (
        ToolPage("<path:object_id>/versions/diff/", "versions_diff_view", "versions_diff"),
    )

    def versions_diff_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        document = object_for_tool(self, request, object_id, change=False)
        versions = list(document_versions_for(document))  # newest first
        numbers = [v.number for v in versions]
        new, old = self._chosen(request, document, numbers)
        context = {
            **self.admin_site.each_context(request),
            "title": f"What changed in {document.filename}",
            "opts": self.opts,
            "original": document,
            "choices": [(v.number, version_label(v)) for v in versions],
            "old": old,
            "new": new,
            "diff": None,
            "problem": "",
        }
        status = 200
        if len(numbers) < 2:
            context["problem"] = (
                f"{document.filename} has one version so far: upload a changed file under the same name to have "
                "two to compare."
            )
        elif old == new:
            context["problem"] = "Choose two different versions to compare."
        else:
            try:
                context["diff"] = document_versions_diff(document=document, old=old, new=new)
            except VersionsNotComparable as exc:
                context["problem"] = f"These versions cannot be compared: {exc}."
                status = 400 if "has no version" in str(exc) else 200
        return TemplateResponse(request, "admin/collections_app/document/versions_diff.html", context, status=status)

    @staticmethod
    def _chosen(request: HttpRequest, document: Document, numbers: list[int]) -> tuple[int, int]:
        """The versions asked for (?old=&new=), else the answering one against the one before it."""

        def number(name: str) -> int | None:
            value = request.GET.get(name, "")
            return int(value) if value.isdigit() and len(value) < 9 else None

        new = number("new") or (document.version if document.version in numbers else (numbers[0] if numbers else 0))
        before = [n for n in numbers if n < new]
        old = number("old") or (before[0] if before else (numbers[-1] if numbers else 0))
        return new, old


def version_label(version: DocumentVersion) -> str:
    return f"version {version.number} ({version.get_status_display()}, {version.uploaded_at:%Y-%m-%d %H:%M})"
