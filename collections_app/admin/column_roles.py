"""Admin: the column-roles editor of a records document (spreadsheet, CSV/TSV, JSON/YAML/XML records).

A page of its own on the document (like UserAdmin's password page): a table of the columns with their
type, sample values, proposed role and an editable role, plus the table mode. Saving calls
document_options_update, which re-parses from the original only once the editor confirms.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html
from django.utils.text import capfirst

from collections_app.models import Document
from collections_app.services.ingest_options import (
    REPARSE_WARNING,
    InvalidIngestOptions,
    ReparseNeedsConfirmation,
    document_options_update,
)
from doors.admin.base import ToolPage, object_for_tool
from ingestion.records import ROLES, TABLE_MODES

ROLE_HELP = {
    "index": "in the paragraph's text (searched)",
    "metadata": "a filter only",
    "both": "searched and a filter",
    "ignore": "left out",
}


class ColumnRolesForm(forms.Form):
    table_mode = forms.ChoiceField(
        choices=[
            ("records", "records: one paragraph per row"),
            ("sheet", "sheet: each sheet as one table, chunked like any document"),
        ],
    )
    confirm_reparse = forms.BooleanField(required=False, label="Yes, re-parse this document from its original")

    def __init__(self, *args: Any, columns: list[dict[str, Any]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.columns = columns
        for index, _ in enumerate(columns):
            self.fields[f"role_{index}"] = forms.ChoiceField(
                choices=[(r, f"{r} — {ROLE_HELP[r]}") for r in ROLES], label=""
            )

    def changes(self) -> dict[str, Any]:
        roles = {c["name"]: self.cleaned_data[f"role_{i}"] for i, c in enumerate(self.columns)}
        return {"column_roles": roles, "table_mode": self.cleaned_data["table_mode"]}


class ColumnRolesAdminMixin(admin.ModelAdmin):
    """Mixed into DocumentAdmin: the `column_roles` read-only field links to the editor."""

    @admin.display(description="column roles")
    def column_roles(self, obj: Document) -> str:
        columns = obj.ingest_options.get("columns") or []
        if not columns:
            return "—"
        roles = obj.ingest_options.get("column_roles") or {}
        filterable = sum(roles.get(c["name"]) in ("metadata", "both") for c in columns)
        url = reverse(f"{self.admin_site.name}:collections_app_document_columns", args=[obj.pk])
        return format_html(
            '{} columns, {} filterable, read as {} — <a href="{}">edit column roles</a>',
            len(columns),
            filterable,
            obj.ingest_options.get("table_mode") or "records",
            url,
        )

    tool_pages: tuple[ToolPage, ...] = (ToolPage("<path:object_id>/columns/", "column_roles_view", "columns"),)

    def column_roles_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        document = object_for_tool(self, request, object_id, change=True)
        columns = document.ingest_options.get("columns") or []
        roles = document.ingest_options.get("column_roles") or {}
        mode = document.ingest_options.get("table_mode") or TABLE_MODES[0]
        initial = {
            "table_mode": mode,
            **{f"role_{i}": roles.get(c["name"], c["proposed"]) for i, c in enumerate(columns)},
        }
        form = ColumnRolesForm(request.POST or None, initial=initial, columns=columns)
        # The API's wording ends with how to confirm over the API; the checkbox says that here.
        warning = capfirst(REPARSE_WARNING.partition(" Send ")[0])
        change_url = reverse(f"{self.admin_site.name}:collections_app_document_change", args=[document.pk])
        if request.method == "POST" and columns and form.is_valid():
            changes = form.changes()
            if changes["column_roles"] == {c["name"]: roles.get(c["name"]) for c in columns} and (
                changes["table_mode"] == mode
            ):
                self.message_user(request, "Nothing changed; the document was not re-parsed.")
                return HttpResponseRedirect(change_url)
            try:
                document_options_update(
                    document=document, changes=changes, confirm_reparse=form.cleaned_data["confirm_reparse"]
                )
            except InvalidIngestOptions as exc:
                form.add_error(None, str(exc))
            except ReparseNeedsConfirmation:
                form.add_error("confirm_reparse", warning)
            else:
                self.message_user(request, f"Re-parsing {document.filename} with the new column roles.")
                return HttpResponseRedirect(change_url)
        schema = document.collection.metadata_schema or {}
        rows = [
            {
                "name": column["name"],
                "type": _type_shown(column, schema.get(column["name"])),
                "proposed": column["proposed"],
                "samples": column.get("samples", []),
                "field": form[f"role_{index}"],
            }
            for index, column in enumerate(columns)
        ]
        context = {
            **self.admin_site.each_context(request),
            "title": f"Column roles of {document.filename}",
            "opts": self.opts,
            "original": document,
            "form": form,
            "rows": rows,
            "reparse_warning": warning,
        }
        return TemplateResponse(request, "admin/collections_app/document/column_roles.html", context)


def _type_shown(column: dict[str, Any], declared: dict[str, Any] | None) -> str:
    """The collection's declared type when the column is filterable there, else what this file's values are."""
    if declared is None:
        return f"{column['type']} (in this file)"
    if declared.get("type") == "enum":
        values = declared.get("values", [])
        shown = ", ".join(values[:8]) + (", …" if len(values) > 8 else "")
        return f"enum: {shown}"
    return str(declared.get("type"))
