"""Admin: golden questions per collection (list, add, edit, delete, import, export), "Evaluate" and "Measure".

Evaluations have their page in evaluations.py; the forms are in golden_forms.py.

Editors and admins of the tenant only, reading included (the API's rule). The pages call retrieval.services.golden's
services; forms check through the same `golden_question_clean` the API uses, so the messages are the same.
The list filtered by one collection (?collection__id__exact=) is that collection's golden questions page; its
Import, Export and Evaluate buttons carry the collection along.
"""

from __future__ import annotations

import uuid
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect, QueryDict
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.text import slugify

from accounts.models import Reader, Role
from collections_app.models import Collection
from doors.admin.base import ToolPage
from doors.admin.roles import may, tenants_where
from infra.errors import DomainError
from retrieval.admin.editors_only import EditorsOnly
from retrieval.admin.golden_forms import (
    EvaluateForm,
    ExportForm,
    GoldenQuestionForm,
    ImportForm,
    MeasureForm,
    tenant_labels,
)
from retrieval.models import GoldenQuestion
from retrieval.selectors.gaps import gap_question
from retrieval.services.golden import (
    DEFAULT_TOP_N,
    MAX_IMPORT_BYTES,
    GoldenQuestionTaken,
    InvalidGolden,
    evaluation_start,
    golden_export_beir,
    golden_export_jsonl,
    golden_import_beir,
    golden_import_jsonl,
    golden_question_create,
    golden_question_from_search,
    golden_question_update,
)
from retrieval.services.measure import measure_start

COLLECTION_FILTER = "collection__id__exact"


class CollectionFilter(admin.RelatedOnlyFieldListFilter):
    """The list's "By collection" filter: like the dropdowns, same-named collections of different tenants say
    their tenant to a person who sees several tenants."""

    def field_choices(self, field: Any, request: HttpRequest, model_admin: Any) -> Any:
        choices = super().field_choices(field, request, model_admin)
        if not _several_tenants(request):
            return choices
        named = [str(label) for _, label in choices]
        shared = {name for name in named if named.count(name) > 1}
        if not shared:
            return choices
        twins = Collection.objects.filter(pk__in=[pk for pk, label in choices if str(label) in shared])
        tenants = {str(pk): tenant for pk, tenant in twins.values_list("pk", "tenant__name")}
        return [(pk, f"{label} (tenant {tenants[str(pk)]})" if str(pk) in tenants else label) for pk, label in choices]


@admin.register(GoldenQuestion)
class GoldenQuestionAdmin(EditorsOnly):
    form = GoldenQuestionForm
    list_display = ["question_shown", "collection", "answer_shown", "note", "updated_at"]
    list_filter = [("collection", CollectionFilter)]
    list_select_related = ["collection"]
    search_fields = ["question"]

    def get_readonly_fields(self, request: HttpRequest, obj: GoldenQuestion | None = None) -> list[str]:
        return ["collection"] if obj is not None else []

    def get_changeform_initial_data(self, request: HttpRequest) -> dict[str, Any]:
        """ "Add" from a collection's golden questions (the list filtered by it) starts with that collection chosen:
        the list's filter travels in `_changelist_filters` (the admin's preserved filters)."""
        initial = super().get_changeform_initial_data(request)
        gap = request.GET.get("gap")
        chosen_id = _uuid_or_none(request.GET.get("collection"))
        if gap and chosen_id is not None:
            # A gap's link names a long question by its digest (the gaps page, for the tenant's admins only).
            collection = self.editable_collections(request).filter(pk=chosen_id).first()
            if collection is not None and may(request, collection.tenant_id, Role.ADMIN):
                initial["question"] = gap_question(collection=collection, key=gap) or ""
        if not initial.get("collection"):
            chosen = _uuid_or_none(QueryDict(request.GET.get("_changelist_filters", "")).get(COLLECTION_FILTER))
            if chosen is not None and self.editable_collections(request).filter(pk=chosen).exists():
                initial["collection"] = str(chosen)
        return initial

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        field = super().formfield_for_foreignkey(db_field, request, **kwargs)
        if field is not None and db_field.name == "collection":
            tenant_labels(field, several_tenants=_several_tenants(request))
        return field

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
        several = _several_tenants(request)
        tenant_labels(form.fields["collection"], several_tenants=several)  # type: ignore[arg-type]
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
        tenant_labels(form.fields["reader"], several_tenants=_several_tenants(request))
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
        tenant_labels(form.fields["reader"], several_tenants=_several_tenants(request))
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
                self.message_user(request, f"Measuring {collection.name}: each design that cuts differently is "
                                  "built in a scratch store, the others are asked on the collection as it is; this "
                                  "page follows it.",
                                  messages.SUCCESS)  # fmt: skip
                return HttpResponseRedirect(reverse("admin:retrieval_measure_change", args=[measure.pk]))
        return self._page(request, "Measure designs of a collection", form,
                          "Builds each design that cuts or embeds differently from the collection's stored parser "
                          "output in a scratch store that no search sees (a design that only reads differently — "
                          "window, weight, floor — is asked on the collection as it is), asks every golden "
                          "question of it (unfloored unless you give a floor) and compares them. Nothing of the "
                          "collection changes until you apply a variant.",
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


def _several_tenants(request: HttpRequest) -> bool:
    """Whether the person's choices may come from more than one tenant: then same-named ones say their tenant."""
    tenants = tenants_where(request, Role.EDITOR)
    return tenants is None or len(tenants) > 1


def _uuid_or_none(value: Any) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def _read(upload: Any) -> bytes:
    return upload.read(MAX_IMPORT_BYTES + 1)  # one byte past the limit: the service says it is too large
