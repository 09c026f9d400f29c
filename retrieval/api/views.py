from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from retrieval.search import EmbeddingWidthMismatch, InvalidFilters, UnknownCollections, resolve_scope, search
from retrieval.services import search_event_record


class SearchView(APIView):
    """One call: cited paragraphs from the collections this key may read."""

    class Input(serializers.Serializer):
        query = serializers.CharField(max_length=4000, trim_whitespace=True)
        collections = serializers.ListField(
            child=serializers.CharField(max_length=200),
            required=False,
            allow_empty=False,
        )
        top_n = serializers.IntegerField(min_value=1, max_value=50, required=False)
        around = serializers.IntegerField(min_value=0, max_value=5, required=False)
        reader_labels = serializers.ListField(child=serializers.CharField(max_length=100), required=False)
        filters = serializers.JSONField(
            required=False,
            help_text='Metadata filters, e.g. {"status": "open", "opened_on": {"gte": "2026-01-01"}, '
            '"n": {"in": [1, 2]}}; operators eq (a bare value), gt, gte, lt, lte, in. Keys: the collections\' '
            "metadata schemas, plus author, created, language and document.",
        )

    class DocumentRef(serializers.Serializer):
        id = serializers.UUIDField()
        filename = serializers.CharField()
        source_uri = serializers.CharField()

    class Result(serializers.Serializer):
        text = serializers.CharField()
        score = serializers.FloatField(allow_null=True)
        collection = serializers.CharField()
        document = serializers.DictField()
        page = serializers.IntegerField(allow_null=True)
        section = serializers.ListField(child=serializers.CharField())
        chunk_id = serializers.UUIDField()
        language = serializers.CharField()
        passages = serializers.IntegerField()

    class Output(serializers.Serializer):
        results = serializers.ListField(child=serializers.DictField())
        refused = serializers.BooleanField(allow_null=True)
        floor = serializers.JSONField()
        around = serializers.IntegerField()
        trace = serializers.ListField(child=serializers.DictField())

    @extend_schema(request=Input, responses=Output)
    def post(self, request: Request) -> Response:
        data = self.Input(data=request.data)
        data.is_valid(raise_exception=True)
        params = data.validated_data
        try:
            scope = resolve_scope(
                key=request.auth,
                names=params.get("collections"),
                reader_labels=params.get("reader_labels"),
            )
        except UnknownCollections as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        try:
            answer = search(
                scope=scope, query=params["query"], top_n=params.get("top_n"), around=params.get("around"),
                filters=params.get("filters"),
            )  # fmt: skip
        except InvalidFilters as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        except EmbeddingWidthMismatch as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        search_event_record(key=request.auth, scope=scope, answer=answer)
        return Response(
            {
                "results": answer.results,
                "refused": answer.refused,
                "floor": answer.floor,
                "around": answer.around,
                "trace": [s.to_json() for s in answer.stages],
            }
        )
