"""Measure: several designs of one collection in a scratch store, compared on its golden questions (editors).

POST  /api/manage/collections/{id}/measure                       (202 {"id", "status"}; 409 while one runs)
GET   /api/manage/collections/{id}/measure/{mid}                 (status, progress, variants, floor)
POST  /api/manage/collections/{id}/measure/{mid}/cancel
POST  /api/manage/collections/{id}/measure/{mid}/apply           ({"variant": k, "floor": bool})
"""

from __future__ import annotations

from uuid import UUID

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from collections_app.services.collections import MAX_TOP_N
from doors.api.authentication import request_key, request_role
from doors.api.inputs import StrictInput
from doors.api.schema import BODY, GUARDED, GUARDED_LISTED, refusals
from retrieval.api import examples
from retrieval.api.golden import CollectionDoor
from retrieval.models import Measure
from retrieval.selectors.search import registered_reader
from retrieval.services.golden import DEFAULT_TOP_N
from retrieval.services.measure import (
    MAX_VARIANTS,
    PRESETS,
    measure_apply,
    measure_cancel,
    measure_start,
    windows_embedded,
)


class MeasureInput(StrictInput):
    variants = serializers.ListField(
        child=serializers.DictField(), required=False, max_length=MAX_VARIANTS,
        help_text="Designs to compare, each naming any of chunk_strategy, chunk_size, chunk_size_unit, "
        "chunk_overlap, parent_size, around, parent_return, hybrid_weight, embedding_alias.",
    )  # fmt: skip
    preset = serializers.ChoiceField(choices=sorted(PRESETS), required=False, help_text="A preset grid instead.")
    floor = serializers.FloatField(
        required=False, allow_null=True, help_text="Search every design with this floor (default: unfloored)."
    )
    reader = serializers.CharField(required=False, max_length=200, help_text="The registered reader to search as.")
    top_n = serializers.IntegerField(
        min_value=1,
        max_value=MAX_TOP_N,
        default=DEFAULT_TOP_N,
        help_text="Results read per question (nDCG@10 reads ten).",
    )


class MeasureStarted(serializers.Serializer):
    id = serializers.UUIDField()
    status = serializers.CharField()


class MeasureOutput(serializers.ModelSerializer):
    windows = serializers.SerializerMethodField(
        help_text="Windows (paragraphs) the measure sent to the model in all, and those that took the collection's "
        "stored vector (same model, same embedding text): {embedded, reused}; {} until it is done."
    )

    class Meta:
        model = Measure
        fields = ["id", "status", "progress", "variants", "windows", "floor", "request", "top_n", "error",
                  "requested_by", "created_at", "started_at", "finished_at"]  # fmt: skip

    def get_windows(self, measure: Measure) -> dict[str, int]:
        return windows_embedded(measure.variants)


class ApplyInput(StrictInput):
    variant = serializers.IntegerField(min_value=0, help_text="Which variant (0-based, as listed).")
    floor = serializers.BooleanField(default=False, help_text="Also save the floor read off this variant.")


class Applied(serializers.Serializer):
    collection = serializers.UUIDField()
    stale_documents = serializers.IntegerField(help_text="Documents a re-index must rebuild for the new settings.")
    reindex = serializers.CharField(allow_null=True, help_text="Where to start that re-index; null: nothing stale.")


class MeasureView(CollectionDoor):
    """Start a measure of the collection."""

    @extend_schema(
        summary="Measure several designs of the collection on its golden questions, in a scratch store",
        description="Nothing is written to the collection. Follow it at .../measure/{id}.",
        request=MeasureInput,
        examples=[
            OpenApiExample(
                "Two chunkings",
                value={"variants": [{"chunk_size": 128}, {"chunk_strategy": "fixed"}]},
                request_only=True,
            ),
            OpenApiExample("A preset grid", value={"preset": "chunkings"}, request_only=True),
        ],
        responses={
            202: MeasureStarted,
            **refusals(
                *BODY,
                409,
                conflict="the collection is being measured already",
                conflict_example="handbook is being measured already: wait for it, or cancel it",
            ),
        },
    )
    def post(self, request: Request, collection_id: UUID) -> Response:
        collection = self.get_collection(request, collection_id)
        data = MeasureInput(data=request.data)
        data.is_valid(raise_exception=True)
        key = request_key(request)
        given = data.validated_data
        measure = measure_start(
            collection=collection, variants=given.get("variants"), preset=given.get("preset"),
            floor=given.get("floor"), reader=registered_reader(key=key, name=given.get("reader")),
            top_n=given["top_n"], requested_by=key.name or key.prefix,
        )  # fmt: skip
        return Response({"id": measure.pk, "status": measure.status}, status=status.HTTP_202_ACCEPTED)


class MeasureDetailView(CollectionDoor):
    @extend_schema(
        summary="One measure: status, progress, variants and the floor read off",
        responses={200: MeasureOutput, **refusals(*GUARDED)},
        examples=[
            OpenApiExample("Two chunkings measured", value=examples.MEASURE, response_only=True, status_codes=["200"])
        ],
    )
    def get(self, request: Request, collection_id: UUID, measure_id: UUID) -> Response:
        collection = self.get_collection(request, collection_id)
        measure = get_object_or_404(Measure.objects.filter(collection=collection), pk=measure_id)
        return Response(MeasureOutput(measure).data)


class MeasureCancelView(CollectionDoor):
    @extend_schema(summary="Cancel a measure (its scratch store is removed)", request=None,
                   responses={200: MeasureOutput, **refusals(*GUARDED)})  # fmt: skip
    def post(self, request: Request, collection_id: UUID, measure_id: UUID) -> Response:
        collection = self.get_collection(request, collection_id)
        measure = get_object_or_404(Measure.objects.filter(collection=collection), pk=measure_id)
        return Response(MeasureOutput(measure_cancel(measure=measure)).data)


class MeasureApplyView(CollectionDoor):
    @extend_schema(
        summary="Apply a measured variant: its settings saved, documents marked stale, a re-index to run",
        request=ApplyInput,
        responses={200: Applied, **refusals(*GUARDED_LISTED)},
    )
    def post(self, request: Request, collection_id: UUID, measure_id: UUID) -> Response:
        collection = self.get_collection(request, collection_id)
        measure = get_object_or_404(Measure.objects.filter(collection=collection), pk=measure_id)
        data = ApplyInput(data=request.data)
        data.is_valid(raise_exception=True)
        collection = measure_apply(
            measure=measure, variant=data.validated_data["variant"], with_floor=data.validated_data["floor"],
            role=request_role(request),
        )  # fmt: skip
        stale = collection.documents.filter(stale=True).count()
        return Response({"collection": str(collection.pk), "stale_documents": stale,
                         "reindex": f"/api/manage/collections/{collection.pk}/reindex" if stale else None})  # fmt: skip
