"""`measure`: several designs of a collection, one scratch store, nothing written to the collection.

    measure_start(collection=..., variants=[{"chunk_size": 128}, {"chunk_strategy": "fixed", "around": 0}])
    measure_start(collection=..., preset="chunkings")       # four chunkings x two windows
    measure_run(measure_id=...)                              # the task
    measures_sweep()                                         # the recovery round: stores of dead workers

Public API: the services above, `measure_cancel`, `measure_apply` (a variant's settings saved, documents marked
stale), `measure_apply_effects` (what applying would change, asked first), the floor read-off, the presets
(`preset_shown`), `variants_from_text` (variants typed in the admin) and `scratch_remove` (tests and the sweep).
"""

from ._apply import measure_apply, measure_apply_effects
from ._floor import floor_read_off
from ._run import (
    METRICS_COMPARED,
    MeasureRunning,
    best_variant,
    measure_cancel,
    measure_run,
    measure_start,
    windows_embedded,
)
from ._scratch import SCRATCH_PREFIX, corpus_of, measure_lease, measures_sweep, scratch_remove
from ._variants import (
    MAX_VARIANTS,
    MEASURED,
    PRESETS,
    InvalidMeasure,
    preset_shown,
    variants_from_text,
    variants_resolve,
)

__all__ = [
    "MAX_VARIANTS",
    "MEASURED",
    "METRICS_COMPARED",
    "PRESETS",
    "SCRATCH_PREFIX",
    "InvalidMeasure",
    "MeasureRunning",
    "best_variant",
    "corpus_of",
    "floor_read_off",
    "measure_apply",
    "measure_apply_effects",
    "measure_cancel",
    "measure_lease",
    "measure_run",
    "measure_start",
    "measures_sweep",
    "preset_shown",
    "scratch_remove",
    "variants_from_text",
    "variants_resolve",
    "windows_embedded",
]
