"""Apply this variant: its settings (and the floor read off it, if chosen) saved on the collection."""

from __future__ import annotations

from typing import Any

from accounts.models import Role
from collections_app.models import Collection
from collections_app.services.collections import UpdateEffects, collection_update, collection_update_effects
from retrieval.models import Measure, MeasureStatus

from ._variants import InvalidMeasure, settings_changed


def measure_apply(*, measure: Measure, variant: int, with_floor: bool = False, role: Role | None = None) -> Collection:
    """Save variant `variant` (0-based) of a finished measure on its collection. A chunking or model change marks
    the documents stale (collection_update): the re-index that rebuilds them is offered, not started."""
    collection, changes = _changes(measure, variant, with_floor)
    return collection_update(collection=collection, role=role, **changes)


def measure_apply_effects(*, measure: Measure, variant: int, with_floor: bool = False) -> UpdateEffects:
    """What applying variant `variant` would change on the collection (each setting before and after, the
    documents it marks stale), changing nothing: what the confirmation page says."""
    collection, changes = _changes(measure, variant, with_floor)
    return collection_update_effects(collection=collection, **changes)


def _changes(measure: Measure, variant: int, with_floor: bool) -> tuple[Collection, dict[str, Any]]:
    if measure.status != MeasureStatus.DONE:
        raise InvalidMeasure("only a finished measure's variant can be applied", field="variant")
    if not 0 <= variant < len(measure.variants):
        raise InvalidMeasure(f"this measure has variants 0 to {len(measure.variants) - 1}", field="variant")
    chosen = measure.variants[variant]
    collection = Collection.objects.get(pk=measure.collection_id)
    changes: dict[str, Any] = {
        name: chosen["settings"][name] for name in settings_changed(collection, chosen["settings"])
    }
    if with_floor:
        suggested = chosen["floor"].get("suggested")
        if suggested is None:
            raise InvalidMeasure("this variant's answers and controls overlap: no floor separates them", field="floor")
        changes["min_score"] = suggested
    return collection, changes
