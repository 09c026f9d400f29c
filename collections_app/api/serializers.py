from __future__ import annotations

from datetime import datetime
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from collections_app.api.language_fields import CollectionLanguagesOutput, LanguageLabelField
from collections_app.models import Build, ChunkStrategy, Collection, Document, DocumentVersion, SizeUnit
from collections_app.services import collections as collections_service
from collections_app.services.documents import restore_until
from collections_app.services.labels import MAX_LABEL_CHARS, MAX_LABELS
from collections_app.services.reindex import reindex_progress
from doors.api.inputs import StrictInput
from embedding import EmbeddingUnavailable, get_model
from infra.validation import NameField, SafeDictField, SafeJSONField, SourceUriField, text_problem
from ingestion.chunking import CHUNKING_DEFAULTS

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
    "window_max_chars",
    "languages",
    "per_reader",
    "golden_gate",
    "golden_gate_tolerance",
    "step_back",
]


# The overlap rule, as the schema states it (services/collections.py: collection_chunking_with applies it).
OVERLAP_HELP = (
    "How much of the previous paragraph a long section's next one repeats; below chunk_size. Left out while "
    f"chunk_size or chunk_size_unit changes: {CHUNKING_DEFAULTS.overlap * 100 // CHUNKING_DEFAULTS.size}% of the "
    f"new size ({CHUNKING_DEFAULTS.overlap} of the default {CHUNKING_DEFAULTS.size}), rounded down."
)


def _bounds() -> dict[str, dict[str, Any]]:
    """The collection service's bounds, declared in the schema too (the service is what enforces them)."""
    svc = collections_service
    low, high = svc.CHUNK_SIZE_RANGE
    fraction = {"min_value": 0, "max_value": 1}
    return {
        "chunk_size": {"min_value": low, "max_value": high},
        "chunk_overlap": {"min_value": 0, "max_value": high - 1, "help_text": OVERLAP_HELP},
        "parent_size": {"min_value": low, "max_value": svc.MAX_PARENT_SIZE},
        "rerank_top_k": {"min_value": 1, "max_value": svc.MAX_TOP_K},
        "rerank_top_n": {"min_value": 1, "max_value": svc.MAX_TOP_N},
        "around": {"min_value": 0, "max_value": svc.MAX_AROUND},
        "window_max_chars": dict(zip(("min_value", "max_value"), svc.WINDOW_MAX_CHARS_RANGE, strict=True)),
        "merge_threshold": fraction,
        "hybrid_weight": fraction,
        "score_threshold": fraction,
        "min_score": fraction,
        "golden_gate_tolerance": fraction,
        "description": {"max_length": svc.MAX_DESCRIPTION_CHARS},
    }


class CollectionInput(StrictInput, serializers.ModelSerializer):
    name = NameField(
        max_length=collections_service.MAX_NAME_CHARS,
        help_text="How searches and agents name the collection; unique in this tenant (a duplicate is a 409).",
    )
    languages = serializers.ListField(
        child=serializers.CharField(min_length=1, max_length=10),
        max_length=collections_service.MAX_LANGUAGES,
        required=False,
        allow_null=True,
        help_text='Pin the collection\'s languages, most important first, e.g. ["mk", "en"] (sr, hr and bs are '
        "stored as sh; a language not in the collection yet may be pinned); null or []: measured from its paragraphs.",
    )

    # What GET answers may be PATCHed back as it is: the answer's own fields are ignored, not refused.
    sent_back = (
        "id",
        "languages_pinned",
        "language_shares",
        "embedding_model",
        "embedding_dims",
        "stale_documents",
        "reindex",
        "metadata_schema",
        "created_at",
        "updated_at",
    )

    class Meta:
        model = Collection
        fields = ["name", "description", *COLLECTION_SETTINGS]
        extra_kwargs = _bounds()
        # Uniqueness is the service's business (409), not a 400 from the serializer.
        validators: list = []

    def validate_languages(self, value: list[str] | None) -> list[str] | None:
        if value is not None and not value:
            return None
        return value


class ReindexProgressOutput(serializers.Serializer):
    done = serializers.IntegerField(help_text="documents rebuilt so far")
    total = serializers.IntegerField(help_text="documents to rebuild")
    error = serializers.CharField(allow_null=True, help_text="why the last run stopped; ask again to resume")


