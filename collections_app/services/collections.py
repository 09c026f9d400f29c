from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction

from collections_app.ingestion.chunking import StrategyNotBuilt
from collections_app.models import BUILT_CHUNK_STRATEGIES, Collection, Tenant
from retrieval.embedding import EmbeddingUnavailable, get_model


class CollectionNameTaken(Exception):
    pass


class InvalidSettings(ValueError):
    pass


def _validate(values: dict[str, Any]) -> None:
    strategy = values.get("chunk_strategy")
    if strategy is not None and strategy not in BUILT_CHUNK_STRATEGIES:
        raise StrategyNotBuilt(f"chunk_strategy {strategy!r} is planned but not built yet; use 'structure'")
    if "embedding_alias" in values:
        try:
            get_model(values["embedding_alias"])
        except EmbeddingUnavailable as exc:
            raise InvalidSettings(str(exc)) from exc
    size, overlap = values.get("chunk_size"), values.get("chunk_overlap")
    if size is not None and overlap is not None and overlap >= size:
        raise InvalidSettings("chunk_overlap must be smaller than chunk_size")


def collection_create(*, tenant: Tenant, name: str, **settings: Any) -> Collection:
    _validate(settings)
    collection = Collection(tenant=tenant, name=name, **settings)
    _save(collection)
    return collection


def collection_update(*, collection: Collection, **changes: Any) -> Collection:
    _validate(changes)
    for field, value in changes.items():
        setattr(collection, field, value)
    # Only the changed fields: a concurrent ingestion may be adding to metadata_schema.
    _save(collection, update_fields=[*changes, "updated_at"])
    return collection


def _save(collection: Collection, update_fields: list[str] | None = None) -> None:
    # Size and overlap are checked together: a change to one may break the pair.
    _validate({"chunk_size": collection.chunk_size, "chunk_overlap": collection.chunk_overlap})
    try:
        with transaction.atomic():
            collection.save(update_fields=update_fields)
    except IntegrityError as exc:
        if "collection_name_unique_per_tenant" in str(exc):
            raise CollectionNameTaken(f"a collection named {collection.name!r} already exists") from exc
        raise


def collection_delete(*, collection: Collection) -> None:
    files = list(collection.documents.exclude(file="").values_list("file", flat=True))
    storage = collection.documents.model._meta.get_field("file").storage

    def remove_files() -> None:
        for name in files:
            storage.delete(name)

    with transaction.atomic():
        collection.delete()
        transaction.on_commit(remove_files)
