"""Readers: who searches are made for, and the labels the server gives them (admin keys only)."""

from __future__ import annotations

from uuid import UUID

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.models import Reader
from accounts.readers import reader_create, reader_delete, reader_update
from doors.api.authentication import request_key
from doors.api.inputs import StrictInput
from doors.api.pages import ARRAY_PAGE_NOTE, LongListPage, array_page_of
from doors.api.permissions import AdminOnly
from doors.api.schema import BODY, GUARDED, NEW_BODY, refusals
from retrieval.api import examples

NAME_TAKEN = {
    "conflict": "a reader of that name is already registered in this tenant",
    "conflict_example": "a reader named 'ada@example.com' already exists",
}


class ReaderInput(StrictInput):
    # Lengths, NUL bytes and lone surrogates are checked by the service, which names the field.
    name = serializers.CharField(help_text="How searches name this reader, e.g. ada@example.com.")
    labels = serializers.ListField(
        child=serializers.CharField(allow_blank=True),
        required=False,
        max_length=1000,
        help_text="Labels this reader holds; a per-reader paragraph with one of them is readable to it.",
    )


class ReaderOutput(serializers.ModelSerializer):
    class Meta:
        model = Reader
        fields = ["id", "name", "labels", "created_at", "updated_at"]


class ReaderListView(APIView):
    permission_classes = [AdminOnly]

    @extend_schema(
        summary="List the tenant's readers",
        examples=[
            OpenApiExample(
                "A reader of HR and finance paragraphs", value=examples.READER, response_only=True, status_codes=["200"]
            )
        ],
        parameters=[LongListPage],
        responses={200: ReaderOutput(many=True), **refusals(400, 401, 403)},
        description=ARRAY_PAGE_NOTE,
    )
    def get(self, request: Request) -> Response:
        readers = Reader.objects.for_tenant(request_key(request).tenant_id).order_by("name", "id")
        return array_page_of(request, readers, ReaderOutput, page=LongListPage)

    @extend_schema(
        summary="Register a reader and its labels",
        request=ReaderInput,
        examples=[OpenApiExample("A reader of HR paragraphs", value={"name": "ada@example.com", "labels": ["hr"]})],
        responses={201: ReaderOutput, **refusals(*NEW_BODY, 409, **NAME_TAKEN)},
    )
    def post(self, request: Request) -> Response:
        data = ReaderInput(data=request.data)
        data.is_valid(raise_exception=True)
        reader = reader_create(tenant=request_key(request).tenant, **data.validated_data)
        return Response(ReaderOutput(reader).data, status=status.HTTP_201_CREATED)


class ReaderDetailView(APIView):
    permission_classes = [AdminOnly]

    def get_reader(self, request: Request, reader_id: UUID) -> Reader:
        # Another tenant's reader is simply not found.
        return get_object_or_404(Reader.objects.for_tenant(request_key(request).tenant_id), pk=reader_id)

    @extend_schema(
        summary="A reader and its labels",
        examples=[
            OpenApiExample(
                "A reader of HR and finance paragraphs", value=examples.READER, response_only=True, status_codes=["200"]
            )
        ],
        responses={200: ReaderOutput, **refusals(*GUARDED)},
    )
    def get(self, request: Request, reader_id: UUID) -> Response:
        return Response(ReaderOutput(self.get_reader(request, reader_id)).data)

    @extend_schema(
        summary="Rename a reader or change its labels (the next search uses them)",
        request=ReaderInput(partial=True),
        responses={200: ReaderOutput, **refusals(*BODY, 409, **NAME_TAKEN)},
    )
    def patch(self, request: Request, reader_id: UUID) -> Response:
        reader = self.get_reader(request, reader_id)
        data = ReaderInput(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        return Response(ReaderOutput(reader_update(reader=reader, **data.validated_data)).data)

    @extend_schema(summary="Remove a reader", responses={204: None, **refusals(*GUARDED)})
    def delete(self, request: Request, reader_id: UUID) -> Response:
        reader_delete(reader=self.get_reader(request, reader_id))
        return Response(status=status.HTTP_204_NO_CONTENT)
