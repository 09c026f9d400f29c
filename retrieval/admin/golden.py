"""Admin: golden questions per collection (list, add, edit, delete, import, export), "Evaluate", and evaluations.

Editors and admins of the tenant only, reading included (the API's rule). The pages call retrieval.golden's
services; forms check through the same `golden_question_clean` the API uses, so the messages are the same.
The list filtered by one collection (?collection__id__exact=) is that collection's golden questions page; its
Import, Export and Evaluate buttons carry the collection along.
"""

from __future__ import annotations

import uuid
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Model, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import slugify

from collections_app.exceptions import DomainError
from collections_app.models import Collection, Role
from collections_app.services.collections import MAX_TOP_N
from doors.admin.base import TenantScopedAdmin, ToolPage
from doors.admin.display import status_badge
from doors.admin.roles import may, tenants_where
from retrieval.golden import (
    DEFAULT_TOP_N,
    MAX_IMPORT_BYTES,
    GoldenQuestionTaken,
    InvalidGolden,
    document_names,
    evaluation_start,
    golden_export_beir,
    golden_export_jsonl,
    golden_import_beir,
    golden_import_jsonl,
    golden_question_clean,
    golden_question_create,
    golden_question_from_search,
    golden_question_update,
)
from retrieval.measure import MEASURED, PRESETS, measure_start, preset_shown, variants_from_text
from retrieval.models import Evaluation, GoldenQuestion, Reader

COLLECTION_FILTER = "collection__id__exact"


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


class EditorsOnly(TenantScopedAdmin):
    """Read and written by the tenant's editors and admins only."""

    def has_module_permission(self, request: HttpRequest) -> bool:
        return super().has_module_permission(request) and may(request, None, Role.EDITOR)

    def has_view_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        if request.user.is_superuser:
            return super().has_view_permission(request, obj)
        return may(request, None if obj is None else self.tenant_id_of(obj), Role.EDITOR)

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        queryset = super().get_queryset(request)
        tenants = tenants_where(request, Role.EDITOR)
        return queryset if tenants is None else queryset.filter(tenant__in=tenants)

    def get_object(self, request: HttpRequest, object_id: str, from_field: str | None = None) -> Any:
        # A viewer of the row's tenant is told "forbidden" (403), as on every kbsite page; only another tenant's
        # row does not exist for it. The list itself shows the tenants where the person is an editor.
        tenants = tenants_where(request, Role.VIEWER)
        rows = self.model._default_manager.all()
        rows = rows if tenants is None else rows.filter(tenant__in=tenants)
        try:
            return rows.get(pk=object_id)
        except (self.model.DoesNotExist, ValidationError, ValueError):
            return None

    def editable_collections(self, request: HttpRequest) -> QuerySet[Collection]:
        tenants = tenants_where(request, Role.EDITOR)
        collections = Collection.objects.order_by("name")
        return collections if tenants is None else collections.filter(tenant__in=tenants)


