"""What a registered embedding model is: its alias, provider, width and calibrated defaults."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EmbeddingModel:
    alias: str
    provider: str
    model_id: str
    dims: int
    # Calibrated default floor: the cosine similarity below which a hit is
    # noise for this model (bench/calibrate_floor.py measures it on SciFact).
    floor: float
    # Default score_threshold: at or above it a result is badged "supported", below it "weak".
    supported: float = 0.5
