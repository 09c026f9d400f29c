from __future__ import annotations

from rest_framework import serializers

from collections_app.models import Build, Collection, Document
from retrieval.embedding import EmbeddingUnavailable, get_model

COLLECTION_SETTINGS = [
    "chunk_strategy",
    "chunk_size",
    "chunk_overlap",
    "chunk_size_unit",
    "parent_size",
    "parent_return",
    "merge_threshold",
    "embedding_alias",
    "rerank_top_k",
    "rerank_top_n",
    "hybrid_weight",
    "score_threshold",
    "min_score",
    "around",
    "languages",
    "per_reader",
]


class CollectionInput(serializers.ModelSerializer):
    class Meta:
        model = Collection
        fields = ["name", "description", *COLLECTION_SETTINGS]
        # Uniqueness is the service's business (409), not a 400 from the serializer.
        validators: list = []

    def validate_languages(self, value):  # type: ignore[no-untyped-def]
        if value is not None and not value:
            return None
        return value


class CollectionOutput(serializers.ModelSerializer):
    embedding_model = serializers.SerializerMethodField()
    embedding_dims = serializers.SerializerMethodField()

    class Meta:
        model = Collection
        fields = [
            "id",
            "name",
            "description",
            *COLLECTION_SETTINGS,
            "embedding_model",
            "embedding_dims",
            "metadata_schema",
            "created_at",
            "updated_at",
        ]

    def get_embedding_model(self, obj: Collection) -> str | None:
        try:
            return get_model(obj.embedding_alias).model_id
        except EmbeddingUnavailable:
            return None

    def get_embedding_dims(self, obj: Collection) -> int | None:
        try:
            return get_model(obj.embedding_alias).dims
        except EmbeddingUnavailable:
            return None


class DocumentUploadInput(serializers.Serializer):
    # An empty file is accepted and ends in `error` ("no text could be read"), like any unreadable one.
    file = serializers.FileField(allow_empty_file=True)
    source_uri = serializers.CharField(required=False, allow_blank=True, max_length=1000)
    ingest_options = serializers.JSONField(
        required=False, help_text='JSON object, e.g. {"tesseract_langs": ["mkd", "eng"]} or {"table_mode": "sheet"}'
    )

    def validate_source_uri(self, value: str) -> str:
        # folder:// names what a folder source synced; only the deployment sets folder sources, and a sync
        # removes folder documents it does not find, so an upload may not claim to be one.
        if value.lower().startswith("folder://"):
            raise serializers.ValidationError("folder:// addresses belong to folder sources, set by the deployment")
        return value


class IngestOptionsInput(serializers.Serializer):
    confirm_reparse = serializers.BooleanField(default=False)
    mineru_lang = serializers.CharField(required=False)
    tesseract_langs = serializers.ListField(child=serializers.CharField(), required=False)
    table_mode = serializers.CharField(required=False)
    column_roles = serializers.DictField(child=serializers.CharField(), required=False)
    records_path = serializers.CharField(required=False, allow_blank=True)
    labels = serializers.ListField(child=serializers.CharField(), required=False)


class DocumentUploadOutput(serializers.Serializer):
    document_id = serializers.UUIDField()
    status = serializers.CharField()


class ArchiveMemberOutput(serializers.Serializer):
    document_id = serializers.UUIDField(source="document.pk")
    filename = serializers.CharField(source="path", help_text="the member's path inside the zip")
    status = serializers.CharField(source="document.status")
    created = serializers.BooleanField(help_text="false: the same content was already held")


class ArchiveImportOutput(serializers.Serializer):
    """The answer to a .zip upload: one entry per member imported (or already held), and what was not."""

    documents = ArchiveMemberOutput(many=True, source="members")
    warnings = serializers.ListField(child=serializers.CharField())


class DocumentOutput(serializers.ModelSerializer):
    document_id = serializers.UUIDField(source="id")
    chunk_count = serializers.IntegerField()

    class Meta:
        model = Document
        fields = [
            "document_id",
            "filename",
            "source_uri",
            "status",
            "error",
            "warnings",
            "ingest_options",
            "metadata",
            "progress",
            "language",
            "size",
            "chunk_count",
            "created_at",
            "updated_at",
        ]


class DocumentListInput(serializers.Serializer):
    limit = serializers.IntegerField(min_value=1, max_value=200, default=50)
    offset = serializers.IntegerField(min_value=0, default=0)


class BuildOutput(serializers.ModelSerializer):
    class Meta:
        model = Build
        fields = [
            "id",
            "document",
            "model",
            "dims",
            "method",
            "built_from",
            "passages",
            "built_at",
            "refused",
            "warnings",
        ]