@admin.register(GoldenQuestion)
class GoldenQuestionAdmin(EditorsOnly):
    form = GoldenQuestionForm
    list_display = ["question_shown", "collection", "answer_shown", "note", "updated_at"]
    list_filter = ["collection"]
    list_select_related = ["collection"]
    search_fields = ["question"]

    def get_readonly_fields(self, request: HttpRequest, obj: GoldenQuestion | None = None) -> list[str]:
        return ["collection"] if obj is not None else []

    @admin.display(description="question", ordering="question")
    def question_shown(self, obj: GoldenQuestion) -> str:
        return str(obj)

    @admin.display(description="answered by")
    def answer_shown(self, obj: GoldenQuestion) -> str:
        if obj.control:
            return "control: nothing should answer"
        parts = [(len(obj.markers), "marker"), (len(obj.paragraphs), "paragraph"), (len(obj.documents), "document")]
        return ", ".join(f"{n} {word}{'s' if n != 1 else ''}" for n, word in parts if n)

    def save_model(self, request: HttpRequest, obj: GoldenQuestion, form: Any, change: bool) -> None:
        # The service writes; the admin's instance takes its id so the admin's redirect and log follow it.
        if change:
            saved = golden_question_update(golden=GoldenQuestion.objects.get(pk=obj.pk), **form.golden_values)
        else:
            saved = golden_question_create(collection=form.cleaned_data["collection"], **form.golden_values)
        obj.pk, obj.tenant_id, obj._state.adding = saved.pk, saved.tenant_id, False

    # --- tool pages: import, export, evaluate -----------------------------------------------------------

    tool_pages: tuple[ToolPage, ...] = (
        ToolPage("import/", "import_view", "import"),
        ToolPage("export/", "export_view", "export"),
        ToolPage("evaluate/", "evaluate_view", "evaluate"),
        ToolPage("measure/", "measure_view", "measure"),
        ToolPage("from-search/", "from_search_view", "from_search"),
    )

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        chosen = request.GET.get(COLLECTION_FILTER, "")
        query = f"?collection={chosen}" if chosen else ""
        tools = [(label, reverse(f"admin:retrieval_goldenquestion_{name}") + query)
                 for label, name in (("Import", "import"), ("Export", "export"), ("Evaluate", "evaluate"),
                                     ("Measure", "measure"))]  # fmt: skip
        return super().changelist_view(request, {"kb_tools": tools, **(extra_context or {})})

    def _tool_form(self, request: HttpRequest, form_class: type[forms.Form], data: Any = None, **extra: Any) -> Any:
        if not self.has_add_permission(request):
            raise PermissionDenied
        initial = {"collection": request.GET.get("collection") or None}
        form = form_class(data, initial=initial, **extra)
        form.fields["collection"].queryset = self.editable_collections(request)  # type: ignore[attr-defined]
        return form

    def _page(self, request: HttpRequest, title: str, form: forms.Form, intro: str) -> TemplateResponse:
        context = {**self.admin_site.each_context(request), "title": title, "opts": self.opts, "form": form,
                   "intro": intro}  # fmt: skip
        return TemplateResponse(request, "admin/retrieval/goldenquestion/tool_page.html", context)

    def _to_list(self, collection: Collection) -> HttpResponseRedirect:
        url = reverse("admin:retrieval_goldenquestion_changelist")
        return HttpResponseRedirect(f"{url}?{COLLECTION_FILTER}={collection.pk}")

    def import_view(self, request: HttpRequest) -> HttpResponse:
        form = self._tool_form(request, ImportForm, request.POST or None, files=request.FILES or None)
        if request.method == "POST" and form.is_valid():
            collection, data = form.cleaned_data["collection"], form.cleaned_data
            try:
                if data["queries"] or data["qrels"]:
                    if not (data["queries"] and data["qrels"]):
                        raise InvalidGolden("BEIR needs both files: queries.jsonl and the qrels TSV", field="qrels")
                    queries, qrels = _read(data["queries"]), _read(data["qrels"])
                    report = golden_import_beir(
                        collection=collection, queries=queries, qrels=qrels, skip_unknown=data["skip_unknown"]
                    )
                elif data["jsonl"]:
                    report = golden_import_jsonl(collection=collection, content=_read(data["jsonl"]))
                else:
                    raise InvalidGolden("choose a JSON lines file, or BEIR's queries.jsonl and qrels", field="jsonl")
            except DomainError as exc:
                form.add_error(exc.field if exc.field in form.fields else None, str(exc))
            else:
                skipped = f", {len(report.skipped)} skipped ({'; '.join(report.skipped[:3])})" if report.skipped else ""
                self.message_user(request, f"{collection.name}: {report.created} golden question(s) added, "
                                  f"{report.updated} updated{skipped}.", messages.SUCCESS)  # fmt: skip
                return self._to_list(collection)
        return self._page(request, "Import golden questions", form,
                          "JSON lines as Export writes them, or BEIR: queries.jsonl with its qrels TSV. A qrels "
                          "corpus-id names a document by file name, file name without extension, source or id. "
                          "All or nothing: a problem is reported with its file and line.")  # fmt: skip

    def export_view(self, request: HttpRequest) -> HttpResponse:
        form = self._tool_form(request, ExportForm, request.GET if "kind" in request.GET else None)
        if form.is_bound and form.is_valid():
            collection = form.cleaned_data["collection"]
            name = slugify(collection.name) or "collection"
            if form.cleaned_data["kind"] == "beir":
                response = HttpResponse(golden_export_beir(collection=collection), content_type="application/zip")
                response["Content-Disposition"] = f'attachment; filename="golden-{name}-beir.zip"'
            else:
                response = HttpResponse(golden_export_jsonl(collection=collection), content_type="application/x-ndjson")
                response["Content-Disposition"] = f'attachment; filename="golden-{name}.jsonl"'
            return response
        return self._page(request, "Export golden questions", form,
                          "JSON lines keep every field; BEIR is a zip of queries.jsonl and qrels/test.tsv (markers, "
                          "paragraphs, controls and notes ride in each query's metadata).")  # fmt: skip

    def evaluate_view(self, request: HttpRequest) -> HttpResponse:
        form = self._tool_form(request, EvaluateForm, request.POST or None)
        tenants = tenants_where(request, Role.EDITOR)
        readers = Reader.objects.all() if tenants is None else Reader.objects.filter(tenant__in=tenants)
        form.fields["reader"].queryset = readers.order_by("name")
        if request.method == "POST" and form.is_valid():
            collection, reader = form.cleaned_data["collection"], form.cleaned_data["reader"]
            try:
                if reader is not None and reader.tenant_id != collection.tenant_id:
                    raise InvalidGolden("choose a reader of the collection's tenant", field="reader")
                evaluation = evaluation_start(
                    collection=collection, reader=reader, top_n=form.cleaned_data["top_n"] or DEFAULT_TOP_N,
                    requested_by=request.user.get_username(),
                )  # fmt: skip
            except DomainError as exc:
                form.add_error(exc.field if exc.field in form.fields else None, str(exc))
            else:
                self.message_user(request, f"Evaluating {collection.name}: its golden questions are searched in the "
                                  "background; this page follows it.", messages.SUCCESS)  # fmt: skip
                return HttpResponseRedirect(reverse("admin:retrieval_evaluation_change", args=[evaluation.pk]))
        return self._page(request, "Evaluate a collection", form,
                          "Runs every golden question of the collection through the search pipeline as it serves "
                          "agents (floor, around, hybrid weight, rerank and judge as configured) and records what "
                          "each found. Evaluation searches are not recorded as search events.")  # fmt: skip

    def measure_view(self, request: HttpRequest) -> HttpResponse:
        """Start a measure (the API's service) of a preset grid or named variants; lands on its result page."""
        form = self._tool_form(request, MeasureForm, request.POST or None)
        tenants = tenants_where(request, Role.EDITOR)
        readers = Reader.objects.all() if tenants is None else Reader.objects.filter(tenant__in=tenants)
        form.fields["reader"].queryset = readers.order_by("name")
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data
            collection, reader = data["collection"], data["reader"]
            try:
                if reader is not None and reader.tenant_id != collection.tenant_id:
                    raise InvalidGolden("choose a reader of the collection's tenant", field="reader")
                measure = measure_start(
                    collection=collection, preset=data["preset"] or None, variants=data["variants"] or None,
                    floor=data["floor"], reader=reader, top_n=data["top_n"] or DEFAULT_TOP_N,
                    requested_by=request.user.get_username(),
                )  # fmt: skip
            except DomainError as exc:
                form.add_error(exc.field if exc.field in form.fields else None, str(exc))
            else:
                self.message_user(request, f"Measuring {collection.name}: each design is built in a scratch "
                                  "store and asked its golden questions; this page follows it.",
                                  messages.SUCCESS)  # fmt: skip
                return HttpResponseRedirect(reverse("admin:retrieval_measure_change", args=[measure.pk]))
        return self._page(request, "Measure designs of a collection", form,
                          "Builds each design from the collection's stored parser output in a scratch store that "
                          "no search sees, asks every golden question of it (unfloored unless you give a floor) "
                          "and compares them. Nothing of the collection changes until you apply a variant.",
                          )  # fmt: skip

    def from_search_view(self, request: HttpRequest) -> HttpResponse:
        """The buttons of "Try a search" (POST): the question kept with the result's paragraph and a marker from
        its text ("this answers it"), or as a control ("nothing here should answer"). Back to the search after."""
        if not self.has_add_permission(request):
            raise PermissionDenied
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        chosen = _uuid_or_none(request.POST.get("collection"))
        collection = self.editable_collections(request).filter(pk=chosen).first() if chosen else None
        if collection is None:
            raise Http404("no such collection")
        question = request.POST.get("q", "")
        paragraph = request.POST.get("paragraph") if request.POST.get("kind") == "answer" else None
        try:
            golden = golden_question_from_search(collection=collection, question=question, paragraph_id=paragraph)
        except GoldenQuestionTaken:
            self.message_user(request, f"{collection.name} already holds this question as a golden question: "
                              "change it on its golden questions page.", messages.WARNING)  # fmt: skip
        except DomainError as exc:
            self.message_user(request, f"Not added: {exc}", messages.ERROR)
        else:
            what = ("as a control: nothing should answer it" if golden.control else
                    f"answered by that paragraph and the marker “{golden.markers[0]}”" if golden.markers else
                    "answered by that paragraph")  # fmt: skip
            link = reverse("admin:retrieval_goldenquestion_change", args=[golden.pk])
            self.message_user(request, format_html('Golden question added {} (<a href="{}">open it</a>).', what, link),
                              messages.SUCCESS)  # fmt: skip
        back = request.POST.get("next", "")
        if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}, require_https=False):
            back = self._to_list(collection).url
        return HttpResponseRedirect(back)


