"""PATCH .../documents/{document_id}/language: correct a document's language (no re-parse, no re-embedding)."""

from __future__ import annotations

from uuid import UUID

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from collections_app import selectors
from collections_app.api.serializers import DocumentOutput
from collections_app.api.views import TenantScopedView
from collections_app.services.languages import document_language_set, document_language_unpin
from doors.api.inputs import StrictInput
from doors.api.schema import BODY, refusals
from ingestion.languages import SH, language_name


class DocumentLanguageInput(StrictInput):
    language = serializers.CharField(
        max_length=20,
        allow_null=True,
        help_text=f"a language code: en, de, sh ({language_name(SH)}, either script), mk, bg, ru, he, ...; "
        "null: back to detected languages",
    )


class DocumentLanguageOutput(DocumentOutput):
    language_note = serializers.CharField(
        allow_null=True,
        read_only=True,
        help_text="after null: whether the detected languages came back at once, or wait for the next build",
    )

    class Meta(DocumentOutput.Meta):
        fields = [*DocumentOutput.Meta.fields, "language_note"]


class DocumentLanguageView(TenantScopedView):
    @extend_schema(
        summary="Correct a document's language (its paragraphs' keyword index follows; nothing is re-embedded)",
        request=DocumentLanguageInput,
        examples=[
            OpenApiExample("German", value={"language": "de"}, request_only=True),
            OpenApiExample("Detected again", value={"language": None}, request_only=True),
        ],
        responses={
            200: DocumentLanguageOutput,
            **refusals(
                *BODY,
                409,
                conflict="the document is still being read (queued or parsing)",
                conflict_example="handbook.docx is being read (parsing); set its language once it is done",
            ),
        },
        description="The document and every paragraph it has take the language at once, in one transaction: "
        "each paragraph's keyword index is rebuilt with that language's stemmer. Nothing is parsed or embedded "
        "again. The language is pinned (`language_pinned`): re-chunks, re-indexes and re-ingests keep it for the "
        "document and every paragraph, a section in another language included. `null` unpins it: the paragraphs "
        "get their detected labels back at once when those were kept, else at the document's next build "
        "(`language_note` says which). Needs an editor or admin key.",
    )
    def patch(self, request: Request, collection_id: UUID, document_id: UUID) -> Response:
        collection = self.get_collection(request, collection_id)
        document = get_object_or_404(selectors.documents_for(collection), pk=document_id)
        data = DocumentLanguageInput(data=request.data)
        data.is_valid(raise_exception=True)
        note = None
        if data.validated_data["language"] is None:
            note = document_language_unpin(document=document).note
        else:
            document_language_set(document=document, language=data.validated_data["language"])
        answer = selectors.documents_for(collection).get(pk=document.pk)
        setattr(answer, "language_note", note)  # noqa: B010 (an attribute of the answer, not the model)
        return Response(DocumentLanguageOutput(answer).data)
