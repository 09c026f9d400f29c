from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction

from accounts.models import Role, Tenant
from collections_app.models import Chunk, Collection, ParentReturn, SizeUnit
from collections_app.services.deletion import collection_delete as collection_delete  # its doors import it here
from collections_app.services.documents import collection_chunking
from collections_app.services.languages import language_codes
from collections_app.services.metadata_schema import metadata_schema_problem
from collections_app.services.reader_access import reader_access_check
from collections_app.services.reindex import CHUNKING_FIELDS, REBUILD_FIELDS, collection_mark_stale
from embedding import EmbeddingUnavailable, get_model
from infra.errors import Conflict, Invalid
from infra.validation import name_problem, text_problem
from ingestion.chunking import CHUNKING_DEFAULTS, ChunkingSettings, check_strategy, overlap_following

# Bounds of the collection settings. The search API takes `around` and `top_n` up to the same maxima,
# so a collection cannot configure what a search could not ask for (around 32,767 once returned a
# whole document as one result; rerank_top_n 0 emptied every search).
MAX_AROUND = 5
MAX_TOP_N = 50
MAX_TOP_K = 1000
CHUNK_SIZE_RANGE = (20, 20_000)
MAX_PARENT_SIZE = 200_000
MAX_NAME_CHARS = Collection._meta.get_field("name").max_length or 200
MAX_DESCRIPTION_CHARS = 10_000
MAX_LANGUAGES = 50
# A stitched result's ceiling: below a few sentences a window is no window; above this it is a chapter.
WINDOW_MAX_CHARS_RANGE = (200, 100_000)


class CollectionNameTaken(Conflict):
    field = "name"


class InvalidSettings(Invalid):
    """A setting out of its bounds; `field` names it."""


def _bounded_int(values: dict[str, Any], field: str, low: int, high: int, *, nullable: bool = False) -> None:
    if field not in values:
        return
    value = values[field]
    if value is None and nullable:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidSettings(f"{field} must be a whole number from {low} to {high}", field=field)


def _fraction(values: dict[str, Any], field: str, *, nullable: bool = True) -> None:
    if field not in values:
        return
    value = values[field]
    if value is None and nullable:
        return
    # `not 0 <= value <= 1` is also true for NaN, which compares false with everything.
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise InvalidSettings(f"{field} must be a number from 0 to 1", field=field)


def _text(values: dict[str, Any], field: str, max_chars: int) -> None:
    value = values.get(field)
    if value is None:
        return
    problem = text_problem(value) if isinstance(value, str) else "must be text"
    if problem is None and len(value) > max_chars:
        problem = f"is too long: at most {max_chars} characters"
    if problem:
        raise InvalidSettings(f"{field} {problem}", field=field)


def _validate(values: dict[str, Any]) -> None:
    """Check each setting given on its own; the API and the admin's collection form both come through here."""
    if "name" in values:
        problem = name_problem(values["name"], max_chars=MAX_NAME_CHARS) if isinstance(values["name"], str) else None
        if problem or not isinstance(values["name"], str):
            raise InvalidSettings(f"name {problem or 'must be text'}", field="name")
    _text(values, "description", MAX_DESCRIPTION_CHARS)
    if values.get("chunk_strategy") is not None:
        check_strategy(values["chunk_strategy"])  # a planned name is refused, naming it and the built ones
    if "embedding_alias" in values:
        _text(values, "embedding_alias", 100)
        try:
            get_model(values["embedding_alias"])
        except EmbeddingUnavailable as exc:
            raise InvalidSettings(str(exc), field="embedding_alias") from exc
    for field, choices in (("chunk_size_unit", SizeUnit), ("parent_return", ParentReturn)):
        if field in values and values[field] not in choices.values:
            raise InvalidSettings(f"{field} must be one of {', '.join(choices.values)}", field=field)
    _bounded_int(values, "chunk_size", *CHUNK_SIZE_RANGE)
    _bounded_int(values, "chunk_overlap", 0, CHUNK_SIZE_RANGE[1] - 1)
    _bounded_int(values, "parent_size", CHUNK_SIZE_RANGE[0], MAX_PARENT_SIZE, nullable=True)
    _bounded_int(values, "rerank_top_k", 1, MAX_TOP_K)
    _bounded_int(values, "rerank_top_n", 1, MAX_TOP_N)
    _bounded_int(values, "around", 0, MAX_AROUND, nullable=True)
    _bounded_int(values, "window_max_chars", *WINDOW_MAX_CHARS_RANGE)
    _fraction(values, "merge_threshold", nullable=False)
    # A collection file's settings come from outside: "yes" would reach the model field and answer 500, not 400.
    for field in ("per_reader", "step_back", "golden_gate"):
        if field in values and not isinstance(values[field], bool):
            raise InvalidSettings(f"{field} must be true or false", field=field)
    _fraction(values, "golden_gate_tolerance", nullable=False)
    for field in ("hybrid_weight", "score_threshold", "min_score"):
        _fraction(values, field)
    if "metadata_schema" in values:
        problem = metadata_schema_problem(values["metadata_schema"])
        if problem:
            raise InvalidSettings(f"metadata_schema {problem}", field="metadata_schema")
    languages = values.get("languages")
    if languages is not None:
        if not isinstance(languages, list) or len(languages) > MAX_LANGUAGES:
            raise InvalidSettings(f"languages must be a list of at most {MAX_LANGUAGES} codes", field="languages")
        for code in languages:
            problem = text_problem(code) if isinstance(code, str) else "must be text"
            if problem is None and not 1 <= len(code) <= 10:
                problem = "must be a language code of 1 to 10 characters"
            if problem:
                raise InvalidSettings(f"languages: {code!r} {problem}", field="languages")
        # Pinned languages: supported codes only, stored as labels are (sr, hr, bs → sh), [] → automatic.
        values["languages"] = language_codes(languages) or None


