"""What a measure compares: variants of a collection's design, checked as collection_update would check them.

A variant names any of MEASURED; what it leaves out is the collection's own. A preset grid stands for a list of
variants. Variants that differ only in what a search reads (around, parent_return, hybrid_weight) share one
scratch build: BUILD_FIELDS decide what is indexed.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from collections_app.models import Collection
from collections_app.services.collections import collection_chunking_with, collection_settings_check
from infra.errors import Invalid
from ingestion.chunking import StrategyNotBuilt

BUILD_FIELDS = ("chunk_strategy", "chunk_size", "chunk_size_unit", "chunk_overlap", "parent_size", "embedding_alias")
SEARCH_FIELDS = ("around", "parent_return", "hybrid_weight")
MEASURED = (*BUILD_FIELDS, *SEARCH_FIELDS)
MAX_VARIANTS = 12

# Preset grids: the questions editors ask first. "chunkings": four ways of cutting × two windows.
PRESETS: dict[str, list[dict[str, Any]]] = {
    "chunkings": [
        {"chunk_strategy": strategy, "around": around}
        for strategy, around in itertools.product(("structure", "fixed", "hierarchical", "page"), (0, 1))
    ],
    "sizes": [{"chunk_size": size, "chunk_size_unit": "tokens"} for size in (64, 128, 256, 512)],
    "around": [{"around": around} for around in (0, 1, 2, 3)],
    "hybrid": [{"hybrid_weight": weight} for weight in (0.0, 0.3, 0.5, 0.7, 1.0)],
}


class InvalidMeasure(Invalid):
    """The measure asked for cannot run as asked (an unknown setting, a value a collection would refuse)."""


def variants_resolve(
    *, collection: Collection, variants: list[dict[str, Any]] | None, preset: str | None
) -> list[dict[str, Any]]:
    """Every variant with all of MEASURED filled in (the collection's values where it says nothing), checked."""
    if bool(variants) == bool(preset):
        raise InvalidMeasure("name the variants to measure, or a preset grid (" + ", ".join(PRESETS) + "), not both")
    if preset is not None and preset not in PRESETS:
        raise InvalidMeasure(f"no preset named {preset[:40]!r}: choose one of {', '.join(PRESETS)}", field="preset")
    asked = PRESETS[preset] if preset is not None else list(variants or [])
    if len(asked) > MAX_VARIANTS:
        raise InvalidMeasure(f"at most {MAX_VARIANTS} variants at a time ({len(asked)} asked)", field="variants")
    resolved = []
    for number, variant in enumerate(asked, start=1):
        if not isinstance(variant, dict):
            raise InvalidMeasure(f"variant {number} must be an object of settings", field="variants")
        unknown = sorted(set(variant) - set(MEASURED))
        if unknown:
            raise InvalidMeasure(
                f"variant {number}: {', '.join(unknown)[:200]} cannot be measured; measured settings are "
                + ", ".join(MEASURED),
                field="variants",
            )
        try:
            collection_settings_check(dict(variant))
            chunking = collection_chunking_with(collection=collection, changes=variant)
        except (Invalid, StrategyNotBuilt) as exc:
            raise InvalidMeasure(f"variant {number}: {exc}", field="variants") from exc
        settings = {name: getattr(collection, name) for name in MEASURED}
        settings.update(variant)
        settings.update(
            chunk_strategy=chunking.strategy, chunk_size=chunking.size, chunk_size_unit=chunking.unit,
            chunk_overlap=chunking.overlap, parent_size=chunking.parent_size,
        )  # fmt: skip
        resolved.append(settings)
    return resolved


def build_key(settings: dict[str, Any]) -> tuple[Any, ...]:
    """Variants with one build key are indexed once."""
    return tuple(settings[name] for name in BUILD_FIELDS)


def settings_changed(collection: Collection, settings: dict[str, Any]) -> list[str]:
    """The settings in which a variant differs from the collection as it is."""
    return [name for name in MEASURED if getattr(collection, name) != settings[name]]


def preset_shown(name: str) -> str:
    """A preset grid in a line: its variants' settings, as an editor picks one."""
    return " | ".join(" ".join(f"{k}={v}" for k, v in variant.items()) for variant in PRESETS[name])


def variants_from_text(text: str) -> list[dict[str, Any]]:
    """Variants typed one per line, as `setting=value` pairs (`chunk_strategy=fixed chunk_size=128`) or a JSON
    object; a value reads as JSON when it can (128, 0.5, true), else as text. Checked later by variants_resolve."""
    variants = []
    for number, line in enumerate((line.strip() for line in text.splitlines()), start=1):
        if not line:
            continue
        if line.startswith("{"):
            try:
                variant = json.loads(line)
            except ValueError as exc:
                raise InvalidMeasure(
                    f"line {number}: not a JSON object ({exc.args[0][:80]})", field="variants"
                ) from exc
        else:
            variant = {}
            for pair in line.replace(",", " ").split():
                name, equals, value = pair.partition("=")
                if not equals or not name or not value:
                    raise InvalidMeasure(f"line {number}: {pair[:60]!r} is not setting=value", field="variants")
                variant[name] = _value(value)
        if not isinstance(variant, dict):
            raise InvalidMeasure(f"line {number}: a variant is an object of settings", field="variants")
        variants.append(variant)
    return variants


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text
