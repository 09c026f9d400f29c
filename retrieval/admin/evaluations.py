"""Admin: evaluations, read by the tenant's editors and admins: what each golden question found, and the scores."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from doors.admin.display import shown_value, status_badge
from retrieval.admin.editors_only import EditorsOnly
from retrieval.models import Evaluation

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
        items = sorted((name, setting_shown(name, value)) for name, value in (obj.settings or {}).items())
        body = format_html_join("", "<tr><th>{}</th><td>{}</td></tr>", items)
        return format_html('<table id="evaluation-settings">{}</table>', body)

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


# What an empty setting meant when the evaluation ran, in words (the collection's help texts say the same).
UNSET_SHOWN = {
    "reader": "none: no reader chosen, every paragraph an agent of the collection may read",
    "parent_size": "not set: 4 × the size",
    "hybrid_weight": "not set: 0.5",
    "score_threshold": "not set: the default",
    "min_score": "not set: the embedding model's calibrated floor",
    "floor": "none",
    "around": "not set: 1",
}
UNIT_SHOWN = {"chars": "characters", "tokens": "tokens"}


def setting_shown(name: str, value: Any) -> str:
    """One setting an evaluation searched with, as a person reads it: never a bare None."""
    if value is None:
        return UNSET_SHOWN.get(name, "not set")
    if name == "chunk_size_unit":
        return UNIT_SHOWN.get(str(value), str(value))
    return shown_value(value)


def _found(row: dict[str, Any]) -> str:
    if row["control"]:
        return "answered (should not be)" if row["answered"] else f"refused ({row['reason'] or 'nothing returned'})"
    if row["found"]:
        return "yes"
    return "no" + (
        f" — {len(row['gone'])} judged paragraph(s) or document(s) deleted or in the trash" if row["gone"] else ""
    )
