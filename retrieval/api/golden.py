"""Golden questions and evaluations of one collection (editor and admin keys only, reading included).

GET/POST          /api/manage/collections/{id}/golden             (a page at a time; one question)
GET/PATCH/DELETE  /api/manage/collections/{id}/golden/{gid}
GET/POST          /api/manage/collections/{id}/golden/jsonl       (export / import, JSON lines)
GET/POST          /api/manage/collections/{id}/golden/beir        (export a zip / import queries + qrels)
POST              /api/manage/collections/{id}/evaluate           (202: queued)
GET               /api/manage/collections/{id}/evaluations[/{eid}]
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from django.utils.text import slugify
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from collections_app import selectors
from collections_app.models import Collection
from collections_app.services.collections import MAX_TOP_N
from doors.api.authentication import request_key
from doors.api.inputs import StrictInput
from doors.api.pages import PageInput, page_of
from doors.api.permissions import EditorOnly
from doors.api.schema import BODY, GUARDED, GUARDED_LISTED, refusals
from retrieval.api import examples
from retrieval.models import Evaluation, GoldenQuestion
from retrieval.selectors.search import registered_reader
from retrieval.services.golden import (
    DEFAULT_TOP_N,
    MAX_IMPORT_BYTES,
    evaluation_start,
    golden_export_beir,
    golden_export_jsonl,
    golden_import_beir,
    golden_import_jsonl,
    golden_question_create,
    golden_question_delete,
    golden_question_update,
    golden_questions_for,
)


class GoldenInput(StrictInput):
    # Lengths, blanks and ids are checked by the service, which names the field.
    question = serializers.CharField(trim_whitespace=False, help_text="The question, as an agent would ask it.")
    markers = serializers.ListField(
        child=serializers.CharField(allow_blank=True, trim_whitespace=False), required=False, max_length=100,
        help_text="Phrases that must appear in the returned text (windows included); they survive rechunking.",
    )  # fmt: skip
    documents = serializers.ListField(
        child=serializers.CharField(), required=False, max_length=100,
        help_text="Documents that answer it: ids, or a file name, file name without extension or source.",
    )  # fmt: skip
    paragraphs = serializers.ListField(
        child=serializers.CharField(), required=False, max_length=100,
        help_text="Paragraph ids that answer it (a search result's chunk_id).",
    )  # fmt: skip
    control = serializers.BooleanField(required=False, help_text="true: nothing in the collection should answer it.")
    note = serializers.CharField(
        required=False, allow_blank=True, trim_whitespace=False, help_text="For the editors: why this is the answer."
    )


class GoldenOutput(serializers.ModelSerializer):
    class Meta:
        model = GoldenQuestion
        fields = ["id", "question", "markers", "documents", "paragraphs", "control", "note", "created_at",
                  "updated_at"]  # fmt: skip


class GoldenPageOutput(serializers.Serializer):
    count = serializers.IntegerField()
    limit = serializers.IntegerField()
    offset = serializers.IntegerField()
    results = GoldenOutput(many=True)


class ImportOutput(serializers.Serializer):
    created = serializers.IntegerField()
    updated = serializers.IntegerField(help_text="questions already held (same text) given the imported judgements")
    skipped = serializers.IntegerField(help_text="queries nothing judged, and with skip_unknown unknown corpus ids")
    skipped_reasons = serializers.ListField(child=serializers.CharField(), help_text="the first ten, by file line")


class JsonlImportInput(serializers.Serializer):
    file = serializers.FileField(help_text="JSON lines as the export writes them")


class BeirImportInput(serializers.Serializer):
    queries = serializers.FileField(help_text="BEIR queries.jsonl: _id, text, optional metadata")
    qrels = serializers.FileField(help_text="BEIR qrels TSV: query-id, corpus-id, score (header line optional)")
    skip_unknown = serializers.BooleanField(
        default=False, help_text="skip (and report) qrels naming no document instead of refusing the import"
    )


class EvaluateInput(StrictInput):
    reader = serializers.CharField(
        required=False, max_length=200, help_text="The registered reader to search as (per-reader collections)."
    )
    top_n = serializers.IntegerField(
        min_value=1, max_value=MAX_TOP_N, default=DEFAULT_TOP_N, help_text="Results read per question."
    )


class EvaluationOutput(serializers.ModelSerializer):
    progress = serializers.SerializerMethodField()
    reader: serializers.SlugRelatedField = serializers.SlugRelatedField(
        slug_field="name", read_only=True, allow_null=True, help_text="the reader it searched as; null: no reader"
    )

    class Meta:
        model = Evaluation
        fields = ["id", "status", "progress", "top_n", "reader", "metrics", "settings", "error", "requested_by",
                  "created_at", "finished_at"]  # fmt: skip

    def get_progress(self, evaluation: Evaluation) -> dict[str, int]:
        return {"done": evaluation.questions_done, "total": evaluation.questions_total}


class EvaluationDetailOutput(EvaluationOutput):
    class Meta(EvaluationOutput.Meta):
        fields = [*EvaluationOutput.Meta.fields, "rows"]


class EvaluationPageOutput(serializers.Serializer):
    count = serializers.IntegerField()
    limit = serializers.IntegerField()
    offset = serializers.IntegerField()
    results = EvaluationOutput(many=True)


class EvaluationStarted(serializers.Serializer):
    id = serializers.UUIDField()
    status = serializers.CharField()


class CollectionDoor(APIView):
    permission_classes = [EditorOnly]
    editors_material = "Golden questions and evaluations"

    def get_collection(self, request: Request, collection_id: UUID) -> Collection:
        return selectors.collection_for_key_or_404(request_key(request), collection_id)


class GoldenListView(CollectionDoor):
    """A collection's golden questions: what an editor knows the answers to, and controls nothing should answer."""

    @extend_schema(
        summary="A collection's golden questions, a page at a time",
        operation_id="manage_collections_golden_list",
        parameters=[PageInput],
        responses={200: GoldenPageOutput, **refusals(*GUARDED_LISTED)},
        examples=[
            OpenApiExample(
                "A question and a control", value=examples.GOLDEN_PAGE, response_only=True, status_codes=["200"]
            )
        ],
    )
    def get(self, request: Request, collection_id: UUID) -> Response:
        return page_of(request, golden_questions_for(self.get_collection(request, collection_id)), GoldenOutput)

    @extend_schema(
        summary="Add a golden question (or a control)",
        request=GoldenInput,
        examples=[
            OpenApiExample(
                "Answered by a phrase",
                value={"question": "How many days of leave?", "markers": ["25 days"]},
                request_only=True,
            ),
            OpenApiExample(
                "A control", value={"question": "Who won the 1998 World Cup?", "control": True}, request_only=True
            ),
        ],
        responses={
            201: GoldenOutput,
            **refusals(
                *BODY,
                409,
                conflict="the collection already has that question",
                conflict_example="this collection already has that golden question",
            ),
        },
    )
    def post(self, request: Request, collection_id: UUID) -> Response:
        collection = self.get_collection(request, collection_id)
        data = GoldenInput(data=request.data)
        data.is_valid(raise_exception=True)
        golden = golden_question_create(collection=collection, **data.validated_data)
        return Response(GoldenOutput(golden).data, status=status.HTTP_201_CREATED)


