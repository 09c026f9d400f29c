"""Audit of searches. A search event never holds the question's text."""

from __future__ import annotations

from django.db import models

from collections_app.models import Agent, ApiKey, TenantOwned


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
