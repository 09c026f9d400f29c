"""Reads: querysets scoped to the caller's tenant, a collection's languages (languages.py) and its heading
tree (corpus_map.py). Writes are services; services may read through here, never the other way."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from django.db.models import Count, Q, QuerySet
from django.http import Http404
from django.shortcuts import get_object_or_404

from accounts.models import ApiKey, Tenant
from collections_app.models import Build, Collection, Document, DocumentVersion
from ingestion.titles import title_from_filename

from .languages import language_counts


def collections_for(tenant: Tenant | uuid.UUID) -> QuerySet[Collection]:
    return Collection.objects.for_tenant(tenant)


def collections_for_key(key: ApiKey) -> QuerySet[Collection]:
    """Every collection a key may reach, at every door (search, MCP, the management API): an agent's key
    its agent's collections, any other key every collection of its tenant. Naming collections narrows this
    set; nothing widens it."""
    allowed = collections_for(key.tenant_id)
    return allowed.filter(agents=key.agent_id) if key.agent_id is not None else allowed


def collection_for_key_or_404(key: ApiKey, collection_id: object) -> Collection:
    """The collection a management door's URL names, as the key reaches it (collections_for_key, the one scope
    rule): another tenant's id, or a collection outside an agent key's set, is simply not found (404, never 403)."""
    return get_object_or_404(collections_for_key(key), pk=collection_id)


def collections_with_stale_counts_for(key: ApiKey) -> QuerySet[Collection]:
    """The collections a key may reach, each with how many of its documents are stale (and its paragraphs
    per language), in one query."""
    return collections_for_key(key).annotate(
        # The trash's documents left out by name: a join does not go through Document.objects.
        stale_count=Count("documents", filter=Q(documents__stale=True, documents__trashed_at__isnull=True)),
        language_counts=language_counts(),
    )


# Columns no answer about a document shows: its parser output, megabytes for a large document. Read only by
# what cuts it (ingestion, re-index, the preview's first blocks), never by a page or a list.
UNSHOWN_DOCUMENT_COLUMNS = ("blocks",)
# And the columns a list of documents (the admin's, a choice of documents) shows nothing of.
UNLISTED_DOCUMENT_COLUMNS = (*UNSHOWN_DOCUMENT_COLUMNS, "metadata", "warnings", "ingest_options")


def documents_for(collection: Collection) -> QuerySet[Document]:
    """A collection's documents as the API shows them, newest first: without their parser output, and with
    their paragraph count as stored (`chunk_count`, kept by triggers), never counted per row."""
    # cast: the shared TenantQuerySet manager is typed for Model, not for each model that uses it.
    documents = (
        Document.objects.for_tenant(collection.tenant_id)
        .filter(collection=collection)
        .defer(*UNSHOWN_DOCUMENT_COLUMNS)
        .order_by("-created_at", "id")
    )
    return cast("QuerySet[Document]", documents)


def trash_for(collection: Collection) -> QuerySet[Document]:
    """A collection's trash, most recently deleted first: documents deleted on their own (an attachment trashed
    with its document is restored and purged with it, and not listed apart)."""
    documents = (
        Document.all_objects.for_tenant(collection.tenant_id)
        .trashed()
        .filter(collection=collection)
        .exclude(parent__trashed_at__isnull=False)
        .defer(*UNLISTED_DOCUMENT_COLUMNS)
        .select_related("trashed_by")
        .order_by("-trashed_at", "id")
    )
    return cast("QuerySet[Document]", documents)


def trashed_document_or_404(collection: Collection, document_id: uuid.UUID | str) -> Document:
    """One document of the collection's trash (attachments included), or Http404."""
    document = (
        Document.all_objects.trashed()
        .filter(collection=collection, tenant_id=collection.tenant_id, pk=document_id)
        .defer(*UNSHOWN_DOCUMENT_COLUMNS)
        .first()
    )
    if document is None:
        raise Http404("no such document in this collection's trash")
    return document


def document_versions_for(document: Document) -> QuerySet[DocumentVersion]:
    """A document's versions, newest first (the tenant's own: the document was found through it)."""
    versions = DocumentVersion.objects.for_tenant(document.tenant_id).filter(document=document).order_by("-number")
    return cast("QuerySet[DocumentVersion]", versions)


def builds_for(collection: Collection) -> QuerySet[Build]:
    return Build.objects.for_tenant(collection.tenant_id).filter(collection=collection).order_by("-built_at")


def document_title(document: Document) -> str:
    """A document's title for people (the corpus map): the title the parser found, else the file's name."""
    title = document.metadata.get("title") if isinstance(document.metadata, dict) else None
    return str(title) if title else Path(document.filename).stem


def document_filenames(pairs: Iterable[tuple[uuid.UUID | str, str]]) -> dict[tuple[str, str], str]:
    """(tenant id, document id) → file name, in one query, for the documents that still exist in that tenant.

    For audit records that keep document ids (a search event's returned documents): an id of another tenant,
    or not an id at all, is simply not found."""
    wanted: dict[str, set[str]] = {}
    for tenant_id, document_id in pairs:
        if _is_uuid(document_id):
            wanted.setdefault(str(tenant_id), set()).add(str(document_id))
    if not wanted:
        return {}
    where = Q()
    for tenant_id, ids in wanted.items():
        where |= Q(tenant_id=tenant_id, pk__in=ids)
    rows = Document.objects.filter(where).values_list("tenant_id", "pk", "filename")
    return {(str(tenant_id), str(pk)): filename for tenant_id, pk, filename in rows}


def _is_uuid(value: object) -> bool:
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class BreadcrumbTitle:
    """The first part of every paragraph's breadcrumb (embedded with it), and where it came from."""

    text: str  # "" when there is none
    source: str  # "metadata" (the parser found it), "file name", or "none"

    def for_build(self) -> dict[str, str | None]:
        """What a build record says about it (its `method`)."""
        return {"title": self.text or None, "title_from": self.source}


def breadcrumb_title(document: Document) -> BreadcrumbTitle:
    """The title the parser found, else the file's name when it reads as words (ingestion.titles), else none:
    "p31", "IMG_2034", a hash or a date stamp would be noise in every paragraph's vector."""
    found = document.metadata.get("title") if isinstance(document.metadata, dict) else None
    if found:
        return BreadcrumbTitle(str(found), "metadata")
    from_name = title_from_filename(document.filename)
    return BreadcrumbTitle(from_name, "file name") if from_name else BreadcrumbTitle("", "none")