class CollectionOutput(CollectionLanguagesOutput, serializers.ModelSerializer):
    embedding_model = serializers.SerializerMethodField(
        help_text="the model searches use: the one the readable paragraphs were built with, until a re-index's cutover"
    )
    embedding_dims = serializers.SerializerMethodField()
    stale_documents = serializers.SerializerMethodField(help_text="documents built with settings since changed")
    reindex = serializers.SerializerMethodField(help_text="a pending re-index's progress; null when none is pending")

    class Meta:
        model = Collection
        fields = [
            "id",
            "name",
            "description",
            *COLLECTION_SETTINGS,
            "languages_pinned",
            "language_shares",
            "embedding_model",
            "embedding_dims",
            "stale_documents",
            "reindex",
            "metadata_schema",
            "created_at",
            "updated_at",
        ]

    def get_embedding_model(self, obj: Collection) -> str | None:
        try:
            return get_model(obj.served_alias).model_id
        except EmbeddingUnavailable:
            return None

    def get_embedding_dims(self, obj: Collection) -> int | None:
        try:
            return get_model(obj.served_alias).dims
        except EmbeddingUnavailable:
            return None

    def get_stale_documents(self, obj: Collection) -> int:
        # Annotated by the list view (one query for the page, not one per collection).
        annotated = getattr(obj, "stale_count", None)
        return annotated if annotated is not None else obj.documents.filter(stale=True).count()

    @extend_schema_field(ReindexProgressOutput(allow_null=True))
    def get_reindex(self, obj: Collection) -> dict[str, object] | None:
        return reindex_progress(obj)


class UploadFileField(serializers.FileField):
    """The file's name must be storable text; its length is the upload service's business (it shortens)."""

    def to_internal_value(self, data: Any) -> Any:
        file = super().to_internal_value(data)
        problem = text_problem(file.name or "")
        if problem:
            raise serializers.ValidationError(f"the file name {problem}")
        return file


@extend_schema_field({"type": "string", "example": '["hr", "finance"]'})
class LabelsFormField(SafeJSONField):
    """A JSON list sent as one form field of a multipart upload (the service checks each label)."""


class DocumentUploadInput(serializers.Serializer):
    # An empty file is accepted and ends in `error` ("no text could be read"), like any unreadable one.
    file = UploadFileField(
        allow_empty_file=True,
        help_text="The document (PDF, Word, slides, spreadsheets, e-mail, text, HTML, images, ...) or a .zip of "
        "documents; its name is how it is shown and versioned. Content that contradicts the extension is a 400.",
    )
    # folder:// names what a folder source synced; only the deployment sets folder sources, and a sync
    # removes folder documents it does not find, so an upload may not claim to be one.
    source_uri = SourceUriField(
        required=False,
        allow_blank=True,
        max_length=1000,
        help_text="Where the file came from: upload://, http://, https:// or mailto: (default upload://<name>)",
    )
    ingest_options = SafeJSONField(
        required=False,
        help_text='JSON object, e.g. {"tesseract_langs": ["mkd", "eng"]} or {"table_mode": "sheet"}. '
        'A .zip takes only {"keep_navigation_readmes": true}: its README.md files that are navigation hubs '
        "(mostly links and headings) are skipped by default and named in the answer's warnings and the "
        "import's build; true indexes them too. A README with prose is always indexed.",
    )
    labels = LabelsFormField(
        required=False,
        help_text='Per-reader collections: the reader labels of the document, a JSON list, e.g. ["hr", "finance"] '
        f"(at most {MAX_LABELS}, each 1-{MAX_LABEL_CHARS} characters). Refused on a collection that is not per-reader.",
    )
    metadata = SafeJSONField(
        required=False,
        help_text='Values for the collection\'s metadata columns, a JSON object, e.g. {"year": 2026, "department": '
        '"HR", "valid_from": "2026-01-01"}: merged into every paragraph\'s metadata (a record\'s own columns win), '
        "so search `filters` select them. A value that does not fit its declared column is a 400 naming the column "
        "and its type; a key the collection does not declare yet declares a column, typed from its value (number, "
        "date YYYY-MM-DD, else string). Not taken with a .zip.",
    )
    replace = serializers.BooleanField(
        default=True,
        help_text="true (default): a file with new content under the name (or the source_uri) of a document of the "
        "collection becomes that document's next version: same document_id, its old paragraphs answering until the "
        "new ones are done, then retired in the same transaction; its versions at .../versions. false: keep both, "
        "this file a document of its own. The same content again is always the document already held (200).",
    )


