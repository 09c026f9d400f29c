"""A collection's judge: read by any key of the tenant, set and removed by editors."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.conf import settings
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from collections_app import selectors
from collections_app.models import Collection
from doors.api.authentication import request_key
from doors.api.inputs import StrictInput
from doors.api.permissions import EditorWrites
from doors.api.schema import BODY, GUARDED, READ, refusals
from retrieval.api import examples
from retrieval.models import CollectionJudge
from retrieval.services.judges import JUDGE_MAX_TIMEOUT, collection_judge_remove, collection_judge_set, judge_warnings


class JudgeInput(StrictInput):
    enabled = serializers.BooleanField(default=True, help_text="Ask the judge after retrieval (needs KB_LLM_URL).")
    # Not trimmed: DRF would check the length after trimming, and the schema's maxLength counts every character.
    model = serializers.CharField(
        max_length=200,
        required=False,
        default="",
        allow_blank=True,
        trim_whitespace=False,
        help_text="The chat model; empty: KB_LLM_MODEL.",
    )
    timeout = serializers.FloatField(
        min_value=0.001,
        max_value=JUDGE_MAX_TIMEOUT,
        required=False,
        default=None,
        allow_null=True,
        help_text="Seconds to wait; past it `refused` is null (never false). Null: KB_LLM_TIMEOUT.",
    )
    prompt = serializers.CharField(
        max_length=8000,
        required=False,
        default="",
        allow_blank=True,
        trim_whitespace=False,
        help_text="Instructions; empty: built-in.",
    )

    def to_internal_value(self, data: Any) -> Any:
        # DRF's FloatField takes true as 1.0: a timeout of `true` is a mistake, not one second.
        if isinstance(data, dict) and isinstance(data.get("timeout"), bool):
            raise serializers.ValidationError({"timeout": ["a number of seconds, not true or false"]})
        return super().to_internal_value(data)


class JudgeOutput(serializers.Serializer):
    collection = serializers.CharField()
    judge = serializers.BooleanField(help_text="true: the collection's searches are judged and may be refused")
    model = serializers.CharField(allow_blank=True)
    timeout = serializers.FloatField(allow_null=True)
    prompt = serializers.CharField(allow_blank=True)
    endpoint_configured = serializers.BooleanField(
        help_text="whether KB_LLM_URL is set: without it a judged collection's searches answer refused: null"
    )
    warnings = serializers.ListField(
        child=serializers.CharField(),
        help_text="what keeps this judge from running, e.g. an enabled judge while KB_LLM_URL is not set; "
        "[] when nothing does",
    )


def _answer(collection: Collection, judge: CollectionJudge | None) -> dict[str, Any]:
    return {
        "collection": collection.name,
        "judge": bool(judge and judge.enabled),
        "model": judge.model if judge else "",
        "timeout": judge.timeout if judge else None,
        "prompt": judge.prompt if judge else "",
        "endpoint_configured": bool(settings.KB_LLM_URL),
        "warnings": judge_warnings(judge),
    }


class CollectionJudgeView(APIView):
    permission_classes = [EditorWrites]

    def get_collection(self, request: Request, collection_id: UUID) -> Collection:
        return selectors.collection_for_key_or_404(request_key(request), collection_id)

    @extend_schema(
        summary="A collection's judge",
        description="Whether the collection's searches are judged (and may be refused), with the judge's model, "
        "timeout and prompt.",
        examples=[
            OpenApiExample("A judge with a short wait", value=examples.JUDGE, response_only=True, status_codes=["200"])
        ],
        responses={200: JudgeOutput, **refusals(*READ)},
    )
    def get(self, request: Request, collection_id: UUID) -> Response:
        collection = self.get_collection(request, collection_id)
        return Response(_answer(collection, CollectionJudge.objects.filter(collection=collection).first()))

    @extend_schema(
        summary="Give a collection a judge (or replace its settings)",
        description="After retrieval the chat model behind KB_LLM_URL is asked whether the results answer the "
        "question: `refused` false (approved), true (results withheld, reason judge_refused) or null (it could "
        "not say: no endpoint, an error or a timeout).",
        request=JudgeInput,
        examples=[
            OpenApiExample("A judge with a short wait", value={"enabled": True, "timeout": 5}, request_only=True)
        ],
        responses={200: JudgeOutput, **refusals(*BODY)},
    )
    def put(self, request: Request, collection_id: UUID) -> Response:
        collection = self.get_collection(request, collection_id)
        data = JudgeInput(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(_answer(collection, collection_judge_set(collection=collection, **data.validated_data)))

    @extend_schema(
        summary="Remove a collection's judge",
        description="The collection's searches can no longer be refused: `refused` is null.",
        responses={204: None, **refusals(*GUARDED)},
    )
    def delete(self, request: Request, collection_id: UUID) -> Response:
        collection_judge_remove(collection=self.get_collection(request, collection_id))
        return Response(status=status.HTTP_204_NO_CONTENT)
