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
    # Default score_threshold in the question's language: at or above it a result is badged "supported", below it
    # "weak".
    supported: float = 0.5
    # The floor for a paragraph in another language than the question's (None: `floor`, uncalibrated).
    # A multilingual model scores a question and its answer lower across languages than within one, and its
    # unrelated pairs lower too (bench/calibrate_floor_xlang.py measures both).
    cross_language_floor: float | None = None
    # The supported threshold for a paragraph in another language than the question's (None: `supported`,
    # uncalibrated). Calibrated like the cross-language floor, on questions of our own making in several
    # languages (bench/calibrate_supported.py, docs/DECISIONS.md "Badges per language situation").
    cross_language_supported: float | None = None

    def floor_for(self, *, cross_language: bool) -> float:
        """The calibrated floor of one language situation (the same language unless told otherwise)."""
        if cross_language and self.cross_language_floor is not None:
            return self.cross_language_floor
        return self.floor

    def supported_for(self, *, cross_language: bool) -> float:
        """The calibrated supported threshold of one language situation (the same language unless told otherwise)."""
        if cross_language and self.cross_language_supported is not None:
            return self.cross_language_supported
        return self.supported
