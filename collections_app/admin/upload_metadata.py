"""Admin: the upload form's metadata — a typed field per column the chosen collection declares, and one JSON field.

The fields are those of the collection the add page was opened for (`?collection=<id>`, as the collection's
"upload one" link sends, or the documents list's collection filter, which its "Add" button carries along in
`_changelist_filters`). Choosing another collection on the page reloads it with that collection's fields while no
file is chosen yet; the JSON field takes values for any column (and declares new ones) whatever was chosen. The
values are checked by the service the API uses (services/metadata_schema.py) and given to every file of the submit.
"""

from __future__ import annotations

import hashlib
import re
from datetime import date
from decimal import Decimal
from typing import Any

from django import forms
from django.http import HttpRequest, QueryDict
from django.utils.html import escape

from ingestion.values import as_number

_PLAIN = re.compile(r"^[A-Za-z0-9_-]{1,60}$")
METADATA_JSON_FIELD = "metadata"


def metadata_field_name(column: str) -> str:
    """The form field of a column: its own name where that is a safe HTML name, else a digest of it."""
    if _PLAIN.match(column):
        return f"metadata__{column}"
    return "metadata__" + hashlib.sha256(column.encode("utf-8")).hexdigest()[:16]


def metadata_form_fields(schema: dict[str, Any]) -> dict[str, forms.Field]:
    """One optional field per declared column, typed as the column is: a number, a date, a select, text."""
    fields: dict[str, forms.Field] = {}
    for column, entry in sorted(schema.items()):
        kind = entry.get("type", "string")
        common: dict[str, Any] = {
            "required": False,
            "label": column,
            # The admin prints help text as HTML; a column's name comes from a file's header.
            "help_text": escape(f'{kind}; searches select it with filters {{"{column}": …}}'),
        }
        field: forms.Field
        if kind == "number":
            field = forms.DecimalField(widget=forms.NumberInput(attrs={"step": "any"}), **common)
        elif kind == "date":
            field = forms.DateField(widget=forms.DateInput(attrs={"type": "date"}), **common)
        elif kind == "enum":
            values = entry.get("values", [])
            field = forms.ChoiceField(choices=[("", "—"), *((v, v) for v in values)], **common)
        else:
            field = forms.CharField(max_length=1000, **common)
        fields[metadata_field_name(column)] = field
    return fields


class MetadataJSONField(forms.JSONField):
    def prepare_value(self, value: Any) -> Any:
        return "" if value is None else super().prepare_value(value)  # an empty box with its example, not "null"


def metadata_json_field() -> forms.JSONField:
    return MetadataJSONField(
        required=False,
        label="Other metadata (JSON)",
        widget=forms.Textarea(attrs={"rows": 2, "cols": 60, "placeholder": '{"year": 2026, "department": "HR"}'}),
        help_text="Values for any column as a JSON object; a key the collection does not declare yet declares a "
        "column, typed from its value (number, date YYYY-MM-DD, else text).",
    )


def metadata_given(cleaned: dict[str, Any], schema: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """The values of the typed fields and the JSON field as one object (None: nothing given), or why not."""
    extra = cleaned.get(METADATA_JSON_FIELD)
    if extra not in (None, "", {}) and not isinstance(extra, dict):
        return None, 'give a JSON object, e.g. {"year": 2026}'
    given: dict[str, Any] = dict(extra or {})
    for column in schema:
        value = cleaned.get(metadata_field_name(column))
        if value in (None, ""):
            continue
        if column in given:
            return None, f"{column} is given twice (its field and the JSON): give it once"
        if isinstance(value, Decimal):
            value = as_number(str(value))
        elif isinstance(value, date):
            value = value.isoformat()
        given[column] = value
    return (given or None), ""


def upload_collection_id(request: HttpRequest) -> str:
    """The collection the upload form is for: the one submitted, else ?collection=, else the list's filter."""
    if request.method == "POST":
        return request.POST.get("collection", "")
    if chosen := request.GET.get("collection", ""):
        return chosen
    carried = QueryDict(request.GET.get("_changelist_filters", ""))
    return carried.get("collection__id__exact", "")
