"""Reads: querysets scoped to the caller's tenant."""

from __future__ import annotations

from django.db.models import Count, QuerySet

from collections_app.models import Build, Collection, Document, Tenant


def collections_for(tenant: Tenant) -> QuerySet[Collection]:
    return Collection.objects.for_tenant(tenant)


def documents_for(collection: Collection) -> QuerySet[Document]:
    return (
        Document.objects.for_tenant(collection.tenant_id)
        .filter(collection=collection)
        .annotate(chunk_count=Count("chunks"))
        .order_by("-created_at", "id")
    )


def builds_for(collection: Collection) -> QuerySet[Build]:
    return Build.objects.for_tenant(collection.tenant_id).filter(collection=collection).order_by("-built_at")