def _uuid_or_none(value: Any) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def _read(upload: Any) -> bytes:
    return upload.read(MAX_IMPORT_BYTES + 1)  # one byte past the limit: the service says it is too large


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


# Every field of an evaluation's page is read-only (nobody edits an evaluation).
EVALUATION_SHOWN = ["collection", "status_shown", "progress", "error", "requested_by", "created_at", "finished_at",
                    "metrics_shown", "settings_shown", "rows_shown"]  # fmt: skip


@admin.register(Evaluation)
class EvaluationAdmin(EditorsOnly):
    """Evaluations: written by "Evaluate" only, read here with a row per question."""

    manage_role = None  # nobody adds, changes or deletes one by hand
    list_display = ["created_at", "collection", "status_shown", "progress", "hit_at_1", "hit_at_5", "mrr", "ndcg",
                    "controls"]  # fmt: skip
    list_filter = ["collection", "status"]
    list_select_related = ["collection"]
    fields = ["collection", "status_shown", "progress", "error", "requested_by", "created_at", "finished_at",
              "metrics_shown", "settings_shown", "rows_shown"]  # fmt: skip
    readonly_fields = EVALUATION_SHOWN

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        queryset = super().get_queryset(request)
        # The list shows no per-question rows: not read for it (hundreds of questions per evaluation).
        return queryset.defer("rows") if getattr(request, "_kb_evaluation_list", False) else queryset

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        tools = [("Evaluate a collection", reverse("admin:retrieval_goldenquestion_evaluate"))]
        request._kb_evaluation_list = True  # type: ignore[attr-defined]
        return super().changelist_view(request, {"kb_tools": tools, **(extra_context or {})})

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        evaluation = self.get_object(request, object_id)
        refresh = evaluation is not None and evaluation.status in ("queued", "running")
        return super().change_view(request, object_id, form_url, {"kb_refresh": refresh, **(extra_context or {})})

    @admin.display(description="status", ordering="status")
    def status_shown(self, obj: Evaluation) -> SafeString:
        return status_badge(obj.status)

    @admin.display(description="questions done")
    def progress(self, obj: Evaluation) -> str:
        return f"{obj.questions_done} / {obj.questions_total}"

    def _metric(self, obj: Evaluation, name: str) -> str:
        value = (obj.metrics or {}).get(name)
        return "—" if value is None else f"{value:.3f}"

    @admin.display(description="hit@1")
    def hit_at_1(self, obj: Evaluation) -> str:
        return self._metric(obj, "hit_at_1")

    @admin.display(description="hit@5")
    def hit_at_5(self, obj: Evaluation) -> str:
        return self._metric(obj, "hit_at_5")

    @admin.display(description="MRR")
    def mrr(self, obj: Evaluation) -> str:
        return self._metric(obj, "mrr")

    @admin.display(description="nDCG@10")
    def ndcg(self, obj: Evaluation) -> str:
        return self._metric(obj, "ndcg_at_10")

    @admin.display(description="controls answered / refused")
    def controls(self, obj: Evaluation) -> str:
        metrics = obj.metrics or {}
        if not metrics:
            return "—"
        return f"{metrics.get('controls_answered', 0)} / {metrics.get('controls_refused', 0)}"

    @admin.display(description="metrics")
    def metrics_shown(self, obj: Evaluation) -> SafeString:
        metrics = obj.metrics or {}
        if not metrics:
            return format_html("{}", "— (not finished)")
        latency = metrics.get("latency_ms") or {}
        rows = [
            ("questions found", f"{metrics['found']} of {metrics['questions']}"),
            ("hit@1", self.hit_at_1(obj)), ("hit@5", self.hit_at_5(obj)), ("MRR", self.mrr(obj)),
            ("nDCG@10", self.ndcg(obj)),
            ("controls", f"{metrics['controls']}: {metrics['controls_answered']} answered, "
                         f"{metrics['controls_refused']} refused"),
            ("latency (ms)", f"p50 {latency.get('p50')}, p95 {latency.get('p95')}, max {latency.get('max')}"),
        ]  # fmt: skip
        body = format_html_join("", "<tr><th>{}</th><td>{}</td></tr>", rows)
        return format_html('<table class="kb-evaluation-metrics">{}</table>', body)

    @admin.display(description="searched with")
    def settings_shown(self, obj: Evaluation) -> SafeString:
        items = sorted((obj.settings or {}).items())
        return format_html("<table>{}</table>", format_html_join("", "<tr><th>{}</th><td>{}</td></tr>", items))

    @admin.display(description="questions")
    def rows_shown(self, obj: Evaluation) -> SafeString:
        if not obj.rows:
            return format_html("{}", "—")
        head = format_html(
            "<tr><th>{}</th><th>{}</th><th>{}</th><th>{}</th><th>{}</th><th>{}</th><th>{}</th></tr>",
            "question", "kind", "found", "rank", "nDCG@10", "top score", "ms",
        )  # fmt: skip
        body = format_html_join(
            "",
            '<tr class="{}"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>',
            (
                (
                    "kb-control" if row["control"] else ("kb-found" if row["found"] else "kb-missed"),
                    row["question"],
                    "control" if row["control"] else "answer",
                    _found(row),
                    row["rank"] if row["rank"] is not None else "—",
                    "—" if row["control"] else f"{row['ndcg']:.3f}",
                    "—" if row["top_score"] is None else f"{row['top_score']:.3f}",
                    row["latency_ms"],
                )
                for row in obj.rows
            ),
        )
        return format_html('<table id="evaluation-rows"><thead>{}</thead><tbody>{}</tbody></table>', head, body)


def _found(row: dict[str, Any]) -> str:
    if row["control"]:
        return "answered (should not be)" if row["answered"] else f"refused ({row['reason'] or 'nothing returned'})"
    if row["found"]:
        return "yes"
    return "no" + (f" — {len(row['gone'])} judged paragraph(s) no longer exist" if row["gone"] else "")