def collection_settings_check(values: dict[str, Any]) -> None:
    """Check settings as collection_update would (each on its own), saving nothing: `measure` checks its variants."""
    _validate(values)


def collection_chunking_with(*, collection: Collection | None, changes: Mapping[str, Any]) -> ChunkingSettings:
    """The chunking settings `collection` (None: a new one, CHUNKING_DEFAULTS) has with `changes` applied,
    checked. Saves nothing: a preview cuts with them, collection_create and collection_update store them.

    `changes` uses the API's names (chunk_strategy, chunk_size, chunk_size_unit, chunk_overlap, parent_size;
    others are ignored). Each is checked on its own, then the pairs: overlap below the size, a parent above it.
    A size or unit changed without an overlap brings the overlap along (`overlap_following`: a fifth of the
    size, as in the defaults), so "64 tokens" alone is a setting, not a refusal of an overlap nobody sent.
    """
    given = {field: changes[field] for field in CHUNKING_FIELDS if field in changes}
    _validate(given)
    current = collection_chunking(collection=collection) if collection is not None else CHUNKING_DEFAULTS
    size = given.get("chunk_size", current.size)
    unit = given.get("chunk_size_unit", current.unit)
    if "chunk_overlap" in given:
        overlap = given["chunk_overlap"]
    elif (size, unit) != (current.size, current.unit):
        overlap = overlap_following(size)
    else:
        overlap = current.overlap
    settings = ChunkingSettings(
        strategy=given.get("chunk_strategy", current.strategy),
        size=size,
        overlap=overlap,
        unit=unit,
        parent_size=given.get("parent_size", current.parent_size),
    )
    if settings.overlap >= settings.size:
        raise InvalidSettings("chunk_overlap must be smaller than chunk_size", field="chunk_overlap")
    if settings.parent_size is not None and settings.parent_size <= settings.size:
        raise InvalidSettings("parent_size must be larger than chunk_size", field="parent_size")
    return settings


def _with_chunking(changes: dict[str, Any], collection: Collection | None) -> dict[str, Any]:
    """`changes` with the overlap a changed size brought along (collection_chunking_with), when it brought one."""
    settings = collection_chunking_with(collection=collection, changes=changes)
    before = collection.chunk_overlap if collection is not None else CHUNKING_DEFAULTS.overlap
    if "chunk_overlap" in changes or settings.overlap == before:
        return changes
    return {**changes, "chunk_overlap": settings.overlap}


def collection_create(*, tenant: Tenant, name: str, **settings: Any) -> Collection:
    _validate(settings)
    collection = Collection(tenant=tenant, name=name, **_with_chunking(settings, None))
    _save(collection)
    return collection


def collection_update(*, collection: Collection, role: Role | None = None, **changes: Any) -> Collection:
    """Change settings, as `role` (the key's or the person's; None: the server itself). A chunking field or
    the embedding model changed marks every document stale (a re-index rebuilds them: services/reindex.py);
    until then searches keep the model the paragraphs were built with. Changing per_reader needs an admin
    (services/reader_access.py)."""
    _validate(changes)
    changes = _with_chunking(changes, collection)
    changed = [field for field, value in changes.items() if getattr(collection, field) != value]
    reader_access_check(role=role, per_reader_changed="per_reader" in changed)
    fields = [*changes, "updated_at"]
    if "embedding_alias" in changed:
        built = Chunk.objects.filter(collection=collection).live().exists()
        # With paragraphs built, the old model keeps serving them until the re-index's cutover.
        collection.active_alias = collection.served_alias if built else ""
        fields.append("active_alias")
    for field, value in changes.items():
        setattr(collection, field, value)
    if collection.active_alias == collection.embedding_alias:
        collection.active_alias = ""  # changed back before any re-index: nothing is waiting
    with transaction.atomic():
        # Only the changed fields: a concurrent ingestion may be adding to metadata_schema.
        _save(collection, update_fields=fields)
        collection_mark_stale(collection=collection, changed=changed)
    return collection


@dataclass(frozen=True)
class UpdateEffects:
    """What collection_update would change, asked before it does (a confirmation page says it)."""

    # (setting, value now, value after), in the order asked; a setting a change brings along (the overlap a new
    # size gives) included.
    changes: list[tuple[str, Any, Any]]
    # Documents the change marks stale (not stale yet), to be rebuilt by a re-index.
    marked_stale: int


def collection_update_effects(*, collection: Collection, **changes: Any) -> UpdateEffects:
    """What `collection_update(collection=..., **changes)` would change, without changing anything: the same
    checks (a refused change raises the same error) and the same settings brought along."""
    _validate(changes)
    changes = _with_chunking(changes, collection)
    changed = [(field, getattr(collection, field), value) for field, value in changes.items()
               if getattr(collection, field) != value]  # fmt: skip
    rebuilt = {field for field, _, _ in changed} & set(REBUILD_FIELDS)
    stale = collection.documents.exclude(stale=True).count() if rebuilt else 0
    return UpdateEffects(changes=changed, marked_stale=stale)


def _save(collection: Collection, update_fields: list[str] | None = None) -> None:
    try:
        with transaction.atomic():
            collection.save(update_fields=update_fields)
    except IntegrityError as exc:
        if "collection_name_unique_per_tenant" in str(exc):
            raise CollectionNameTaken(f"a collection named {collection.name!r} already exists") from exc
        raise