class GoldenDetailView(CollectionDoor):
    """One golden question: its text, what counts as its answer (markers, documents, paragraphs) or control."""

    def get_golden(self, request: Request, collection_id: UUID, golden_id: UUID) -> GoldenQuestion:
        collection = self.get_collection(request, collection_id)
        return get_object_or_404(golden_questions_for(collection).select_related("collection"), pk=golden_id)

    @extend_schema(
        summary="A golden question",
        responses={200: GoldenOutput, **refusals(*GUARDED)},
        examples=[OpenApiExample("A golden question", value=examples.GOLDEN, response_only=True, status_codes=["200"])],
    )
    def get(self, request: Request, collection_id: UUID, golden_id: UUID) -> Response:
        return Response(GoldenOutput(self.get_golden(request, collection_id, golden_id)).data)

    @extend_schema(
        summary="Change a golden question",
        request=GoldenInput(partial=True),
        responses={
            200: GoldenOutput,
            **refusals(
                *BODY,
                409,
                conflict="the collection already has that question",
                conflict_example="this collection already has that golden question",
            ),
        },
    )
    def patch(self, request: Request, collection_id: UUID, golden_id: UUID) -> Response:
        golden = self.get_golden(request, collection_id, golden_id)
        data = GoldenInput(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        return Response(GoldenOutput(golden_question_update(golden=golden, **data.validated_data)).data)

    @extend_schema(summary="Remove a golden question", responses={204: None, **refusals(*GUARDED)})
    def delete(self, request: Request, collection_id: UUID, golden_id: UUID) -> Response:
        golden_question_delete(golden=self.get_golden(request, collection_id, golden_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


def _download(content: str | bytes, collection: Collection, suffix: str, content_type: str) -> HttpResponse:
    response = HttpResponse(content, content_type=content_type)
    name = slugify(collection.name) or "collection"
    response["Content-Disposition"] = f'attachment; filename="golden-{name}{suffix}"'
    return response


class GoldenJsonlView(CollectionDoor):
    """Golden questions as JSON lines, one question per line with every field; an import is all or nothing."""

    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(
        summary="Export the golden questions as JSON lines",
        responses={(200, "application/x-ndjson"): OpenApiResponse(OpenApiTypes.STR), **refusals(*GUARDED)},
    )
    def get(self, request: Request, collection_id: UUID) -> HttpResponse:
        collection = self.get_collection(request, collection_id)
        return _download(golden_export_jsonl(collection=collection), collection, ".jsonl", "application/x-ndjson")

    @extend_schema(
        summary="Import golden questions from JSON lines (all or nothing)",
        request={"multipart/form-data": JsonlImportInput},
        responses={200: ImportOutput, **refusals(*BODY)},
    )
    def post(self, request: Request, collection_id: UUID) -> Response:
        collection = self.get_collection(request, collection_id)
        data = JsonlImportInput(data=request.data)
        data.is_valid(raise_exception=True)
        report = golden_import_jsonl(collection=collection, content=_read(data.validated_data["file"]))
        return Response(report.as_json())


class GoldenBeirView(CollectionDoor):
    """Golden questions as BEIR: queries.jsonl and a qrels TSV whose corpus ids name the collection's documents."""

    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(
        summary="Export the golden questions as BEIR (a zip of queries.jsonl and qrels/test.tsv)",
        responses={(200, "application/zip"): OpenApiResponse(OpenApiTypes.BINARY), **refusals(*GUARDED)},
    )
    def get(self, request: Request, collection_id: UUID) -> HttpResponse:
        collection = self.get_collection(request, collection_id)
        return _download(golden_export_beir(collection=collection), collection, "-beir.zip", "application/zip")

    @extend_schema(
        summary="Import golden questions from BEIR queries.jsonl and qrels (all or nothing)",
        description="A qrels corpus-id names a document by its id, file name, file name without extension, "
        "source, or the source's last part. Queries nothing judges are skipped.",
        request={"multipart/form-data": BeirImportInput},
        responses={200: ImportOutput, **refusals(*BODY)},
    )
    def post(self, request: Request, collection_id: UUID) -> Response:
        collection = self.get_collection(request, collection_id)
        data = BeirImportInput(data=request.data)
        data.is_valid(raise_exception=True)
        report = golden_import_beir(
            collection=collection, queries=_read(data.validated_data["queries"]),
            qrels=_read(data.validated_data["qrels"]), skip_unknown=data.validated_data["skip_unknown"],
        )  # fmt: skip
        return Response(report.as_json())


def _read(upload: Any) -> bytes:
    # One byte past the limit is enough for the service to say the file is too large.
    return upload.read(MAX_IMPORT_BYTES + 1)


class EvaluateView(CollectionDoor):
    """Evaluate the collection as it is: its golden questions searched as agents' searches are, and judged."""

    @extend_schema(
        summary="Evaluate the collection as it is: every golden question through the search pipeline",
        description="Queued in the background; follow it at .../evaluations/{id} (status, progress, metrics).",
        request=EvaluateInput,
        responses={202: EvaluationStarted, **refusals(*BODY)},
    )
    def post(self, request: Request, collection_id: UUID) -> Response:
        collection = self.get_collection(request, collection_id)
        data = EvaluateInput(data=request.data)
        data.is_valid(raise_exception=True)
        key = request_key(request)
        evaluation = evaluation_start(
            collection=collection, reader=registered_reader(key=key, name=data.validated_data.get("reader")),
            top_n=data.validated_data["top_n"], requested_by=key.name or key.prefix,
        )  # fmt: skip
        return Response({"id": evaluation.pk, "status": evaluation.status}, status=status.HTTP_202_ACCEPTED)


class EvaluationListView(CollectionDoor):
    """A collection's evaluations: status, progress, hit@1, hit@5, MRR, nDCG@10, controls answered or refused."""

    @extend_schema(
        summary="A collection's evaluations, newest first (without their per-question rows)",
        operation_id="manage_collections_evaluations_list",
        parameters=[PageInput],
        responses={200: EvaluationPageOutput, **refusals(*GUARDED_LISTED)},
        examples=[
            OpenApiExample("One evaluation", value=examples.EVALUATION_PAGE, response_only=True, status_codes=["200"])
        ],
    )
    def get(self, request: Request, collection_id: UUID) -> Response:
        collection = self.get_collection(request, collection_id)
        rows = Evaluation.objects.filter(collection=collection).select_related("reader").defer("rows")
        return page_of(request, rows, EvaluationOutput)


class EvaluationDetailView(CollectionDoor):
    """One evaluation and its rows: per question found, rank, nDCG@10, what was met, latency."""

    @extend_schema(
        summary="One evaluation with a row per question",
        responses={200: EvaluationDetailOutput, **refusals(*GUARDED)},
        examples=[
            OpenApiExample(
                "A question found first, a control refused",
                value=examples.EVALUATION_DETAIL,
                response_only=True,
                status_codes=["200"],
            )
        ],
    )
    def get(self, request: Request, collection_id: UUID, evaluation_id: UUID) -> Response:
        collection = self.get_collection(request, collection_id)
        evaluation = get_object_or_404(Evaluation.objects.filter(collection=collection), pk=evaluation_id)
        return Response(EvaluationDetailOutput(evaluation).data)
