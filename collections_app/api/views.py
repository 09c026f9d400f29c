"""Management API: one view per resource, thin; the services do the work."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.http import FileResponse, Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, PolymorphicProxySerializer, extend_schema
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from collections_app import selectors
from collections_app.api import examples
from collections_app.api.serializers import (
    ArchiveImportOutput,
    BuildOutput,
    ChunkPreviewInput,
    ChunkPreviewOutput,
    CollectionInput,
    CollectionOutput,
    DocumentLabelsInput,
    DocumentOutput,
    DocumentPageOutput,
    DocumentTrashedOutput,
    DocumentUploadInput,
    DocumentUploadOutput,
    DocumentVersionOutput,
    IngestOptionsInput,
    TrashedDocumentOutput,
)
from collections_app.models import Collection
from collections_app.services.archives import archive_import
from collections_app.services.collections import (
    collection_chunking_with,
    collection_create,
    collection_delete,
    collection_update,
)
from collections_app.services.documents import document_create, document_purge, document_restore, document_trash
from collections_app.services.ingest_options import REPARSE_WARNING, document_options_update, ingest_options_validate
from collections_app.services.labels import document_labels_set
from collections_app.services.preview import chunk_preview_numbers, document_chunk_preview
from collections_app.services.reindex import collection_reindex, document_rechunk
from doors.api.authentication import request_key, request_role
from doors.api.inputs import NoInput
from doors.api.pages import ARRAY_PAGE_NOTE, LongListPage, PageInput, array_page_of, page_of
from doors.api.permissions import EditorOnly, EditorWrites, EditorWritesNoAgent
from doors.api.schema import BODY, GUARDED, GUARDED_LISTED, LISTED, NEW_BODY, READ, refusals
from doors.api.throttles import UploadsOnly
from infra.errors import InvalidIngestOptions
from ingestion.formats import family_of


class BuildPage(PageInput):
    default_limit = max_limit = 200  # the newest 200 were all a collection's builds answered before they paged


class TenantScopedView(APIView):
    # Domain errors raised by the services are answered by doors.api.errors, not caught here.
    permission_classes = [EditorWrites]

    def get_collection(self, request: Request, collection_id: UUID) -> Collection:
        return selectors.collection_for_key_or_404(request_key(request), collection_id)


class CollectionListView(TenantScopedView):
    permission_classes = [EditorWritesNoAgent]

    @extend_schema(
        summary="List the collections",
        operation_id="manage_collections_list",
        examples=[
            OpenApiExample(
                "A collection in English and German",
                value=examples.COLLECTION,
                response_only=True,
                status_codes=["200"],
            )
        ],
        parameters=[LongListPage],
        responses={200: CollectionOutput(many=True), **refusals(400, 401)},
        description=ARRAY_PAGE_NOTE,
    )
    def get(self, request: Request) -> Response:
        collections = selectors.collections_with_stale_counts_for(request_key(request)).order_by("name", "id")
        return array_page_of(request, collections, CollectionOutput, page=LongListPage)

    @extend_schema(
        summary="Create a collection",
        request=CollectionInput,
        examples=[
            OpenApiExample(
                "A handbook, chunked by structure",
                value={"name": "handbook", "description": "Staff handbook", "chunk_size": 1000, "around": 1},
                request_only=True,
            )
        ],
        responses={
            201: CollectionOutput,
            **refusals(
                *NEW_BODY,
                409,
                conflict="a collection of that name already exists in this tenant",
                conflict_example="a collection named 'handbook' already exists",
            ),
        },
    )
    def post(self, request: Request) -> Response:
        data = CollectionInput(data=request.data)
        data.is_valid(raise_exception=True)
        collection = collection_create(tenant=request_key(request).tenant, **data.validated_data)
        return Response(CollectionOutput(collection).data, status=status.HTTP_201_CREATED)


class CollectionDetailView(TenantScopedView):
    @extend_schema(
        summary="Read a collection",
        examples=[
            OpenApiExample(
                "A collection in English and German",
                value=examples.COLLECTION,
                response_only=True,
                status_codes=["200"],
            )
        ],
        responses={200: CollectionOutput, **refusals(*READ)},
    )
    def get(self, request: Request, collection_id: UUID) -> Response:
        return Response(CollectionOutput(self.get_collection(request, collection_id)).data)

    @extend_schema(
        summary="Change a collection's settings",
        request=CollectionInput(partial=True),
        responses={
            200: CollectionOutput,
            **refusals(
                *BODY,
                409,
                conflict="another collection of this tenant already has that name",
                conflict_example="a collection named 'handbook' already exists",
            ),
        },
    )
    def patch(self, request: Request, collection_id: UUID) -> Response:
        collection = self.get_collection(request, collection_id)
        data = CollectionInput(instance=collection, data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        collection = collection_update(collection=collection, role=request_role(request), **data.validated_data)
        return Response(CollectionOutput(collection).data)

    @extend_schema(
        summary="Delete a collection and its documents",
        description="Answers 204 (no body) at once, whatever the collection's size. From that answer on the collection "
        "is gone for every reader: no search, list, count, corpus map or export sees it, reading it answers 404, "
        "and its name is free for a new collection. Its documents, paragraphs, keyword index and stored files are "
        "removed in the background, in batches.",
        responses={204: None, **refusals(*GUARDED)},
    )
    def delete(self, request: Request, collection_id: UUID) -> Response:
        collection_delete(collection=self.get_collection(request, collection_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


_UPLOAD_ANSWER = PolymorphicProxySerializer(
    component_name="UploadAnswer",
    serializers=[DocumentUploadOutput, ArchiveImportOutput],
    resource_type_field_name=None,
)


_UPLOAD_CONFLICT = (
    "the same content is held with other labels (or other upload metadata), or the document this file is a new "
    "version of is still being read, or several documents have its name"
)


class DocumentListView(TenantScopedView):
    parser_classes = [MultiPartParser, FormParser]
    throttle_classes = [UploadsOnly]

    @extend_schema(
        summary="List a collection's documents, a page at a time",
        operation_id="manage_collections_documents_list",
        parameters=[PageInput],
        examples=[
            OpenApiExample(
                "One document read, one waiting for a worker",
                value=examples.DOCUMENT_PAGE,
                response_only=True,
                status_codes=["200"],
            )
        ],
        responses={200: DocumentPageOutput, **refusals(*LISTED)},
    )
    def get(self, request: Request, collection_id: UUID) -> Response:
        collection = self.get_collection(request, collection_id)
        return page_of(request, selectors.documents_for(collection), DocumentOutput)

    @extend_schema(
        summary="Upload a document (or a .zip of documents)",
        request={"multipart/form-data": DocumentUploadInput},
        responses={
            202: OpenApiResponse(_UPLOAD_ANSWER, description="accepted: new content, queued for ingestion"),
            200: OpenApiResponse(_UPLOAD_ANSWER, description="the same content was already held"),
            **refusals(
                *BODY,
                409,
                429,
                507,
                conflict=_UPLOAD_CONFLICT,
                conflict_example="this content is already held as handbook.docx (document "
                "2ad19f49-1734-40c2-a455-3ef38789cdf8) with labels ['hr']; change them with PATCH "
                ".../documents/2ad19f49-1734-40c2-a455-3ef38789cdf8/labels",
            ),
        },
        description="A file with new content under the name (or the source_uri) of a document of the collection is "
        "that document's next version (same document_id, 202; `replace`: false keeps it a document of its own). "
        "A .zip imports each member as a document and answers with the list (see ArchiveImportOutput).",
    )
    def post(self, request: Request, collection_id: UUID) -> Response:
        collection = self.get_collection(request, collection_id)
        data = DocumentUploadInput(data=request.data)
        data.is_valid(raise_exception=True)
        upload = data.validated_data["file"]
        if family_of(upload.name) == "archive":
            return _archive_upload(request, collection, data.validated_data)
        result = document_create(
            collection=collection,
            filename=upload.name,
            content=upload,
            source_uri=data.validated_data.get("source_uri", ""),
            uploaded_by=request_key(request).name or request_key(request).prefix,
            ingest_options=ingest_options_validate(data.validated_data.get("ingest_options")),
            labels=data.validated_data.get("labels"),
            replace=data.validated_data["replace"],
            metadata=data.validated_data.get("metadata"),
        )
        body = DocumentUploadOutput(
            {"document_id": result.document.pk, "status": result.document.status, "version": result.version}
        ).data
        return Response(
            body,
            status=status.HTTP_202_ACCEPTED if result.accepted else status.HTTP_200_OK,
        )


def _archive_upload(request: Request, collection: Collection, validated: dict[str, Any]) -> Response:
    if validated.get("labels") is not None:
        raise ValidationError(
            {"labels": ["a .zip import takes no labels; label its documents afterwards (PATCH .../labels)"]}
        )
    if validated.get("metadata") is not None:
        raise ValidationError(
            {"metadata": ["a .zip import takes no metadata; upload its files on their own to give them metadata"]}
        )
    try:  # a zip takes only the options of a whole import (keep_navigation_readmes)
        options = ingest_options_validate(validated.get("ingest_options"), scope="import")
    except InvalidIngestOptions as exc:
        raise ValidationError({"ingest_options": [str(exc)]}) from exc
    upload = validated["file"]
    result = archive_import(
        collection=collection,
        filename=upload.name,
        content=upload,
        uploaded_by=request_key(request).name or request_key(request).prefix,
        source_uri=validated.get("source_uri", ""),
        options=options,
    )
    return Response(
        ArchiveImportOutput(result).data,
        status=status.HTTP_202_ACCEPTED if result.created else status.HTTP_200_OK,
    )


class DocumentDetailView(TenantScopedView):
    @extend_schema(
        summary="Read a document's status",
        examples=[
            OpenApiExample(
                "A document read and searchable", value=examples.DOCUMENT, response_only=True, status_codes=["200"]
            )
        ],
        responses={200: DocumentOutput, **refusals(*READ)},
    )
    def get(self, request: Request, collection_id: UUID, document_id: UUID) -> Response:
        collection = self.get_collection(request, collection_id)
        document = get_object_or_404(selectors.documents_for(collection), pk=document_id)
        return Response(DocumentOutput(document).data)

    @extend_schema(
        summary="Delete a document: it goes to the collection's trash, restorable until `restore_until`",
        examples=[
            OpenApiExample(
                "In the trash, one golden question refers to it",
                value=examples.DOCUMENT_TRASHED,
                response_only=True,
                status_codes=["200"],
            )
        ],
        responses={200: DocumentTrashedOutput, **refusals(*GUARDED)},
        description="The document (with its attachments) moves to the collection's trash in one transaction: at "
        "its commit it is gone from search, the corpus map, exports, evaluations, the document list and every "
        "count. Its paragraphs, edits, labels, versions and stored originals stay, so POST "
        ".../trash/{document_id}/restore brings it back whole; it is purged KB_TRASH_DAYS (default 30) after, or "
        "by DELETE .../trash/{document_id}. The answer names the golden questions that refer to the document. "
        "An ingestion of the document under way stops within seconds. (Before the trash this answered 204 with no "
        "body; any 2xx still means it is deleted.)",
    )
    def delete(self, request: Request, collection_id: UUID, document_id: UUID) -> Response:
        collection = self.get_collection(request, collection_id)
        document = get_object_or_404(selectors.documents_for(collection), pk=document_id)
        trashed = document_trash(document=document, by=key_who(request))
        return Response(
            DocumentTrashedOutput(
                {
                    "document_id": document.pk,
                    "trashed": True,
                    "trashed_at": trashed.document.trashed_at,
                    "restore_until": trashed.restore_until,
                    "golden_questions": trashed.golden_questions,
                }
            ).data
        )


class TrashListView(TenantScopedView):
    permission_classes = [EditorOnly]
    editors_material = "The documents in a collection's trash"

    @extend_schema(
        summary="List a collection's trash: deleted documents, who deleted them and when",
        parameters=[LongListPage],
        examples=[
            # drf-spectacular lists a many=True answer's example itself: one document here is a list of one.
            OpenApiExample(
                "A document deleted by a key", value=examples.TRASH[0], response_only=True, status_codes=["200"]
            )
        ],
        responses={200: TrashedDocumentOutput(many=True), **refusals(*GUARDED_LISTED)},
        description="Most recently deleted first. Each may be restored (POST .../trash/{document_id}/restore) "
        "until `restore_until`, then it is purged. " + ARRAY_PAGE_NOTE,
    )
    def get(self, request: Request, collection_id: UUID) -> Response:
        collection = self.get_collection(request, collection_id)
        return array_page_of(request, selectors.trash_for(collection), TrashedDocumentOutput, page=LongListPage)


class TrashRestoreView(TenantScopedView):
    @extend_schema(
        summary="Restore a deleted document from the trash, whole",
        request=None,
        responses={
            200: DocumentOutput,
            **refusals(
                *GUARDED,
                409,
                conflict="the same file was uploaded again after the deletion: the collection holds it as another "
                "document",
                conflict_example="leave.txt cannot be restored: the collection holds the same file again as leave.txt "
                "(document 0d6c1f52-...); delete that one first, or leave this one in the trash",
            ),
        },
        description="Its paragraphs (with their edits), labels, versions, attachments and golden question "
        "references come back in one transaction: it answers searches again at the commit.",
    )
    def post(self, request: Request, collection_id: UUID, document_id: UUID) -> Response:
        collection = self.get_collection(request, collection_id)
        document = document_restore(document=selectors.trashed_document_or_404(collection, document_id))
        return Response(DocumentOutput(document).data)


class TrashDocumentView(TenantScopedView):
    @extend_schema(
        summary="Purge a document from the trash now, for good",
        responses={204: None, **refusals(*GUARDED)},
        description="The real deletion: its rows, paragraphs, keyword postings, versions and attachments in one "
        "transaction, its stored originals after it. Builds and search audits stay. Cannot be undone.",
    )
    def delete(self, request: Request, collection_id: UUID, document_id: UUID) -> Response:
        collection = self.get_collection(request, collection_id)
        document_purge(document=selectors.trashed_document_or_404(collection, document_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


def key_who(request: Request) -> str:
    # A key's name and its public prefix: never the secret.
    key = request_key(request)
    return f"key {key.name or key.prefix}"[:200]


class DocumentVersionListView(TenantScopedView):
    @extend_schema(
        summary="List a document's versions, newest first",
        parameters=[LongListPage],
        responses={200: DocumentVersionOutput(many=True), **refusals(*LISTED)},
        examples=[
            OpenApiExample(
                # drf-spectacular lists a many=True answer's example itself: one version here is a list of one.
                "The current version",
                value=examples.DOCUMENT_VERSIONS[0],
                response_only=True,
                status_codes=["200"],
            )
        ],
        description="Each upload of a changed file under the document's name (or source) is its next version. "
        "The `current` one answers; a newer one `reading` or in `error` leaves it answering. An original is at "
        ".../versions/{number}/original (editor or admin key). " + ARRAY_PAGE_NOTE,
    )
    def get(self, request: Request, collection_id: UUID, document_id: UUID) -> Response:
        collection = self.get_collection(request, collection_id)
        document = get_object_or_404(selectors.documents_for(collection), pk=document_id)
        versions = selectors.document_versions_for(document)
        return array_page_of(request, versions, DocumentVersionOutput, page=LongListPage)


class DocumentVersionOriginalView(TenantScopedView):
    permission_classes = [EditorOnly]
    editors_material = "A document's originals"

    @extend_schema(
        summary="Download the original file of one version of a document",
        responses={
            (200, "application/octet-stream"): OpenApiResponse(description="the file, under its own name"),
            **refusals(*GUARDED),
        },
        description="Any version's original, the retired ones included, under the name it was uploaded by. Needs "
        "an editor or admin key: an original is the whole file, which reader labels do not cut.",
    )
    def get(self, request: Request, collection_id: UUID, document_id: UUID, number: int) -> FileResponse:
        collection = self.get_collection(request, collection_id)
        document = get_object_or_404(selectors.documents_for(collection), pk=document_id)
        version = get_object_or_404(selectors.document_versions_for(document), number=number)
        try:
            handle = version.file.open("rb")
        except (OSError, ValueError):
            raise Http404(f"the original of version {number} of {document.filename} is no longer stored") from None
        # Under the name it was uploaded by, never the path it is stored at.
        return FileResponse(
            handle, as_attachment=True, filename=version.filename, content_type="application/octet-stream"
        )


class DocumentIngestOptionsView(TenantScopedView):
    @extend_schema(
        summary="Change a document's ingest options (re-parses it)",
        request=IngestOptionsInput,
        responses={
            202: DocumentOutput,
            **refusals(
                *BODY,
                409,
                conflict='re-parsing loses manual chunk edits, so it needs "confirm_reparse": true',
                conflict_example=REPARSE_WARNING,
            ),
        },
    )
    def patch(self, request: Request, collection_id: UUID, document_id: UUID) -> Response:
        collection = self.get_collection(request, collection_id)
        document = get_object_or_404(selectors.documents_for(collection), pk=document_id)
        data = IngestOptionsInput(data=request.data)
        data.is_valid(raise_exception=True)
        changes = {k: v for k, v in data.validated_data.items() if k != "confirm_reparse"}
        document_options_update(
            document=document, changes=changes, confirm_reparse=data.validated_data["confirm_reparse"]
        )
        document = selectors.documents_for(collection).get(pk=document.pk)
        return Response(DocumentOutput(document).data, status=status.HTTP_202_ACCEPTED)


class DocumentLabelsView(TenantScopedView):
    @extend_schema(
        summary="Change a document's reader labels (its paragraphs at once; no re-parse, no re-embedding)",
        request=DocumentLabelsInput,
        examples=[OpenApiExample("Readable by HR only", value={"labels": ["hr"]}, request_only=True)],
        responses={200: DocumentOutput, **refusals(*BODY)},
        description="Per-reader collections: a reader holding one of the labels may read the document's paragraphs; "
        "[] makes them readable by every reader. Labels on a collection that is not per-reader are a 400. "
        "Needs an editor or admin key; adding a label or clearing them (more readers read it) needs an admin key.",
    )
    def patch(self, request: Request, collection_id: UUID, document_id: UUID) -> Response:
        collection = self.get_collection(request, collection_id)
        document = get_object_or_404(selectors.documents_for(collection), pk=document_id)
        data = DocumentLabelsInput(data=request.data)
        data.is_valid(raise_exception=True)
        document_labels_set(document=document, labels=data.validated_data["labels"], role=request_role(request))
        document = selectors.documents_for(collection).get(pk=document.pk)
        return Response(DocumentOutput(document).data)


class BuildListView(TenantScopedView):
    @extend_schema(
        summary="List a collection's builds, newest first",
        examples=[
            OpenApiExample(
                "An upload's build: nothing refused", value=examples.BUILD, response_only=True, status_codes=["200"]
            )
        ],
        parameters=[BuildPage],
        responses={200: BuildOutput(many=True), **refusals(*LISTED)},
        description=ARRAY_PAGE_NOTE,
    )
    def get(self, request: Request, collection_id: UUID) -> Response:
        collection = self.get_collection(request, collection_id)
        return array_page_of(request, selectors.builds_for(collection).order_by("-built_at", "id"), BuildOutput,
                             page=BuildPage)  # fmt: skip


class DocumentChunkPreviewView(TenantScopedView):
    @extend_schema(
        summary="Preview the paragraphs some chunking settings would cut from a document (writes nothing)",
        request=ChunkPreviewInput,
        responses={200: ChunkPreviewOutput, **refusals(*BODY)},
        description="The document's stored parser output cut with the collection's settings, each one given "
        "here replacing the collection's. Nothing is saved, parsed or embedded. A large document is previewed "
        "from its beginning: `blocks_previewed` of its `blocks_total` parser blocks are cut.",
    )
    def post(self, request: Request, collection_id: UUID, document_id: UUID) -> Response:
        collection = self.get_collection(request, collection_id)
        document = get_object_or_404(selectors.documents_for(collection), pk=document_id)
        data = ChunkPreviewInput(data=request.data)
        data.is_valid(raise_exception=True)
        settings = collection_chunking_with(collection=collection, changes=dict(data.validated_data))
        numbers = chunk_preview_numbers(
            document=document, preview=document_chunk_preview(document=document, settings=settings)
        )
        return Response(ChunkPreviewOutput({"settings": settings, **numbers.__dict__}).data)


class DocumentRechunkView(TenantScopedView):
    @extend_schema(
        summary="Re-chunk a document with the collection's current settings (no re-parse)",
        request=None,
        responses={
            202: DocumentOutput,
            **refusals(
                *GUARDED,
                409,
                conflict="the document is being read (queued or parsing), or has no stored parser output",
                conflict_example="handbook.docx is being read; re-chunk it once it is done",
            ),
        },
        description="Queued: the stored parser output is cut and embedded again; the new paragraphs replace the "
        "old in one transaction (searchable until then).",
    )
    def post(self, request: Request, collection_id: UUID, document_id: UUID) -> Response:
        collection = self.get_collection(request, collection_id)
        document = get_object_or_404(selectors.documents_for(collection), pk=document_id)
        NoInput(data=request.data).is_valid(raise_exception=True)
        document_rechunk(document=document)
        document = selectors.documents_for(collection).get(pk=document.pk)
        return Response(DocumentOutput(document).data, status=status.HTTP_202_ACCEPTED)


class CollectionReindexView(TenantScopedView):
    @extend_schema(
        summary="Re-index every document of a collection in the background (resumes a stopped one)",
        request=None,
        responses={202: CollectionOutput, **refusals(*GUARDED)},
        description="Documents are rebuilt with the current settings and model beside the paragraphs searches "
        "read; one transaction switches the whole collection over. Progress: `reindex` on the collection.",
    )
    def post(self, request: Request, collection_id: UUID) -> Response:
        collection = self.get_collection(request, collection_id)
        NoInput(data=request.data).is_valid(raise_exception=True)
        collection = collection_reindex(collection=collection)
        collection = self.get_collection(request, collection.pk)
        return Response(CollectionOutput(collection).data, status=status.HTTP_202_ACCEPTED)
