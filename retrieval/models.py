"""The audit of searches, judges and the cost of model calls. A search event holds the question's text
only when KB_AUDIT_QUESTIONS is on; a model call never holds it."""

from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models.functions import MD5

from accounts.models import Agent, ApiKey, Reader, TenantOwned
from collections_app.models import Collection


class SearchEvent(TenantOwned):
    api_key = models.ForeignKey(ApiKey, null=True, on_delete=models.SET_NULL, related_name="search_events")
    agent = models.ForeignKey(
        Agent,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="search_events",
    )
    on_behalf_of = models.ForeignKey(
        Agent,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="searches_on_behalf",
    )
    reader = models.ForeignKey(Reader, null=True, blank=True, on_delete=models.SET_NULL, related_name="searches")
    collections = models.JSONField(default=list)
    # Three-valued: null = no judge configured, false = approved, true = nothing answers.
    refused = models.BooleanField(null=True)
    floor = models.FloatField(null=True)
    around = models.PositiveSmallIntegerField(null=True)
    stages = models.JSONField(default=list)
    results = models.PositiveIntegerField(default=0)
    latency_ms = models.FloatField(default=0)
    # Why results is empty (no_collection, no_readable_paragraph, below_floor, judge_refused); blank when not.
    reason = models.CharField(max_length=40, blank=True, default="")
    threshold = models.FloatField(null=True)
    question_language = models.CharField(max_length=10, blank=True, default="")
    # Kept only when KB_AUDIT_QUESTIONS is on (default off); shown to the tenant's admins only.
    question = models.TextField(blank=True, default="")
    # What a judge's refusal held back (the results as they would have been returned), for the tenant's admins.
    withheld = models.JSONField(default=list, blank=True)
    # The ids of the documents the answer returned, each once, in the order of its results (ids only: what a
    # document is called is read when the event is shown, and a document deleted since shows as gone).
    documents = models.JSONField(default=list, blank=True)
    # The ids of every paragraph whose text the answer returned (matched or stitched in as a neighbour), for the
    # citation check's `surfaced`; null: recorded before it was kept. A judge's refusal returns none.
    paragraphs = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"search {self.created_at:%Y-%m-%d %H:%M:%S}"


class CollectionJudge(TenantOwned):
    """A collection's judge: after retrieval a chat model is asked whether the results answer the question,
    and a search it says no to hands back nothing (`refused: true`). Kept beside the collection, in the
    retrieval app, so the judge's settings travel with the stage that reads them."""

    collection = models.OneToOneField(Collection, on_delete=models.CASCADE, related_name="judge")
    enabled = models.BooleanField(default=True, help_text="Ask the judge after retrieval (needs KB_LLM_URL).")
    model = models.CharField(max_length=200, blank=True, default="", help_text="The chat model. Empty: KB_LLM_MODEL.")
    timeout = models.FloatField(
        null=True, blank=True, help_text="Seconds to wait; past it refused is null. Empty: KB_LLM_TIMEOUT."
    )
    prompt = models.TextField(blank=True, default="", help_text="The judge's instructions. Empty: the built-in one.")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "judge"

    def __str__(self) -> str:
        return f"judge of {self.collection}"


class ModelCallKind(models.TextChoices):
    JUDGE = "judge"
    PLANNER = "planner"
    TRANSLATOR = "translator"
    RERANK = "rerank"
    EMBEDDING = "embedding"
    STEP_BACK = "step_back"


class ModelCall(TenantOwned):
    """The cost of one model call made for a search, charged to the agent the search was on behalf of.

    Never holds the question, a paragraph or a label: what was asked is the search event's business."""

    agent = models.ForeignKey(Agent, null=True, on_delete=models.SET_NULL, related_name="model_calls")
    # The agent's name when charged: the cost history outlives a renamed or deleted agent.
    agent_name = models.CharField(max_length=200)
    search = models.ForeignKey(SearchEvent, null=True, on_delete=models.SET_NULL, related_name="model_calls")
    kind = models.CharField(max_length=20, choices=ModelCallKind.choices)
    model = models.CharField(max_length=200, blank=True, default="")
    collection = models.ForeignKey(
        Collection, null=True, blank=True, on_delete=models.SET_NULL, related_name="model_calls"
    )
    tokens_in = models.PositiveIntegerField(null=True, help_text="Empty: the endpoint reported no usage.")
    tokens_out = models.PositiveIntegerField(null=True)
    duration_ms = models.FloatField(default=0)
    ok = models.BooleanField(default=True, help_text="False: the call failed or timed out.")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["tenant", "agent", "created_at"], name="modelcall_agent_day")]

    def __str__(self) -> str:
        return f"{self.kind} for {self.agent_name}"


class CitationCheck(TenantOwned):
    """One check of an answer's citations (POST /api/citations/verify, MCP verify_citations): how many citations
    held each fact. Counts only: never a quote, a paragraph's text or which paragraphs were cited."""

    search = models.ForeignKey(
        SearchEvent, null=True, blank=True, on_delete=models.SET_NULL, related_name="citation_checks"
    )
    api_key = models.ForeignKey(ApiKey, null=True, on_delete=models.SET_NULL, related_name="citation_checks")
    agent = models.ForeignKey(Agent, null=True, blank=True, on_delete=models.SET_NULL, related_name="citation_checks")
    on_behalf_of = models.ForeignKey(
        Agent, null=True, blank=True, on_delete=models.SET_NULL, related_name="citation_checks_on_behalf"
    )
    citations = models.PositiveIntegerField(default=0)
    # {"exists": n, "current": n, "replaced": n, "deleted": n, "surfaced": n|null, "readable": n,
    #  "quote_exact": n, "quote_normalised": n, "quote_absent": n}
    counts = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"citation check {self.created_at:%Y-%m-%d %H:%M:%S}"


