"""Management API: one view per resource, thin; the services do the work."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, PolymorphicProxySerializer, extend_schema
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from collections_app import selectors
from collections_app.api.permissions import EditorWrites
from collections_app.api.serializers import (
    ArchiveImportOutput,
    BuildOutput,
    CollectionInput,
    CollectionOutput,
    DocumentListInput,
    DocumentOutput,
    DocumentUploadInput,
    DocumentUploadOutput,
    IngestOptionsInput,
)
from collections_app.ingestion import UnsupportedFile
from collections_app.ingestion.chunking import StrategyNotBuilt
from collections_app.ingestion.formats import family_of
from collections_app.models import Collection
from collections_app.services.archives import ArchiveRefused, InsufficientStorage, archive_import
from collections_app.services.collections import (
    CollectionNameTaken,
    InvalidSettings,
    collection_create,
    collection_delete,
    collection_update,
)
from collections_app.services.documents import FileTooLarge, document_create
from collections_app.services.ingest_options import (
    InvalidIngestOptions,
    ReparseNeedsConfirmation,
    document_options_update,
    ingest_options_validate,
)


class TenantScopedView(APIView):
    permission_classes = [EditorWrites]

    def get_collection(self, request: Request, collection_id) -> Collection:  # type: ignore[no-untyped-def]
        # Another tenant's id is simply not found: 404, never 403.
        return get_object_or_404(selectors.collections_for(request.auth.tenant), pk=collection_id)


def _settings_error(exc: Exception) -> Response:
    return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)


class CollectionListView(TenantScopedView):
    @extend_schema(responses=CollectionOutput(many=True))
    def get(self, request: Request) -> Response:
        collections = selectors.collections_for(request.auth.tenant)
        return Response(CollectionOutput(collections, many=True).data)

    @extend_schema(
        request=CollectionInput,
        responses={
            201: CollectionOutput,
            409: OpenApiResponse(description="name taken"),
        },
    )
    def post(self, request: Request) -> Response:
        data = CollectionInput(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            collection = collection_create(tenant=request.auth.tenant, **data.validated_data)
        except CollectionNameTaken as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        except (StrategyNotBuilt, InvalidSettings) as exc:
            return _settings_error(exc)
        return Response(CollectionOutput(collection).data, status=status.HTTP_201_CREATED)


class CollectionDetailView(TenantScopedView):
    @extend_schema(responses=CollectionOutput)
    def get(self, request: Request, collection_id) -> Response:  # type: ignore[no-untyped-def]
        return Response(CollectionOutput(self.get_collection(request, collection_id)).data)

    @extend_schema(request=CollectionInput, responses=CollectionOutput)
    def patch(self, request: Request, collection_id) -> Response:  # type: ignore[no-untyped-def]
        collection = self.get_collection(request, collection_id)
        data = CollectionInput(instance=collection, data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        try:
            collection = collection_update(collection=collection, **data.validated_data)
        except CollectionNameTaken as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        except (StrategyNotBuilt, InvalidSettings) as exc:
            return _settings_error(exc)
        return Response(CollectionOutput(collection).data)

    @extend_schema(responses={204: None})
    def delete(self, request: Request, collection_id) -> Response:  # type: ignore[no-untyped-def]
        collection_delete(collection=self.get_collection(request, collection_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


_UPLOAD_ANSWER = PolymorphicProxySerializer(
    component_name="UploadAnswer",
    serializers=[DocumentUploadOutput, ArchiveImportOutput],
    resource_type_field_name=None,
)


class DocumentListView(TenantScopedView):
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(parameters=[DocumentListInput], responses=DocumentOutput(many=True))
    def get(self, request: Request, collection_id) -> Response:  # type: ignore[no-untyped-def]
        collection = self.get_collection(request, collection_id)
        page = DocumentListInput(data=request.query_params)
        page.is_valid(raise_exception=True)
        limit, offset = page.validated_data["limit"], page.validated_data["offset"]
        documents = selectors.documents_for(collection)
        return Response(
            {
                "count": documents.count(),
                "limit": limit,
                "offset": offset,
                "results": DocumentOutput(documents[offset : offset + limit], many=True).data,
            }
        )

    @extend_schema(
        request={"multipart/form-data": DocumentUploadInput},
        responses={202: _UPLOAD_ANSWER, 200: _UPLOAD_ANSWER},
        description="A .zip imports each member as a document and answers with the list (see ArchiveImportOutput).",
    )
    def post(self, request: Request, collection_id) -> Response:  # type: ignore[no-untyped-def]
        collection = self.get_collection(request, collection_id)
        data = DocumentUploadInput(data=request.data)
        data.is_valid(raise_exception=True)
        upload = data.validated_data["file"]
        if family_of(upload.name) == "archive":
            return _archive_upload(request, collection, data.validated_data)
        try:
            options = ingest_options_validate(data.validated_data.get("ingest_options"))
        except InvalidIngestOptions as exc:
            raise ValidationError({"ingest_options": [str(exc)]}) from exc
        try:
            result = document_create(
                collection=collection,
                filename=upload.name,
                content=upload,
                source_uri=data.validated_data.get("source_uri", ""),
                uploaded_by=request.auth.name or request.auth.prefix,
                ingest_options=options,
            )
        except UnsupportedFile as exc:
            raise ValidationError({"file": [str(exc)]}) from exc
        except FileTooLarge as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
        body = DocumentUploadOutput({"document_id": result.document.pk, "status": result.document.status}).data
        return Response(
            body,
            status=status.HTTP_202_ACCEPTED if result.accepted else status.HTTP_200_OK,
        )


def _archive_upload(request: Request, collection: Collection, validated: dict) -> Response:  # type: ignore[type-arg]
    if validated.get("ingest_options") not in (None, "", {}):
        raise ValidationError(
            {"ingest_options": ["a .zip import takes no ingest options; upload a file on its own to set them"]}
        )
    upload = validated["file"]
    try:
        result = archive_import(
            collection=collection,
            filename=upload.name,
            content=upload,
            uploaded_by=request.auth.name or request.auth.prefix,
            source_uri=validated.get("source_uri", ""),
        )
    except (UnsupportedFile, ArchiveRefused) as exc:
        raise ValidationError({"file": [str(exc)]}) from exc
    except FileTooLarge as exc:
        return Response({"detail": str(exc)}, status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
    except InsufficientStorage as exc:
        return Response({"detail": str(exc)}, status=status.HTTP_507_INSUFFICIENT_STORAGE)
    return Response(
        ArchiveImportOutput(result).data,
        status=status.HTTP_202_ACCEPTED if result.created else status.HTTP_200_OK,
    )


class DocumentDetailView(TenantScopedView):
    @extend_schema(responses=DocumentOutput)
    def get(self, request: Request, collection_id, document_id) -> Response:  # type: ignore[no-untyped-def]
        collection = self.get_collection(request, collection_id)
        document = get_object_or_404(selectors.documents_for(collection), pk=document_id)
        return Response(DocumentOutput(document).data)


class DocumentIngestOptionsView(TenantScopedView):
    @extend_schema(
        request=IngestOptionsInput, responses={202: DocumentOutput, 409: OpenApiResponse(description="confirm")}
    )
    def patch(self, request: Request, collection_id, document_id) -> Response:  # type: ignore[no-untyped-def]
        collection = self.get_collection(request, collection_id)
        document = get_object_or_404(selectors.documents_for(collection), pk=document_id)
        data = IngestOptionsInput(data=request.data)
        data.is_valid(raise_exception=True)
        changes = {k: v for k, v in data.validated_data.items() if k != "confirm_reparse"}
        try:
            document_options_update(
                document=document, changes=changes, confirm_reparse=data.validated_data["confirm_reparse"]
            )
        except InvalidIngestOptions as exc:
            raise ValidationError({"detail": str(exc)}) from exc
        except ReparseNeedsConfirmation as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        document = selectors.documents_for(collection).get(pk=document.pk)
        return Response(DocumentOutput(document).data, status=status.HTTP_202_ACCEPTED)


class BuildListView(TenantScopedView):
    @extend_schema(responses=BuildOutput(many=True))
    def get(self, request: Request, collection_id) -> Response:  # type: ignore[no-untyped-def]
        collection = self.get_collection(request, collection_id)
        return Response(BuildOutput(selectors.builds_for(collection)[:200], many=True).data)
