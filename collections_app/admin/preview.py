"""Admin: a document's chunk preview — its stored parser output cut with the collection's settings and
with settings the editor types, side by side. It writes nothing (services/preview.py)."""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import path

from collections_app.exceptions import DomainError
from collections_app.ingestion import ChunkingSettings
from collections_app.ingestion.chunking import StrategyNotBuilt
from collections_app.models import ChunkStrategy, SizeUnit
from collections_app.services.collections import CHUNK_SIZE_RANGE
from collections_app.services.documents import collection_chunking
from collections_app.services.preview import ChunkPreview, document_chunk_preview

# Paragraphs listed per side; the count is always the whole.
SHOWN = 60


class ChunkPreviewForm(forms.Form):
    strategy = forms.ChoiceField(choices=ChunkStrategy.choices)
    size = forms.IntegerField(min_value=CHUNK_SIZE_RANGE[0], max_value=CHUNK_SIZE_RANGE[1])
    unit = forms.ChoiceField(choices=SizeUnit.choices)
    overlap = forms.IntegerField(min_value=0)

    def chunking(self) -> ChunkingSettings:
        data = self.cleaned_data
        return ChunkingSettings(
            strategy=data["strategy"], size=data["size"], overlap=data["overlap"], unit=data["unit"]
        )


class PreviewAdminMixin(admin.ModelAdmin):
    """Mixed into DocumentAdmin: <document>/preview/, read by anybody who may read the document."""

    def get_urls(self):  # type: ignore[no-untyped-def]
        preview = path(
            "<path:object_id>/preview/",
            self.admin_site.admin_view(self.preview_view),
            name="collections_app_document_preview",
        )
        return [preview, *super().get_urls()]

    def preview_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        document = self.get_object(request, unquote(object_id))  # tenant-scoped through get_queryset
        if document is None:
            raise Http404("no such document")
        if not self.has_view_permission(request, document):
            raise PermissionDenied
        current = collection_chunking(collection=document.collection)
        initial = {"strategy": current.strategy, "size": current.size, "unit": current.unit, "overlap": current.overlap}
        form = ChunkPreviewForm(request.GET if "size" in request.GET else None, initial=initial)
        problem = ""
        sides: list[tuple[str, ChunkPreview]] = []
        try:
            sides.append(("The collection's settings", document_chunk_preview(document=document, settings=current)))
        except (DomainError, StrategyNotBuilt) as exc:
            problem = str(exc)
        if not problem and form.is_bound and form.is_valid():
            try:
                sides.append(("Your settings", document_chunk_preview(document=document, settings=form.chunking())))
            except (DomainError, StrategyNotBuilt) as exc:
                form.add_error(
                    getattr(exc, "field", None) if getattr(exc, "field", None) in form.fields else None, str(exc)
                )
        context = {
            **self.admin_site.each_context(request),
            "title": f"Preview chunking of {document.filename}",
            "opts": self.opts,
            "original": document,
            "form": form,
            "problem": problem,
            "sides": [
                {"title": title, "preview": preview, "chunks": preview.chunks[:SHOWN], "more": preview.count > SHOWN}
                for title, preview in sides
            ],
        }
        return TemplateResponse(request, "admin/collections_app/document/preview.html", context)