class DocumentLabelsInput(StrictInput):
    labels = serializers.ListField(
        child=serializers.CharField(max_length=MAX_LABEL_CHARS),
        max_length=MAX_LABELS,
        help_text="The document's reader labels, replacing the ones it has; [] leaves it readable by every reader.",
    )


class IngestOptionsInput(serializers.Serializer):
    confirm_reparse = serializers.BooleanField(
        default=False,
        help_text="true: re-parse even though manual chunk edits and per-block decisions are lost (else a 409)",
    )
    mineru_lang = serializers.CharField(
        required=False, max_length=50, help_text="MinerU's language for a scanned PDF, when MinerU is installed"
    )
    tesseract_langs = serializers.ListField(
        child=serializers.CharField(max_length=50),
        required=False,
        max_length=50,
        help_text='Tesseract OCR languages for images and scanned pages, e.g. ["mkd", "eng"]; [] the defaults',
    )
    table_mode = serializers.CharField(
        required=False,
        max_length=50,
        help_text='spreadsheets and records: "records" (a paragraph per row, the default) or "sheet" (each sheet '
        "one table, chunked like any document)",
    )
    column_roles = SafeDictField(
        child=serializers.CharField(max_length=50),
        required=False,
        help_text='column → role, e.g. {"status": "both"}: index (searched text), metadata (a filter), both, '
        "ignore; columns not named keep their proposed role",
    )
    records_path = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=500,
        help_text="JSON, YAML, XML: dotted path to the list of records, e.g. data.items; empty: the whole file",
    )
    labels = serializers.ListField(
        child=serializers.CharField(max_length=MAX_LABEL_CHARS),
        required=False,
        max_length=1000,
        help_text="Not accepted: labels are not an ingest option; PATCH .../labels changes them without re-parsing.",
    )


class DocumentUploadOutput(serializers.Serializer):
    document_id = serializers.UUIDField()
    status = serializers.CharField()
    version = serializers.IntegerField(
        help_text="the document's version this upload is (1 for a new document); the one answering until it is "
        "done is the document's `version`"
    )


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
    language = LanguageLabelField()
    language_pinned = LanguageLabelField(help_text="the language an editor set, kept by every rebuild; null: detected")
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
            "labels",
            "metadata",
            "progress",
            "stale",
            "language",
            "language_pinned",
            "size",
            "chunk_count",
            "version",
            "created_at",
            "updated_at",
        ]
        extra_kwargs = {"version": {"help_text": "the version whose paragraphs answer; 0 while none has been read"}}


class DocumentVersionOutput(serializers.ModelSerializer):
    status = serializers.ChoiceField(
        choices=["reading", "current", "error", "retired"],
        help_text="reading: being read (the version before still answers); current: its paragraphs answer; "
        "error: could not be read (see error; the version before still answers); retired: replaced by a newer one",
    )

    class Meta:
        model = DocumentVersion
        fields = [
            "number",
            "status",
            "error",
            "filename",
            "size",
            "content_hash",
            "uploaded_by",
            "uploaded_at",
            "published_at",
            "retired_at",
        ]
        extra_kwargs = {
            "size": {"help_text": "bytes of the original"},
            "content_hash": {"help_text": "SHA-256 of the original"},
            "published_at": {"help_text": "when its paragraphs began to answer (null: never)"},
            "retired_at": {"help_text": "when a newer version's paragraphs replaced them"},
        }


class DocumentPageOutput(serializers.Serializer):
    count = serializers.IntegerField(help_text="documents in the collection")
    limit = serializers.IntegerField()
    offset = serializers.IntegerField()
    results = DocumentOutput(many=True)


class BuildOutput(serializers.ModelSerializer):
    class Meta:
        model = Build
        fields = [
            "id",
            "document",
            "model",
            "alias",
            "dims",
            "method",
            "built_from",
            "version",
            "passages",
            "built_at",
            "refused",
            "warnings",
        ]


