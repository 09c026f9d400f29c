"""The language fields of a collection's answer: effective languages, the pinned list, the measured split."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from collections_app.models import Collection
from collections_app.selectors.languages import collection_language_shares, collection_languages
from doors.api.schema import LABEL_HELP


class LanguageShareOutput(serializers.Serializer):
    language = serializers.CharField(allow_null=True, help_text=f"a label ({LABEL_HELP}); null: undetected")
    name = serializers.CharField(help_text='the language\'s name for people, e.g. "Greek", or "undetected"')
    paragraphs = serializers.IntegerField()
    share = serializers.FloatField(help_text="0-1 of the paragraphs searches read")


class CollectionLanguagesOutput(serializers.Serializer):
    """Mixed into CollectionOutput: `languages` there is what the collection's languages are, not only the pin."""

    languages = serializers.SerializerMethodField(
        help_text="the collection's languages: the pinned list, else those making up at least 5 % of its "
        "paragraphs (at most four), most frequent first"
    )
    languages_pinned = serializers.ListField(
        source="languages",
        child=serializers.CharField(),
        allow_null=True,
        read_only=True,
        help_text="what an editor pinned (PATCH languages; null: measured)",
    )
    language_shares = serializers.SerializerMethodField(help_text="the measured split, most frequent first")

    def get_languages(self, obj: Collection) -> list[str]:
        return collection_languages(obj, self._shares(obj))

    @extend_schema_field(LanguageShareOutput(many=True))
    def get_language_shares(self, obj: Collection) -> list[dict[str, Any]]:
        return self._shares(obj)

    def _shares(self, obj: Collection) -> list[dict[str, Any]]:
        # Measured once per collection and answer (languages and language_shares both need it).
        cache = self.context.setdefault("_language_shares", {}) if isinstance(self.context, dict) else {}
        if obj.pk not in cache:
            cache[obj.pk] = collection_language_shares(obj)
        return cache[obj.pk]


class LanguageLabelField(serializers.CharField):
    """A stored language label, with "" (undetected: mostly numbers) answered as null."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("allow_null", True)
        kwargs.setdefault("read_only", True)
        kwargs.setdefault("help_text", f"its language ({LABEL_HELP}); null: undetected")
        super().__init__(**kwargs)

    def to_representation(self, value: Any) -> str | None:  # type: ignore[override]
        return str(value) if value else None
