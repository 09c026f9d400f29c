"""GET /api/manage/collections/{id}/map: the collection's table of contents (services/corpus_map.py)."""

from __future__ import annotations

from uuid import UUID

from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from collections_app.api import examples
from collections_app.api.views import TenantScopedView
from collections_app.selectors.corpus_map import collection_map_for_reader
from collections_app.services.collections import MAX_NAME_CHARS
from doors.api.authentication import request_key
from doors.api.inputs import StrictInput
from doors.api.schema import GUARDED_LISTED, refusals
from infra.db_routing import read_only_call


class MapSectionOutput(serializers.Serializer):
    heading = serializers.CharField()
    paragraphs = serializers.IntegerField(help_text="paragraphs under this heading, its subsections' included")
    direct = serializers.IntegerField(help_text="paragraphs directly under this heading, before any subsection")

    def get_fields(self) -> dict[str, serializers.Field]:
        # A heading holds headings: the same component, referenced from itself in the schema.
        fields = super().get_fields()
        fields["sections"] = MapSectionOutput(many=True, help_text="subsections, in document order")
        return fields


class MapDocumentOutput(serializers.Serializer):
    id = serializers.UUIDField()
    title = serializers.CharField(help_text="the title the parser found, else the file name without its extension")
    filename = serializers.CharField()
    paragraphs = serializers.IntegerField(help_text="readable paragraphs of the document")
    direct = serializers.IntegerField(help_text="paragraphs before the first heading")
    sections = MapSectionOutput(many=True, help_text="top-level headings, in document order")


class MapCollectionRef(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()


class CorpusMapOutput(serializers.Serializer):
    collection = MapCollectionRef()
    reader = serializers.CharField(
        allow_null=True, help_text="the reader the map was made for (per-reader collections)"
    )
    documents = MapDocumentOutput(many=True, help_text="documents with readable paragraphs, by title")
    paragraphs = serializers.IntegerField(help_text="readable paragraphs of the collection")


class CorpusMapInput(StrictInput):
    reader = serializers.CharField(
        required=False,
        max_length=MAX_NAME_CHARS,
        help_text="per-reader collections: the registered reader the map is for (only what it may read is shown); "
        "the key must act for it (403 otherwise)",
    )


class CollectionMapView(TenantScopedView):
    @extend_schema(
        summary="A collection's table of contents: each document's headings with paragraph counts",
        operation_id="manage_collections_map",
        parameters=[
            OpenApiParameter(
                "reader",
                str,
                required=False,
                description="per-reader collections: the registered reader the map is for (needed there); the key "
                "must act for it (reader delegation: 403 otherwise)",
            )
        ],
        examples=[
            OpenApiExample("A policy's headings", value=examples.CORPUS_MAP, response_only=True, status_codes=["200"])
        ],
        responses={200: CorpusMapOutput, **refusals(*GUARDED_LISTED)},
        description="Built from the headings the paragraphs store (no model call); the same paragraphs always "
        "give the same map. A per-reader collection is mapped for a registered `reader`: only headings over "
        "paragraphs it may read appear. Needs any valid key.",
    )
    def get(self, request: Request, collection_id: UUID) -> Response:
        collection = self.get_collection(request, collection_id)
        data = CorpusMapInput(data=request.query_params)
        data.is_valid(raise_exception=True)
        reader, key = data.validated_data.get("reader"), request_key(request)
        # Reads only: from a read replica when one is fresh (infra/db_routing.py).
        corpus_map, _served = read_only_call(
            lambda: collection_map_for_reader(key=key, collection=collection, reader=reader)
        )
        return Response(CorpusMapOutput(corpus_map).data)
