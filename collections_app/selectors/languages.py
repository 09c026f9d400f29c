"""A collection's languages, read: paragraph counts per language label, the measured split, and the list
searches and the admin use (the pinned list when one is pinned, else those making up at least
LANGUAGE_SHARE_FLOOR of its paragraphs, at most MAX_MEASURED_LANGUAGES, most frequent first)."""

from __future__ import annotations

from typing import Any

from django.contrib.postgres.expressions import ArraySubquery
from django.db.models import Count, OuterRef
from django.db.models.functions import JSONObject

from collections_app.models import Chunk, Collection
from ingestion.languages import language_name, normalise

LANGUAGE_SHARE_FLOOR = 0.05
MAX_MEASURED_LANGUAGES = 4


def language_counts() -> ArraySubquery:
    """An annotation for a queryset of collections: each one's live paragraphs per language label ("" =
    undetected), as [{"language": ..., "n": ...}], in the collections' own query."""
    per_language = (
        Chunk.objects.filter(collection=OuterRef("pk"))
        .live()
        .paragraphs()
        .order_by()
        .values("language")
        .annotate(pair=JSONObject(language="language", n=Count("id")))
        .values("pair")
    )
    return ArraySubquery(per_language)


def collection_language_counts(collection: Collection) -> dict[str, int]:
    annotated = getattr(collection, "language_counts", None)
    if annotated is None:
        counts = Collection.objects.filter(pk=collection.pk).annotate(counts=language_counts())
        annotated = counts.values_list("counts", flat=True).first() or []
    return {pair["language"]: pair["n"] for pair in annotated}


def collection_language_shares(collection: Collection) -> list[dict[str, Any]]:
    """The measured split, most frequent first: [{"language", "name", "paragraphs", "share"}]; undetected
    paragraphs count in the whole but are no language (`language` null, `name` "undetected")."""
    counts = collection_language_counts(collection)
    total = sum(counts.values())
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return [
        {
            "language": normalise(code) or None,
            "name": language_name(code),
            "paragraphs": n,
            "share": round(n / total, 4),
        }
        for code, n in ranked
    ]


def measured_languages(shares: list[dict[str, Any]]) -> list[str]:
    """Languages making up at least LANGUAGE_SHARE_FLOOR of the paragraphs, at most MAX_MEASURED_LANGUAGES."""
    merged: dict[str, float] = {}
    for entry in shares:  # an old "sr" and a new "sh" are one language
        if entry["language"]:
            merged[entry["language"]] = merged.get(entry["language"], 0.0) + entry["share"]
    ranked = sorted(merged.items(), key=lambda item: (-item[1], item[0]))
    return [code for code, share in ranked if share >= LANGUAGE_SHARE_FLOOR][:MAX_MEASURED_LANGUAGES]


def collection_languages(collection: Collection, shares: list[dict[str, Any]] | None = None) -> list[str]:
    """The collection's languages: pinned when pinned (even ones it does not contain yet), else measured."""
    if collection.languages is not None:
        return list(collection.languages)
    return measured_languages(collection_language_shares(collection) if shares is None else shares)