class GoldenQuestion(TenantOwned):
    """A question whose answer an editor knows, or a control that nothing in the collection should answer.

    The answer is any of: phrases that must appear in the returned text (`markers`: they survive rechunking),
    paragraphs (ids; a re-index makes new ones, so these are judged while their rows exist) and documents (ids).
    The text is the editor's own test set: kept here, never copied into the searches' audit."""

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="golden_questions")
    question = models.TextField()
    markers = ArrayField(models.TextField(), default=list, blank=True)
    documents = ArrayField(models.UUIDField(), default=list, blank=True)
    paragraphs = ArrayField(models.UUIDField(), default=list, blank=True)
    control = models.BooleanField(default=False, help_text="Nothing in the collection should answer this question.")
    note = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            # An import of the same set twice updates it instead of doubling every question (and its weight).
            # On its hash: a B-tree entry holds at most ~2,700 bytes, and a question may be longer.
            models.UniqueConstraint("collection", MD5("question"), name="golden_question_unique_per_collection"),
            # A control is answered by nothing; any other question needs something that counts as its answer,
            # or an evaluation could only ever call it missed.
            models.CheckConstraint(
                condition=(
                    models.Q(control=True, markers=[], documents=[], paragraphs=[])
                    | (models.Q(control=False) & ~models.Q(markers=[], documents=[], paragraphs=[]))
                ),
                name="golden_question_answer_or_control",
            ),
        ]
        verbose_name = "golden question"

    def __str__(self) -> str:
        return self.question if len(self.question) <= 80 else self.question[:79] + "…"


class EvaluationStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class Evaluation(TenantOwned):
    """One run of a collection's golden questions through the search pipeline as it serves agents.

    `rows` holds one entry per question (found, rank, nDCG@10, latency, the question's text as it was asked),
    `metrics` the totals. Evaluation searches are not search events: they are the editor's, not agents'."""

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="evaluations")
    status = models.CharField(max_length=10, choices=EvaluationStatus.choices, default=EvaluationStatus.QUEUED)
    reader = models.ForeignKey(Reader, null=True, blank=True, on_delete=models.SET_NULL, related_name="evaluations")
    top_n = models.PositiveSmallIntegerField(default=10)
    questions_total = models.PositiveIntegerField(default=0)
    questions_done = models.PositiveIntegerField(default=0)
    # What was evaluated: model, generation, floor, around, hybrid weight, chunking (two runs compare when equal).
    settings = models.JSONField(default=dict, blank=True)
    metrics = models.JSONField(default=dict, blank=True)
    rows = models.JSONField(default=list, blank=True)
    error = models.TextField(blank=True, default="")
    requested_by = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"evaluation of {self.collection} {self.created_at:%Y-%m-%d %H:%M}"


class MeasureStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


MEASURE_IN_FLIGHT = (MeasureStatus.QUEUED, MeasureStatus.RUNNING)


class Measure(TenantOwned):
    """One run of `measure`: several designs of a collection, each indexed from the stored parser output into a
    scratch store searches never see, its golden questions run against each (unfloored unless asked).

    The scratch store is a tenant of its own (`scratch_tenant`, no key nor member can reach it) removed at the
    end of the run, on failure, and by the recovery sweep once the worker holding the run's lease is gone.
    `variants` holds one entry per design (its settings, corpus digest, model identity, metrics, questions),
    `floor` what the scores say about the floor."""

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="measures")
    status = models.CharField(max_length=10, choices=MeasureStatus.choices, default=MeasureStatus.QUEUED)
    reader = models.ForeignKey(Reader, null=True, blank=True, on_delete=models.SET_NULL, related_name="measures")
    top_n = models.PositiveSmallIntegerField(default=10)
    # What was asked: the variants as given (or the preset's), the floor if one was asked for.
    request = models.JSONField(default=dict, blank=True)
    # {"variant": k, "variants": n, "questions_done": x, "questions_total": y, "step": "..."}
    progress = models.JSONField(default=dict, blank=True)
    variants = models.JSONField(default=list, blank=True)
    floor = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True, default="")
    # The scratch store while the run holds one (a tenant id; not a foreign key: the store goes, the record stays).
    scratch_tenant = models.UUIDField(null=True, blank=True, editable=False)
    cancel_requested = models.BooleanField(default=False)
    requested_by = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            # One measure per collection at a time: each indexes the whole collection once per design, and two
            # would only halve each other's speed (the API answers 409).
            models.UniqueConstraint(
                fields=["collection"],
                condition=models.Q(status__in=["queued", "running"]),
                name="measure_one_at_a_time_per_collection",
            ),
        ]

    def __str__(self) -> str:
        return f"measure of {self.collection} {self.created_at:%Y-%m-%d %H:%M}"


class GapDismissal(TenantOwned):
    """An admin's "dismiss" on the gaps page: a group of unanswered questions hidden until one of them is asked again.

    Holds the digests of the group's questions (sha256 of each as the gaps page normalises it), never their text:
    the text stays in the search audit, under its rights and for as long as it keeps it. A group is hidden while no
    search asked one of these questions after `dismissed_at`."""

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="gap_dismissals")
    digests = ArrayField(models.CharField(max_length=64), default=list)
    dismissed_by = models.CharField(max_length=200, blank=True, default="")
    dismissed_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-dismissed_at"]
        verbose_name = "dismissed gap"

    def __str__(self) -> str:
        return f"gap of {self.collection} dismissed {self.dismissed_at:%Y-%m-%d %H:%M}"
