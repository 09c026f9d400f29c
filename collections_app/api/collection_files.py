"""Collection files through the management API: export a collection as one SQLite file, import one as a new
collection, and follow an import (services/collection_file)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from uuid import UUID

from django.conf import settings
from django.http import FileResponse, Http404
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from collections_app.api import examples
from collections_app.api.views import TenantScopedView
from collections_app.models import CollectionFile, CollectionFileKind
from collections_app.services.collection_file import collection_export, collection_import
from collections_app.services.collections import MAX_NAME_CHARS
from doors.api.authentication import request_key
from doors.api.permissions import EditorOnly, EditorWritesNoAgent
from doors.api.schema import GUARDED, READ, refusals


class CollectionExportView(TenantScopedView):
    permission_classes = [EditorOnly]
    editors_material = "Collection files"

    @extend_schema(
        summary="Download the collection as a collection file (one SQLite file)",
        operation_id="manage_collection_export",
        responses={
            (200, "application/vnd.sqlite3"): OpenApiResponse(
                description="store_meta, agents_chunks (one row per paragraph and agent scoped to the collection, "
                "agent_id null when none is), collection_built (absent when the collection was never built). "
                "The same build downloads as the same bytes."
            ),
            **refusals(*GUARDED),
        },
        description="Every paragraph searches read, with its vector (float32 little-endian), language, page, "
        "section, ordinal, document name, metadata and reader labels: whole paragraphs, which reader labels do not "
        "cut, so it needs an editor or admin key. Never a server path, a key or a question.",
    )
    def get(self, request: Request, collection_id: UUID) -> FileResponse:
        collection = self.get_collection(request, collection_id)
        descriptor, name = tempfile.mkstemp(suffix=".db", dir=settings.KB_STAGING_DIR or None)
        os.close(descriptor)
        path = Path(name)
        try:
            collection_export(collection=collection, path=path)
            file = path.open("rb")
        finally:
            path.unlink()  # the open file is streamed; its name is gone already
        filename = "".join(c if c.isalnum() or c in "-_." else "-" for c in collection.name) + ".db"
        return FileResponse(file, as_attachment=True, filename=filename, content_type="application/vnd.sqlite3")


class CollectionImportInput(serializers.Serializer):
    file = serializers.FileField(help_text="A collection file (SQLite: store_meta, agents_chunks, collection_built).")
    name = serializers.CharField(max_length=MAX_NAME_CHARS, help_text="The new collection's name (unique here).")
    source = serializers.CharField(  # type: ignore[assignment]  # a declared field, not Field.source
        required=False,
        max_length=MAX_NAME_CHARS,
        help_text="Which collection of the file to import, when it holds several.",
    )


class CollectionFileOutput(serializers.Serializer):
    id = serializers.UUIDField()
    collection_id = serializers.UUIDField()
    kind = serializers.CharField()
    status = serializers.CharField(help_text="queued, running, done or error")
    phase = serializers.CharField(
        allow_blank=True,
        help_text="while it runs: check (the file read), embed (embedded again), write (paragraphs written) or "
        "index (keyword index); done counts the paragraphs of that step. Empty before it starts and once finished",
    )
    done = serializers.IntegerField(help_text="paragraphs of the current step done (all of them once finished)")
    total = serializers.IntegerField()
    re_embedded = serializers.BooleanField(
        allow_null=True,
        help_text="true: the file's model is not served here and its paragraphs were embedded again; false: its "
        "vectors were used as they are; null: not known yet",
    )
    error = serializers.CharField(allow_blank=True)


class CollectionImportView(TenantScopedView):
    permission_classes = [EditorWritesNoAgent]
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(
        summary="Create a collection from a collection file",
        operation_id="manage_collection_import",
        request={"multipart/form-data": CollectionImportInput},
        examples=[
            OpenApiExample(
                "An import queued", value=examples.COLLECTION_IMPORT, response_only=True, status_codes=["202"]
            )
        ],
        responses={
            202: CollectionFileOutput,
            **refusals(
                400,
                401,
                403,
                409,
                conflict="a collection of this name exists already in the tenant",
                conflict_example="a collection named 'hr' already exists",
            ),
        },
        description="The whole file is checked first: a file that is not SQLite, of another or newer schema "
        "version, missing a table, with a vector whose length disagrees with its dims, NUL or over-long text, SQL "
        "text in a name, over KB_MAX_COLLECTION_FILE_BYTES or over KB_MAX_IMPORT_PARAGRAPHS / KB_MAX_IMPORT_DOCUMENTS "
        "is a 400 naming the problem, and nothing is created. A file of more than KB_IMPORT_ROWS_CHECKED_IN_REQUEST "
        "paragraphs has its rows checked by the import itself (phase `check`, with progress): a bad row then fails "
        "the import (`status` error, naming the row) and nothing of it is searchable. "
        "Then the collection is created with the file's ranking settings and filled in the background: searchable "
        "only once all of it is in. When the file's model is served here its vectors are used as they are, "
        "otherwise every paragraph is embedded again (follow `done` of `total`).",
    )
    def post(self, request: Request) -> Response:
        data = CollectionImportInput(data=request.data)
        data.is_valid(raise_exception=True)
        key = request_key(request)
        record = collection_import(
            tenant=key.tenant,
            name=data.validated_data["name"],
            content=data.validated_data["file"],
            created_by=key.name or key.prefix,
            source=data.validated_data.get("source"),
        )
        return Response(CollectionFileOutput(record).data, status=status.HTTP_202_ACCEPTED)


class CollectionImportDetailView(TenantScopedView):
    @extend_schema(
        summary="Follow the import of a collection file",
        operation_id="manage_collection_import_read",
        examples=[
            OpenApiExample(
                "An import done", value=examples.COLLECTION_IMPORT_DONE, response_only=True, status_codes=["200"]
            )
        ],
        responses={200: CollectionFileOutput, **refusals(*READ)},
    )
    def get(self, request: Request, collection_id: UUID) -> Response:
        collection = self.get_collection(request, collection_id)
        imports = CollectionFile.objects.filter(collection=collection, kind=CollectionFileKind.IMPORT)
        found = imports.order_by("-created_at").first()
        if found is None:
            raise Http404("this collection was not imported from a collection file")
        return Response(CollectionFileOutput(found).data)
