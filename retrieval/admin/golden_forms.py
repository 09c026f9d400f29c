"""Forms of the golden questions pages: a question (checked by the same `golden_question_clean` as the API, so the
messages are the same), and the Import, Export, Evaluate and Measure tools."""

from __future__ import annotations

from collections import Counter
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.utils.html import format_html_join
from django.utils.safestring import mark_safe

from accounts.models import Reader
from collections_app.models import Collection
from collections_app.services.collections import MAX_TOP_N
from infra.errors import DomainError
from retrieval.models import GoldenQuestion
from retrieval.services.golden import (
    DEFAULT_TOP_N,
    InvalidGolden,
    document_names,
    golden_question_clean,
)
from retrieval.services.measure import MEASURED, PRESETS, preset_shown, variants_from_text


def tenant_labels(field: forms.ModelChoiceField, *, several_tenants: bool) -> None:
    """For a person who sees several tenants (a superuser, staff of more than one), a choice whose name another
    choice shares says its tenant ("beta-secret (tenant Acme)"): two same-named collections or readers could not be
    told apart otherwise. Choices of one tenant, or with a name of their own, read as before."""
    if not several_tenants or field.queryset is None:
        return
    queryset = field.queryset.select_related("tenant")
    shared = {name for name, count in Counter(queryset.values_list("name", flat=True)).items() if count > 1}
    field.queryset = queryset
    field.label_from_instance = (  # type: ignore[method-assign]
        lambda obj: f"{obj.name} (tenant {obj.tenant.name})" if obj.name in shared else str(obj)
    )


def _lines(value: str) -> list[str]:
    return [line.strip() for line in value.splitlines() if line.strip()]


class GoldenQuestionForm(forms.ModelForm):
    markers_text = forms.CharField(
        label="Markers", required=False, widget=forms.Textarea(attrs={"rows": 3}),
        help_text="One phrase per line that must appear in the returned text (survives rechunking).",
    )  # fmt: skip
    documents_text = forms.CharField(
        label="Documents", required=False, widget=forms.Textarea(attrs={"rows": 3}),
        help_text="One per line: a document that answers it, by file name, file name without extension, source or id.",
    )  # fmt: skip
    paragraphs_text = forms.CharField(
        label="Paragraphs", required=False, widget=forms.Textarea(attrs={"rows": 3}),
        help_text="One paragraph id per line (a search result's chunk_id).",
    )  # fmt: skip

    class Meta:
        model = GoldenQuestion
        fields = ["collection", "question", "control", "note"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        golden = self.instance
        if not golden._state.adding:
            names = document_names(golden.collection).names_of
            self.initial["markers_text"] = "\n".join(golden.markers)
            self.initial["documents_text"] = "\n".join(names.get(str(d), str(d)) for d in golden.documents)
            self.initial["paragraphs_text"] = "\n".join(str(p) for p in golden.paragraphs)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or self.cleaned_data
        collection = data.get("collection") or (None if self.instance._state.adding else self.instance.collection)
        if collection is None or self.errors:
            return data
        values = {
            "question": data.get("question", ""), "control": bool(data.get("control")), "note": data.get("note", ""),
            "markers": _lines(data.get("markers_text", "")), "documents": _lines(data.get("documents_text", "")),
            "paragraphs": _lines(data.get("paragraphs_text", "")),
        }  # fmt: skip
        try:
            self.golden_values = golden_question_clean(collection=collection, values=values)
        except InvalidGolden as exc:
            field = {"markers": "markers_text", "documents": "documents_text", "paragraphs": "paragraphs_text"}
            self.add_error(field.get(exc.field or "", exc.field if exc.field in self.fields else None), str(exc))
            return data
        taken = GoldenQuestion.objects.filter(collection=collection, question=self.golden_values["question"])
        if taken.exclude(pk=self.instance.pk).exists():
            self.add_error("question", "This collection already has that golden question.")
        return data


class ImportForm(forms.Form):
    collection = forms.ModelChoiceField(queryset=Collection.objects.none())
    jsonl = forms.FileField(label="JSON lines", required=False)
    queries = forms.FileField(label="BEIR queries.jsonl", required=False)
    qrels = forms.FileField(label="BEIR qrels (TSV)", required=False)
    skip_unknown = forms.BooleanField(
        required=False, help_text="BEIR: skip (and report) qrels naming no document instead of refusing the import."
    )


class ExportForm(forms.Form):
    collection = forms.ModelChoiceField(queryset=Collection.objects.none())
    kind = forms.ChoiceField(label="Format", choices=[("jsonl", "JSON lines"), ("beir", "BEIR (zip)")])


class EvaluateForm(forms.Form):
    collection = forms.ModelChoiceField(queryset=Collection.objects.none())
    reader = forms.ModelChoiceField(
        queryset=Reader.objects.none(), required=False,
        help_text="Search as this registered reader (needed for a per-reader collection).",
    )  # fmt: skip
    top_n = forms.IntegerField(
        label="Results per question", min_value=1, max_value=MAX_TOP_N, initial=DEFAULT_TOP_N, required=False
    )


class MeasureForm(EvaluateForm):
    preset = forms.ChoiceField(
        required=False,
        choices=[("", "— the variants below —"),
                 *((name, f"{name} ({len(grid)} variants)") for name, grid in PRESETS.items())],
        help_text=format_html_join(mark_safe("<br>"), "<strong>{}</strong>: {}",
                                   ((name, preset_shown(name)) for name in PRESETS)),
    )  # fmt: skip
    variants = forms.CharField(
        label="Variants", required=False, widget=forms.Textarea(attrs={"rows": 4, "cols": 80}),
        help_text="Or one variant per line, as setting=value pairs (chunk_strategy=fixed chunk_size=128 around=0) or "
        "a JSON object. Settings: " + ", ".join(MEASURED) + ". What a variant leaves out is the collection's.",
    )  # fmt: skip
    floor = forms.FloatField(required=False, min_value=0, max_value=1,
                             help_text="Search every design with this floor (empty: unfloored).")  # fmt: skip
    field_order = ["collection", "preset", "variants", "floor", "reader", "top_n"]

    def clean_variants(self) -> list[dict[str, Any]]:
        try:
            return variants_from_text(self.cleaned_data.get("variants") or "")
        except DomainError as exc:
            raise ValidationError(str(exc)) from exc
