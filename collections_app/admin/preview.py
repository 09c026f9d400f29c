"""Admin: chunk preview — a document's stored parser output cut with the collection's settings and with settings
the editor types, side by side with their numbers (services/preview.py: it writes nothing). "Apply to the
collection" saves the typed settings through collection_update, the API's own service (its checks, its stale
marking), and the page then offers the re-index.

Reached from a document's page (<document>/preview/) and from its collection's (<collection>/preview/, with a
choice of the collection's documents: admin/reindex.py).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Model, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from accounts.models import Role
from collections_app.models import ChunkStrategy, Collection, Document, SizeUnit
from collections_app.services.collections import (
    CHUNK_SIZE_RANGE,
    MAX_PARENT_SIZE,
    collection_chunking_with,
    collection_update,
)
from collections_app.services.documents import collection_chunking
from collections_app.services.preview import (
    PreviewBlocks,
    chunk_preview_numbers,
    document_chunk_preview,
    document_preview_blocks,
)
from doors.admin.base import ToolPage, object_for_tool
from doors.admin.roles import role_in
from infra.errors import DomainError
from ingestion import ChunkingSettings
from ingestion.chunking import CHUNKING_DEFAULTS, StrategyNotBuilt, overlap_following

# The share of the size an overlap left empty follows (ingestion.chunking.overlap_following).
OVERLAP_SHARE = CHUNKING_DEFAULTS.overlap * 100 // CHUNKING_DEFAULTS.size
# Paragraphs listed per side; the numbers are of every block previewed (a large document's first blocks).
SHOWN = 60

# The form's fields and the collection's (and the API's) names for them.
API_NAMES = {
    "strategy": "chunk_strategy",
    "size": "chunk_size",
    "unit": "chunk_size_unit",
    "overlap": "chunk_overlap",
    "parent_size": "parent_size",
}
FORM_NAMES = {api: name for name, api in API_NAMES.items()}


class ChunkPreviewForm(forms.Form):
    strategy = forms.ChoiceField(choices=ChunkStrategy.choices)
    size = forms.IntegerField(
        min_value=CHUNK_SIZE_RANGE[0],
        max_value=CHUNK_SIZE_RANGE[1],
        help_text="The largest paragraph, in the unit below.",
    )
    unit = forms.ChoiceField(choices=SizeUnit.choices, help_text="What size, overlap and parent size count.")
    # Not required, as in the API: an overlap left empty follows the size (a fifth of it, as the defaults are).
    overlap = forms.IntegerField(
        min_value=0,
        required=False,
        help_text="Repeated from the end of one paragraph at the start of the next, in the same unit. Empty: "
        f"{OVERLAP_SHARE}% of the size, as in the defaults.",
    )
    parent_size = forms.IntegerField(
        required=False,
        min_value=CHUNK_SIZE_RANGE[0],
        max_value=MAX_PARENT_SIZE,
        help_text="Hierarchical only: the largest parent section, in the same unit. Empty: 4 × size.",
    )

    def changes(self) -> dict[str, Any]:
        """The typed settings under the collection's names, as collection_update and the API take them. An
        overlap left as it was is not sent: a new size or unit then brings its own (collection_chunking_with). One
        left empty is the overlap that follows the typed size (the API's rule for a size sent without one)."""
        changes = {
            API_NAMES[name]: self.cleaned_data[name]
            for name in API_NAMES
            if name != "overlap" or name in self.changed_data
        }
        if changes.get("chunk_overlap", 0) is None:
            changes["chunk_overlap"] = overlap_following(self.cleaned_data["size"])
        return changes

    def add_service_error(self, exc: Exception) -> None:
        """A refusal of the service beside the field it names (its API name mapped to this form's)."""
        field = FORM_NAMES.get(getattr(exc, "field", None) or "", getattr(exc, "field", None))
        if isinstance(exc, StrategyNotBuilt):
            field = "strategy"
        self.add_error(field if field in self.fields else None, str(exc))


def _initial(collection: Collection) -> dict[str, Any]:
    current = collection_chunking(collection=collection)
    return {
        "strategy": current.strategy,
        "size": current.size,
        "unit": current.unit,
        "overlap": current.overlap,
        "parent_size": collection.parent_size,  # stored as given: empty stays empty (4 × size)
    }


def _form_values(settings: ChunkingSettings) -> list[tuple[str, Any]]:
    # The form's field names are ChunkingSettings' own.
    values = {name: getattr(settings, name) for name in API_NAMES}
    return [(name, "" if value is None else value) for name, value in values.items()]


def unit_shown(unit: str) -> str:
    """A size unit in words ("characters", "tokens"), as the form's choice names it."""
    return str(dict(SizeUnit.choices).get(unit, unit))


def _side(title: str, document: Document, settings: ChunkingSettings, source: PreviewBlocks) -> dict[str, Any]:
    numbers = chunk_preview_numbers(
        document=document, preview=document_chunk_preview(document=document, settings=settings, source=source)
    )
    paragraphs = [c for c in numbers.chunks if c.kind == "paragraph"]
    return {
        "title": title,
        "settings": settings,
        "unit_shown": unit_shown(settings.unit),
        "numbers": numbers,
        "share_under_50_percent": round(numbers.share_under_50_tokens * 100, 1),
        "chunks": paragraphs[:SHOWN],
        "more": max(len(paragraphs) - SHOWN, 0),
    }


def preview_page(
    model_admin: admin.ModelAdmin,
    request: HttpRequest,
    *,
    collection: Collection,
    document: Document | None,
    may_apply: bool,
    documents: QuerySet[Document] | None = None,
    original: Model | None = None,
) -> HttpResponse:
    """The preview of `document` (None: the collection has no document read yet); a POST applies the settings.

    `documents`: offered as a choice (the collection's page); `original`: the row the page hangs under.
    """
    if request.method == "POST":
        if not may_apply:
            raise PermissionDenied
        form = ChunkPreviewForm(request.POST, initial=_initial(collection))
        if form.is_valid():
            applied = _apply(model_admin, request, collection=collection, form=form)
            if applied:
                query = f"?document={document.pk}" if documents is not None and document is not None else ""
                return HttpResponseRedirect(request.path + query)
    else:
        form = ChunkPreviewForm(request.GET if "size" in request.GET else None, initial=_initial(collection))

    problem = ""
    sides: list[dict[str, Any]] = []
    typed: ChunkingSettings | None = None
    source: PreviewBlocks | None = None
    if document is not None:
        try:
            current = collection_chunking(collection=collection)
            source = document_preview_blocks(document=document)  # read once, cut by both sides
            sides.append(_side("The collection's settings", document, current, source))
        except (DomainError, StrategyNotBuilt) as exc:
            problem = str(exc)
        if not problem and source is not None and form.is_bound and form.is_valid():
            try:
                typed = collection_chunking_with(collection=collection, changes=form.changes())
                sides.append(_side("Your settings", document, typed, source))
            except (DomainError, StrategyNotBuilt) as exc:
                form.add_service_error(exc)
    site = model_admin.admin_site.name
    stale = collection.documents.filter(stale=True).count()
    context = {
        **model_admin.admin_site.each_context(request),
        "title": f"Preview chunking of {document.filename if document else collection.name}",
        "opts": model_admin.opts,
        "original": original or document or collection,
        "collection": collection,
        # The unit the collection's sizes count, as the chunker measures them (not always tokens).
        "collection_unit": unit_shown(collection_chunking(collection=collection).unit),
        "document": document,
        "documents": documents,
        "form": form,
        "problem": problem,
        "sides": sides,
        # A large document is previewed from its beginning: the page says how far.
        "source": source,
        "may_apply": may_apply,
        # What "Apply to the collection" sends: exactly the settings of the side shown as yours (an overlap
        # brought along by a new size included).
        "apply_values": _form_values(typed) if typed is not None and len(sides) == 2 else None,
        "stale": stale,
        "total": collection.documents.count(),
        "reindex_url": reverse(f"{site}:collections_app_collection_reindex", args=[collection.pk]),
        "collection_url": reverse(f"{site}:collections_app_collection_change", args=[collection.pk]),
    }
    return TemplateResponse(request, "admin/collections_app/document/preview.html", context)


def _apply(
    model_admin: admin.ModelAdmin, request: HttpRequest, *, collection: Collection, form: ChunkPreviewForm
) -> bool:
    """Save the typed settings through the API's service; its refusals go beside their field. Saved: True."""
    before = collection.documents.filter(stale=True).count()
    try:
        # A fresh row: the service changes the instance it is given, and a refusal must leave this page's intact.
        collection_update(
            collection=Collection.objects.get(pk=collection.pk),
            role=role_in(request, collection.tenant_id) or Role.VIEWER,
            **form.changes(),
        )
    except (DomainError, StrategyNotBuilt) as exc:
        form.add_service_error(exc)
        return False
    newly = collection.documents.filter(stale=True).count() - before
    if newly:
        said = (
            f"{newly} document(s) are now stale: their paragraphs were built with the old settings. Re-index the "
            "collection to rebuild them; searches answer from the current build until then."
        )
    else:
        said = "No document became stale: nothing a build stores changed."
    model_admin.message_user(request, f"Chunking settings of {collection.name} saved. {said}", messages.SUCCESS)
    return True


class PreviewAdminMixin(admin.ModelAdmin):
    """Mixed into DocumentAdmin: <document>/preview/, read by anybody who may read the document; applying its
    settings to the collection needs an editor of the collection's tenant."""

    tool_pages: tuple[ToolPage, ...] = (ToolPage("<path:object_id>/preview/", "preview_view", "preview"),)

    def preview_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        document = object_for_tool(self, request, object_id, change=False)
        return preview_page(
            self,
            request,
            collection=document.collection,
            document=document,
            may_apply=self.has_change_permission(request, document),
        )
