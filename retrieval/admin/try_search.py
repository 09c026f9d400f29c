"""Admin: "Try a search" on one collection — the real pipeline, its results and its trace as a table.

Each result shows what an agent reads (its badge, its score) and why it ranked there: the matched paragraph
marked in its text, and its keyword, vector and fused ranks. An empty answer says why, how close the best
candidate came and the floor it missed.

The search runs as the API's would for a key of the collection's tenant that may read this one
collection, for a registered reader of that tenant when one is chosen (a per-reader collection needs
one, as in the API). It is audited like an API search (a SearchEvent without key or agent), so the
trace can be opened again. An editor keeps the question as a golden question from here: "this answers it" on a
result (its paragraph and a marker from its text), "nothing here should answer" on the answer (a control).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse

from accounts.models import Reader, Role
from collections_app.models import Collection
from collections_app.services.collections import MAX_AROUND, MAX_TOP_N
from doors.admin.base import ToolPage, object_for_tool
from doors.admin.display import marked_text, stage_rows
from doors.admin.roles import may
from infra.errors import DomainError
from retrieval.selectors.gaps import gap_question
from retrieval.selectors.search import (
    EmbeddingWidthMismatch,
    InvalidFilters,
    SearchAnswer,
    SearchScope,
    collection_scope,
    search,
)
from retrieval.services.search_events import search_event_record_staff


class TrySearchForm(forms.Form):
    q = forms.CharField(label="Question", max_length=4000, widget=forms.TextInput(attrs={"size": 80}))
    top_n = forms.IntegerField(label="Results", min_value=1, max_value=MAX_TOP_N, required=False)
    around = forms.IntegerField(
        label="Around", min_value=0, max_value=MAX_AROUND, required=False, help_text="Neighbours stitched on each side."
    )
    reader = forms.ModelChoiceField(
        queryset=Reader.objects.none(),
        required=False,
        help_text="Search as this registered reader: paragraphs are filtered by the labels the server gives it.",
    )

    def __init__(self, *args: Any, collection: Collection, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.collection = collection
        self.fields["reader"].queryset = Reader.objects.for_tenant(collection.tenant_id)  # type: ignore[attr-defined]
        self.fields["reader"].required = collection.per_reader

    def scope(self) -> SearchScope:
        return collection_scope(collection=self.collection, reader=self.cleaned_data.get("reader"))


class TrySearchAdminMixin(admin.ModelAdmin):
    """Mixed into SearchEventAdmin (a search made here is one of its events): try/<collection>/, for anybody who
    may read the collection. The collection is found through the collection's own admin, so its tenant scoping and
    rights apply as on its change page; the collection page links here by URL name (collections_app imports no
    retrieval)."""

    tool_pages: tuple[ToolPage, ...] = (ToolPage("try/<path:object_id>/", "try_search_view", "try_search"),)

    def try_search_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        collection = object_for_tool(self.admin_site.get_model_admin(Collection), request, object_id, change=False)
        # The page's own form posts its question (in the body: a long one, in Cyrillic or Hebrew above all, would
        # overflow the web server's request line as a query string); a link (the gaps page's) still asks by ?q=.
        asked: Mapping[str, Any] | None = (
            request.POST if request.method == "POST" else (request.GET if "q" in request.GET else None)
        )
        if asked is None and request.GET.get("gap") and may(request, collection.tenant_id, Role.ADMIN):
            # A gap's link names a long question by its digest (the gaps page, for the tenant's admins only).
            question = gap_question(collection=collection, key=request.GET["gap"])
            asked = {"q": question, "reader": request.GET.get("reader", "")} if question else None
        form = TrySearchForm(asked, collection=collection)
        answer: dict[str, Any] | None = None
        if form.is_bound and form.is_valid():
            scope = form.scope()
            try:
                found = search(
                    scope=scope,
                    query=form.cleaned_data["q"],
                    top_n=form.cleaned_data.get("top_n"),
                    around=form.cleaned_data.get("around"),
                )
            except (DomainError, EmbeddingWidthMismatch, InvalidFilters) as exc:
                form.add_error(None, str(exc))
            else:
                event = search_event_record_staff(scope=scope, answer=found, query=form.cleaned_data["q"])
                ranks = {hit.chunk_id: hit.ranks for hit in found.hits}
                answer = {
                    "results": [_result(r, ranks.get(str(r.get("chunk_id")), {})) for r in found.results],
                    "empty": None if found.results else _why_empty(found),
                    "refused": found.refused,
                    "judged": judge_in_words(found),
                    "floor": found.floor,
                    "around": found.around,
                    "stages": stage_rows(s.to_json() for s in found.stages),
                    "latency_ms": round(found.latency_ms),
                    "event_url": reverse(f"{self.admin_site.name}:retrieval_searchevent_change", args=[event.pk]),
                }
        context = {
            **self.admin_site.each_context(request),
            "back_url": _back_url(request, form) if answer is not None else "",
            "title": f"Try a search of {collection.name}",
            "opts": Collection._meta,  # breadcrumbs through the collection it searches
            "original": collection,
            "form": form,
            "answer": answer,
            # "this answers it" / "nothing here should answer": posted to the golden questions admin, editors and
            # admins only.
            "golden_url": reverse(f"{self.admin_site.name}:retrieval_goldenquestion_from_search")
            if answer is not None and may(request, collection.tenant_id, Role.EDITOR)
            else "",
        }
        return TemplateResponse(request, "admin/retrieval/searchevent/try_search.html", context)


# The longest address a page links back to: gunicorn reads a request line of at most 4,094 bytes.
BACK_URL_BYTES = 3500


def _back_url(request: HttpRequest, form: TrySearchForm) -> str:
    """Where "this answers it" returns: this search asked again by its address (?q=...), so its answer shows
    again; a question too long for an address (the form posted it) returns to the empty form instead."""
    asked = {name: form.data[name] for name in ("q", "top_n", "around", "reader") if form.data.get(name)}
    url = f"{request.path}?{urlencode(asked)}"
    return url if len(url) <= BACK_URL_BYTES else request.path


# Why an answer is empty, by SearchAnswer.reason, in an editor's words.
EMPTY_REASONS = {
    "no_collection": "There is no collection to search.",
    "no_readable_paragraph": "No paragraph this search may read matched: the collection is empty, or the reader "
    "or a filter leaves nothing.",
    "below_floor": "Candidates were found, but none scored at or above the floor.",
    "judge_refused": "The judge said nothing here answers: the results were withheld.",
}


def judge_in_words(found: SearchAnswer) -> str:
    """What the judge did, for the answer's heading: `refused` in words (the API's null, false, true), the null
    told apart by its judge stage (no judge, no endpoint, nothing to judge, the judge failed)."""
    if found.refused is True:
        return "refused by the judge: the results were withheld"
    if found.refused is False:
        return "approved by the judge"
    stage = next((s for s in found.stages if s.name == "judge"), None)
    reason = stage.reason if stage is not None else ""
    if stage is not None and stage.status == "failed":
        return "the judge failed: this search could not refuse"
    if "no KB_LLM_URL" in reason:
        return "a judge, but no chat model configured: this search could not refuse"
    if reason.startswith("no results to judge"):
        return "nothing to judge"
    return "no judge configured"


def _why_empty(found: SearchAnswer) -> dict[str, Any]:
    """The reason, and from the trace's floor stage how close the best candidate came to the floor it missed."""
    floor_counts = next((s.counts for s in found.stages if s.name == "floor"), {})
    best, floor = floor_counts.get("best_score"), floor_counts.get("floor", found.floor)
    margin = floor_counts.get("margin")
    if margin is None and isinstance(best, int | float) and isinstance(floor, int | float):
        margin = best - floor
    reason = found.reason or ""
    return {"reason": reason, "explained": EMPTY_REASONS.get(reason, reason), "best_score": best, "floor": floor,
            "margin": margin}  # fmt: skip


def _result(result: dict[str, Any], ranks: dict[str, int]) -> dict[str, Any]:
    document = result.get("document") or {}
    matches = result.get("matches") or []
    return {
        "chunk_id": result.get("chunk_id") or "",
        # The paragraph it cites highlighted, the others that matched marked lightly (doors.admin.display).
        "text": marked_text(str(result.get("text", "")), matches, best=str(result.get("chunk_id") or "")),
        "matched": len(matches),
        "badge": result.get("badge", ""),
        "score": result.get("score"),
        "ranks": {list_name: ranks.get(list_name) for list_name in ("fused", "keyword", "vector")},
        "section": " › ".join(result.get("section") or []),
        "page": result.get("page"),
        "passages": result.get("passages", 1),
        "filename": document.get("filename", ""),
        "document_url": reverse("admin:collections_app_document_change", args=[document["id"]])
        if document.get("id")
        else "",
    }