class ChunkPreviewInput(serializers.Serializer):
    """Settings to try; each one left out is the collection's own."""

    # The model's own choices: the schema then describes one ChunkStrategy and one SizeUnit, not two of each.
    chunk_strategy = serializers.ChoiceField(
        choices=ChunkStrategy.choices, required=False, help_text="a planned strategy is refused, naming it"
    )
    chunk_size = serializers.IntegerField(
        required=False,
        min_value=collections_service.CHUNK_SIZE_RANGE[0],
        max_value=collections_service.CHUNK_SIZE_RANGE[1],
        help_text="the longest paragraph, in chunk_size_unit",
    )
    chunk_size_unit = serializers.ChoiceField(
        choices=SizeUnit.choices, required=False, help_text="what chunk_size counts: characters, or the model's tokens"
    )
    chunk_overlap = serializers.IntegerField(
        required=False, min_value=0, max_value=collections_service.CHUNK_SIZE_RANGE[1] - 1, help_text=OVERLAP_HELP
    )
    parent_size = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=collections_service.CHUNK_SIZE_RANGE[0],
        max_value=collections_service.MAX_PARENT_SIZE,
        help_text="hierarchical: the longest parent section; null: 4 x chunk_size",
    )


class PreviewChunkOutput(serializers.Serializer):
    text = serializers.CharField()
    page = serializers.IntegerField(allow_null=True)
    section = serializers.ListField(child=serializers.CharField())
    tokens = serializers.IntegerField(help_text="by the collection's embedding model's own tokenizer")
    kind = serializers.CharField(help_text="paragraph, or parent (hierarchical: a section window, never matched)")


class ChunkPreviewSettingsOutput(serializers.Serializer):
    """The settings the preview cut with: the collection's, each one given replacing it (an overlap brought along)."""

    chunk_strategy = serializers.CharField(source="strategy")
    chunk_size = serializers.IntegerField(source="size")
    chunk_size_unit = serializers.CharField(source="unit")
    chunk_overlap = serializers.IntegerField(source="overlap")
    parent_size = serializers.IntegerField(allow_null=True)


class ChunkPreviewOutput(serializers.Serializer):
    settings = ChunkPreviewSettingsOutput()
    chunks = PreviewChunkOutput(many=True)
    chunk_count = serializers.IntegerField(help_text="paragraphs (parents not counted)")
    share_under_50_tokens = serializers.FloatField(help_text="share (0-1) of paragraphs under 50 tokens")
    heading_only_count = serializers.IntegerField(help_text="paragraphs that are nothing but headings")
    parent_count = serializers.IntegerField(allow_null=True, help_text="hierarchical only")
    median_parent_tokens = serializers.FloatField(allow_null=True, help_text="hierarchical only")
    blocks_previewed = serializers.IntegerField(
        help_text="parser blocks cut for this preview, from the document's beginning: every number here is of them"
    )
    blocks_total = serializers.IntegerField(
        help_text="the document's parser blocks in all; more than blocks_previewed for a large document, which is "
        "previewed from its first blocks only"
    )


class GoldenReferenceOutput(serializers.Serializer):
    id = serializers.UUIDField()
    question = serializers.CharField()


class DocumentTrashedOutput(serializers.Serializer):
    """The answer of DELETE .../documents/{id}: the document is in the trash, restorable until `restore_until`."""

    document_id = serializers.UUIDField()
    trashed = serializers.BooleanField(help_text="always true: the document is in its collection's trash")
    trashed_at = serializers.DateTimeField()
    restore_until = serializers.DateTimeField(
        allow_null=True,
        help_text="restorable until then (POST .../trash/{id}/restore); null: until the trash is emptied",
    )
    golden_questions = GoldenReferenceOutput(
        many=True,
        help_text="the golden questions that refer to the document (by id, by one of its paragraphs, or by a marker "
        "in its text): their evaluations count it for nothing until it is restored",
    )


class TrashedDocumentOutput(serializers.ModelSerializer):
    """One document of a collection's trash: who deleted it and when, until when it may be restored."""

    document_id = serializers.UUIDField(source="id")
    trashed_by = serializers.SerializerMethodField(
        help_text='who deleted it: a staff member\'s username, "key <name>" for an API key, or "folder sync"'
    )
    restore_until = serializers.SerializerMethodField(
        help_text="restorable until then; purged after it. null: kept until the trash is emptied"
    )

    class Meta:
        model = Document
        fields = ["document_id", "filename", "source_uri", "status", "size", "version", "trashed_at", "trashed_by",
                  "restore_until", "created_at"]  # fmt: skip

    def get_trashed_by(self, obj: Document) -> str:
        return obj.trashed_by_name or "someone no longer known"

    def get_restore_until(self, obj: Document) -> datetime | None:
        return restore_until(obj.trashed_at)
