"""Admin: measures, their result page (variants x metrics with the best per column marked, the found-rank and
score charts drawn as SVG on the server, their variants numbered and listed in full in a legend) and "Apply this
variant", which asks first on a page saying what will change. Editors and admins of the tenant only."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe

from accounts.models import Role
from collections_app.services.collections import UpdateEffects
from doors.admin.base import ToolPage
from doors.admin.display import status_badge
from doors.admin.roles import may, roles_of
from infra.errors import DomainError
from retrieval.admin.editors_only import EditorsOnly
from retrieval.admin.evaluations import UNSET_SHOWN
from retrieval.models import Measure
from retrieval.services.measure import measure_apply, measure_apply_effects, measure_cancel, windows_embedded
from retrieval.services.measure._charts import found_ranks_svg, scores_svg, variant_label

COLUMNS = (("nDCG@10", "ndcg_at_10"), ("hit@5", "hit_at_5"), ("hit@1", "hit_at_1"), ("MRR", "mrr"),
           ("found", "found"), ("controls answered", "controls_answered"))  # fmt: skip
# Lower is better for these; higher for the rest.
LOWER_BETTER = {"controls_answered"}
# Unfloored, every search hands back its top results, so every control "answers": the count says nothing of a
# variant, and no value of it is better.
FLOOR_ONLY = {"controls_answered"}


def variants_table(variants: list[dict[str, Any]], *, floored: bool = True) -> list[dict[str, Any]]:
    """One row per variant, each cell with its value and whether it is the best of its column. A star goes only
    to a value that is better than another variant's: none where every variant ties, none in a column that means
    nothing for this run (controls answered, unfloored), and the lowest where lower is better."""
    best: dict[str, Any] = {}
    for _, key in COLUMNS:
        values = [v["metrics"].get(key) for v in variants if v["metrics"].get(key) is not None]
        if len(set(values)) < 2 or (key in FLOOR_ONLY and not floored):
            continue  # a tie (or one value) has no better one
        best[key] = min(values) if key in LOWER_BETTER else max(values)
    rows = []
    for index, variant in enumerate(variants):
        cells = []
        for _, key in COLUMNS:
            value = variant["metrics"].get(key)
            shown = "—" if value is None else (f"{value:.3f}" if isinstance(value, float) else str(value))
            cells.append({"value": shown, "best": key in best and value == best[key]})
        counted = f"{variant.get('paragraphs')} paragraphs{windows_shown(variant, index)}"
        rows.append({"number": index + 1, "label": f"{variant_label(variant, index)} ({counted})",
                     "settings": variant_settings(variant), "cells": cells,
                     "floor": (variant.get("floor") or {}).get("suggested")})  # fmt: skip
    return rows


def windows_shown(variant: dict[str, Any], index: int) -> str:
    """ ", 12 windows embedded, 340 reused", or the variant whose paragraphs it was asked on; "" for a measure run
    before windows were counted."""
    windows = variant.get("windows")
    if not windows:
        return ""
    if windows["built_for"] != index:
        return f", the paragraphs of variant {windows['built_for'] + 1}"
    return f", {windows['embedded']} windows embedded, {windows['reused']} reused"


def variant_settings(variant: dict[str, Any]) -> str:
    """A variant's settings in full, for the legend: the ones it changes, or "as the collection is"."""
    settings = variant["settings"]
    changed = variant.get("changed") or []
    return ", ".join(f"{name} = {setting_shown(name, settings[name])}" for name in changed) or "as the collection is"


def setting_shown(name: str, value: Any) -> str:
    """A setting's value in plain words: never a raw None, true or false; an empty one says what it means, in the
    words the evaluation's page uses ("not set: 1")."""
    if value is None or value == "":
        return UNSET_SHOWN.get(name, "not set")
    if isinstance(value, bool):
        return "on" if value else "off"
    if name == "min_score" and value == 0:
        return "0 (no floor)"
    return str(value)


