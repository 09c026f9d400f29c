from __future__ import annotations

from collections_app.models import Build, Collection, Document


def build_record(
    *,
    collection: Collection,
    document: Document | None,
    model: str,
    dims: int,
    passages: int,
    refused: list[str] | None,
    built_from: str,
    unlabelled: int = 0,
    warnings: list[str] | None = None,
) -> Build:
    """Record one indexing run. `refused`: [] = everything read, [names] = what could not be, None = unknown."""
    warnings = list(warnings or [])
    previous = Build.objects.filter(collection=collection).order_by("-built_at").first()
    if previous is not None and previous.model != model:
        warnings.append(f"embedding model changed from {previous.model} to {model}")
    if collection.per_reader and unlabelled:
        warnings.append(f"{unlabelled} paragraph(s) carry no reader label: anybody may read them")
    return Build.objects.create(
        tenant_id=collection.tenant_id,
        collection=collection,
        document=document,
        model=model,
        dims=dims,
        method={
            "strategy": collection.chunk_strategy,
            "size": collection.chunk_size,
            "overlap": collection.chunk_overlap,
            "unit": collection.chunk_size_unit,
        },
        built_from=built_from,
        passages=passages,
        refused=refused,
        warnings=warnings,
    )
