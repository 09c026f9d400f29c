"""Audit of searches. A search event never holds the question's text."""

from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
from django.db import models

from collections_app.models import Agent, ApiKey, TenantOwned


class Reader(TenantOwned):
    """Someone a search is made for. The server decides which labels a reader holds: a search names the
    reader, never its labels, so no caller can grant itself a label by asking for it."""

    name = models.CharField(max_length=200, help_text="How searches name this reader, e.g. ada@example.com.")
    labels = ArrayField(
        models.CharField(max_length=100),
        default=list,
        blank=True,
        help_text="Paragraphs of per-reader collections carrying one of these labels are readable to this reader.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            # A search names its reader: two with one name would make its rights ambiguous.
            models.UniqueConstraint(fields=["tenant", "name"], name="reader_name_unique_per_tenant"),
        ]

    def __str__(self) -> str:
        return self.name


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
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"search {self.created_at:%Y-%m-%d %H:%M:%S}"