@admin.register(Measure)
class MeasureAdmin(EditorsOnly):
    manage_role = None  # started from the API or a collection; nobody edits one by hand
    list_display = ["created_at", "collection", "status_shown", "progress_shown", "best_shown"]
    list_filter = ["collection", "status"]
    list_select_related = ["collection"]
    fields = ["collection", "status_shown", "progress_shown", "error", "requested_by", "created_at", "finished_at"]
    readonly_fields = ["collection", "status_shown", "progress_shown", "error", "requested_by", "created_at",
                       "finished_at"]  # fmt: skip

    def get_queryset(self, request: HttpRequest) -> Any:
        queryset = super().get_queryset(request)
        # The list shows no per-question rows: not read for it.
        return queryset.defer("variants") if getattr(request, "_kb_measure_list", False) else queryset

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        request._kb_measure_list = True  # type: ignore[attr-defined]
        return super().changelist_view(request, extra_context)

    tool_pages: tuple[ToolPage, ...] = (
        ToolPage("<path:object_id>/apply/", "apply_view", "apply"),
        ToolPage("<path:object_id>/cancel/", "cancel_view", "cancel"),
    )

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        measure = self.get_object(request, unquote(object_id))
        context = dict(extra_context or {})
        if measure is not None:
            context["kb_refresh"] = measure.status in ("queued", "running")
            if context["kb_refresh"] and may(request, measure.tenant_id, Role.EDITOR):
                context["kb_cancel_url"] = reverse("admin:retrieval_measure_cancel", args=[measure.pk])
            if measure.variants:
                floor = measure.floor or {}
                floored = (measure.request or {}).get("floor") is not None
                context.update(
                    kb_columns=[name for name, _ in COLUMNS],
                    kb_variants=variants_table(measure.variants, floored=floored),
                    kb_unfloored=not floored,
                    kb_floor_note=floor.get("note", ""),
                    kb_windows=windows_embedded(measure.variants),
                    kb_rank_chart=mark_safe(found_ranks_svg(measure.variants)),
                    kb_score_chart=mark_safe(scores_svg(measure.variants)),
                )
                if measure.status == "done" and may(request, measure.tenant_id, Role.EDITOR):
                    context["kb_apply_url"] = reverse("admin:retrieval_measure_apply", args=[measure.pk])
        return super().change_view(request, object_id, form_url, context)

    def apply_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """Asks first (a page saying each setting before → after and the documents marked stale), then saves the
        chosen variant on the collection (POST with `confirmed`) and offers the re-index on the collection's page.
        Only ever a POST: nobody reads this page on its own (the authorization matrix's rule for Measure)."""
        measure = self.get_object(request, unquote(object_id))
        if measure is None:
            raise Http404("no such measure")
        if request.method != "POST" or not may(request, measure.tenant_id, Role.EDITOR):
            raise PermissionDenied
        back = reverse("admin:retrieval_measure_change", args=[measure.pk])
        asked = request.POST
        with_floor = asked.get("floor") == "1" or request.GET.get("floor") == "1"
        try:
            variant = int(asked.get("variant", ""))
        except ValueError:
            self.message_user(request, "Not applied: choose a variant with its “Apply this variant” button.",
                              messages.ERROR)  # fmt: skip
            return HttpResponseRedirect(back)
        try:
            # The result page's buttons post here: first the page that asks (as the admin's "delete selected"
            # asks), whose Apply posts again with `confirmed`.
            if asked.get("confirmed") != "yes":
                effects = measure_apply_effects(measure=measure, variant=variant, with_floor=with_floor)
                return self._confirm(request, measure, variant, with_floor, effects)
            collection = measure_apply(measure=measure, variant=variant, with_floor=with_floor,
                                       role=_role(request, measure))  # fmt: skip
        except DomainError as exc:  # an Invalid is a ValueError too: caught here, to say what it says
            self.message_user(request, f"Not applied: {exc}", messages.ERROR)
            return HttpResponseRedirect(back)
        stale = collection.documents.filter(stale=True).count()
        self.message_user(
            request,
            f"Variant {variant + 1} saved on {collection.name}."
            + (f" {stale} document(s) are stale: re-index to rebuild them." if stale else ""),
            messages.SUCCESS,
        )
        target = "collections_app_collection_reindex" if stale else "collections_app_collection_change"
        return HttpResponseRedirect(reverse(f"admin:{target}", args=[collection.pk]))

    def _confirm(
        self, request: HttpRequest, measure: Measure, variant: int, with_floor: bool, effects: UpdateEffects
    ) -> TemplateResponse:
        chosen = measure.variants[variant]
        context = {
            **self.admin_site.each_context(request),
            "title": f"Apply variant {variant + 1} to {measure.collection.name}?",
            "opts": self.opts,
            "original": measure,
            "variant": variant,
            "number": variant + 1,
            "settings": variant_settings(chosen),
            "with_floor": with_floor,
            "changes": [(name, setting_shown(name, a), setting_shown(name, b)) for name, a, b in effects.changes],
            "marked_stale": effects.marked_stale,
            "already_stale": measure.collection.documents.filter(stale=True).count(),
            "back": reverse("admin:retrieval_measure_change", args=[measure.pk]),
            "action": reverse("admin:retrieval_measure_apply", args=[measure.pk]),
        }
        return TemplateResponse(request, "admin/retrieval/measure/apply.html", context)

    def cancel_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """Ask a queued or running measure to stop (POST): its scratch store goes with it."""
        measure = self.get_object(request, unquote(object_id))
        if measure is None:
            raise Http404("no such measure")
        if request.method != "POST" or not may(request, measure.tenant_id, Role.EDITOR):
            raise PermissionDenied
        measure = measure_cancel(measure=measure)
        if measure.status == "cancelled":
            self.message_user(request, "Measure cancelled.", messages.SUCCESS)
        elif measure.cancel_requested and measure.status == "running":
            self.message_user(request, "Cancelling: the measure stops after the document or question it is on.")
        else:
            self.message_user(request, f"The measure is {measure.status}: nothing to cancel.", messages.WARNING)
        return HttpResponseRedirect(reverse("admin:retrieval_measure_change", args=[measure.pk]))

    @admin.display(description="status", ordering="status")
    def status_shown(self, obj: Measure) -> SafeString:
        return status_badge(obj.status)

    @admin.display(description="progress")
    def progress_shown(self, obj: Measure) -> str:
        p = obj.progress or {}
        return (f"variant {p.get('variant', 0)} of {p.get('variants', 0)}, "
                f"questions {p.get('questions_done', 0)} of {p.get('questions_total', 0)}")  # fmt: skip

    @admin.display(description="best nDCG@10")
    def best_shown(self, obj: Measure) -> str:
        best = (obj.floor or {}).get("best_variant")
        if best is None:
            return "—"
        return f"variant {best + 1}"


def _role(request: HttpRequest, measure: Measure) -> Role | None:
    if request.user.is_superuser:
        return None
    role = roles_of(request).get(measure.tenant_id)
    return Role(role) if role else None
