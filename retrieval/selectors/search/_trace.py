"""The trace of one search: every stage in order, `ran` (with counts and time) or `skipped` (with why)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Stage:
    name: str
    status: str  # ran | skipped | failed
    reason: str = ""
    counts: dict[str, Any] = field(default_factory=dict)
    ms: float = 0.0

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"stage": self.name, "status": self.status}
        if self.reason:
            out["reason"] = self.reason
        if self.counts:
            out["counts"] = self.counts
        out["ms"] = round(self.ms, 2)
        return out


class StageFailed(Exception):
    """A stage was asked to run and could not; `Trace.timed` records it as failed with this message."""


class Trace:
    """Collects stages; `timed` runs a stage body and records it as ran, with the counts the body sets."""

    def __init__(self) -> None:
        self.stages: list[Stage] = []
        self._started = time.perf_counter()

    @contextmanager
    def timed(self, name: str) -> Iterator[dict[str, Any]]:
        counts: dict[str, Any] = {}
        started = time.perf_counter()
        try:
            yield counts
        except StageFailed as exc:
            self.failed(name, str(exc), (time.perf_counter() - started) * 1000)
            raise
        self.stages.append(Stage(name, "ran", counts=counts, ms=(time.perf_counter() - started) * 1000))

    def ran(self, name: str, **counts: Any) -> None:
        self.stages.append(Stage(name, "ran", counts=counts))

    def skipped(self, name: str, reason: str, **counts: Any) -> None:
        # A skipped stage always says why: a blank stage is a lie.
        if not reason:
            raise ValueError(f"stage {name!r} skipped without a reason")
        self.stages.append(Stage(name, "skipped", reason, counts=counts))

    def failed(self, name: str, reason: str, ms: float = 0.0) -> None:
        # The stage was asked to run and could not; the pipeline went on without it.
        self.stages.append(Stage(name, "failed", reason, ms=ms))

    def elapsed_ms(self) -> float:
        return (time.perf_counter() - self._started) * 1000
