"""PATCH .../documents/{document_id}/language: correct a document's language (no re-parse, no re-embedding)."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from collections_app import selectors
from collections_app.api.schema import refusals
from collections_app.api.serializers import DocumentOutput
from collections_app.api.views import TenantScopedView
from collections_app.services.languages import document_language_set


class DocumentLanguageInput(serializers.Serializer):
    language = serializers.CharField(
        max_length=20,
        help_text="a language code: en, de, sh (Serbian, Croatian and Bosnian, either script), mk, bg, ru, he, ...",
    )


class DocumentLanguageView(TenantScopedView):
    @extend_schema(
        summary="Correct a document's language (its paragraphs' keyword index follows; nothing is re-embedded)",
        request=DocumentLanguageInput,
        examples=[OpenApiExample("German", value={"language": "de"}, request_only=True)],
        responses={
            200: DocumentOutput,
            **refusals(400, 401, 403, 404, 409, 413, 415, conflict="the document is still being read"),
        },
        description="The document and every paragraph it has take the language at once, in one transaction: "
        "each paragraph's keyword index is rebuilt with that language's stemmer. Nothing is parsed or embedded "
        "again. Needs an editor or admin key.",
    )
    def patch(self, request: Request, collection_id, document_id) -> Response:  # type: ignore[no-untyped-def]
        collection = self.get_collection(request, collection_id)
        document = get_object_or_404(selectors.documents_for(collection), pk=document_id)
        data = DocumentLanguageInput(data=request.data)
        data.is_valid(raise_exception=True)
        document_language_set(document=document, language=data.validated_data["language"])
        return Response(DocumentOutput(selectors.documents_for(collection).get(pk=document.pk)).data)
