"""Starting, running and cancelling a measure.

    measure_start(collection=..., variants=[{"chunk_size": 128}, {"chunk_strategy": "fixed"}])   # queued
    measure_run(measure_id=...)      # the task: each design built in the scratch store, questions asked, judged
    measure_cancel(measure=...)      # stops between two documents or two questions; the store is removed

Each question runs through the search pipeline as evaluate runs it (retrieval.services.golden.questions_evaluate) and is
judged by the same judge, on the design's scratch collection, with the floor off unless the request names one.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.models import Reader
from collections_app.models import Collection
from embedding import get_embedder, get_model
from infra.errors import Conflict
from infra.queueing import task_name_shown, task_queue_on_commit
from retrieval.models import Measure, MeasureStatus
from retrieval.selectors.search import collection_scope
from retrieval.services.golden import DEFAULT_TOP_N, InvalidGolden, golden_questions_for, questions_evaluate, totals

from ._floor import floor_read_off
from ._scratch import corpus_of, design_build, measure_lease, scratch_open, scratch_remove
from ._variants import SEARCH_FIELDS, InvalidMeasure, build_key, settings_changed, variants_resolve

logger = logging.getLogger(__name__)

METRICS_COMPARED = ("ndcg_at_10", "hit_at_5", "hit_at_1", "mrr")


class MeasureRunning(Conflict):
    """The collection is being measured already: one measure per collection at a time."""


class MeasureCancelled(Exception):
    pass


def measure_start(
    *,
    collection: Collection,
    variants: list[dict[str, Any]] | None = None,
    preset: str | None = None,
    floor: float | None = None,
    reader: Reader | None = None,
    top_n: int = DEFAULT_TOP_N,
    requested_by: str = "",
) -> Measure:
    """Check the variants and queue the measure; it runs once this transaction commits."""

    resolved = variants_resolve(collection=collection, variants=variants, preset=preset)
    total = golden_questions_for(collection).count()
    if not total:
        raise InvalidGolden("this collection has no golden questions: add some (POST .../golden) or import a set first")
    if collection.per_reader and reader is None:
        raise InvalidGolden(
            f"{collection.name} is filtered per reader: name the registered reader to measure as in `reader`",
            field="reader",
        )
    if floor is not None and not 0 <= floor <= 1:
        raise InvalidMeasure("floor must be a number from 0 to 1", field="floor")
    request = {"variants": resolved, "asked": variants, "preset": preset, "floor": floor}
    try:
        with transaction.atomic():
            measure = Measure.objects.create(
                tenant_id=collection.tenant_id, collection=collection, reader=reader, top_n=top_n, request=request,
                progress={"variant": 0, "variants": len(resolved), "questions_done": 0, "questions_total": total},
                requested_by=requested_by[:200],
            )  # fmt: skip
            measure_id = str(measure.pk)
            task_queue_on_commit(
                "retrieval.tasks.measure_collection",
                measure_id,
                task_name=task_name_shown(collection.name, f"measure collection {measure_id}"),
                group="measure",
            )
    except IntegrityError as exc:
        if "measure_one_at_a_time_per_collection" in str(exc):
            raise MeasureRunning(f"{collection.name} is being measured already: wait for it, or cancel it") from exc
        raise
    return measure


def measure_cancel(*, measure: Measure) -> Measure:
    """Ask a queued or running measure to stop; a queued one stops at once."""
    Measure.objects.filter(pk=measure.pk, status=MeasureStatus.QUEUED).update(
        status=MeasureStatus.CANCELLED, cancel_requested=True, finished_at=timezone.now()
    )
    Measure.objects.filter(pk=measure.pk, status=MeasureStatus.RUNNING).update(cancel_requested=True)
    measure.refresh_from_db()
    return measure


def measure_run(*, measure_id: str) -> None:
    """The task's work. Safe to run twice: a finished measure is left alone; a second delivery while a live worker
    runs it finds the lease held and does nothing; one whose worker died starts over."""
    with measure_lease(measure_id=measure_id) as held:
        if not held:
            logger.info("measure %s is running in a live worker; this delivery does nothing", measure_id)
            return
        measure = Measure.objects.select_related("collection", "reader").filter(pk=measure_id).first()
        if measure is None or measure.status not in (MeasureStatus.QUEUED, MeasureStatus.RUNNING):
            return
        Measure.objects.filter(pk=measure.pk).update(status=MeasureStatus.RUNNING, started_at=timezone.now())
        scratch = None
        try:
            scratch = scratch_open(measure=measure)
            variants, floor = _measure(measure, scratch)
        except MeasureCancelled:
            _finish(measure, status=MeasureStatus.CANCELLED, error="cancelled")
            return
        except Exception as exc:
            logger.exception("measure %s of collection %s stopped", measure.pk, measure.collection_id)
            _finish(measure, status=MeasureStatus.FAILED, error=f"stopped ({type(exc).__name__}): {exc}"[:500])
            return
        except BaseException:
            # Stopped from outside (SIGTERM turned into SystemExit, Ctrl-C): said so, the store still removed.
            _finish(measure, status=MeasureStatus.FAILED, error="stopped: the worker was interrupted; run it again")
            raise
        finally:
            if scratch is not None:
                scratch_remove(tenant_id=scratch.pk)
        _finish(measure, status=MeasureStatus.DONE, variants=variants, floor=floor)


def _finish(measure: Measure, *, status: str, error: str = "", **results: Any) -> None:
    Measure.objects.filter(pk=measure.pk).update(
        status=status, error=error, finished_at=timezone.now(), scratch_tenant=None, **results
    )


def _measure(measure: Measure, scratch: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    collection = Collection.objects.get(pk=measure.collection_id)  # as it is now, not as queued
    asked: list[dict[str, Any]] = measure.request["variants"]
    floor = measure.request.get("floor")
    questions = list(golden_questions_for(collection))
    corpus = corpus_of(collection)
    progress = {"variant": 0, "variants": len(asked), "questions_done": 0, "questions_total": len(questions)}

    def report(**changes: Any) -> None:
        progress.update(changes)
        Measure.objects.filter(pk=measure.pk).update(progress=progress)

    def check() -> None:
        if Measure.objects.filter(pk=measure.pk, cancel_requested=True).exists():
            raise MeasureCancelled

    results: list[dict[str, Any] | None] = [None] * len(asked)
    groups: dict[tuple[Any, ...], list[int]] = {}
    for index, settings in enumerate(asked):
        groups.setdefault(build_key(settings), []).append(index)
    done = 0
    for indexes in groups.values():
        started = time.perf_counter()
        report(step="indexing", variant=done + 1, documents_done=0)
        built = design_build(
            source=collection, scratch=scratch, settings=asked[indexes[0]], check=check,
            on_document=lambda k, n: report(documents_done=k, documents_total=n),
        )  # fmt: skip
        design, originals = built.collection, built.originals
        build_seconds = time.perf_counter() - started
        # Variants that differ only in what a search reads (floor, window, weight) are asked on one build: the
        # first of them says what it embedded, the others name it.
        windows = {"embedded": built.embedded, "reused": built.reused, "built_for": indexes[0]}
        for index in indexes:
            settings = asked[index]
            check()
            done += 1
            report(step="asking", variant=done, questions_done=0)
            # What a search reads: this variant's window, sections and weight; the floor off unless one was asked.
            # The measured collection itself (built.own) takes them in memory only: its row is never written.
            searched = {name: settings[name] for name in SEARCH_FIELDS}
            searched["min_score"] = floor if floor is not None else 0.0
            if built.own:
                for name, value in searched.items():
                    setattr(design, name, value)
            else:
                Collection.objects.filter(pk=design.pk).update(**searched)
                design.refresh_from_db()
            counter = {"n": 0}

            def asked_one(counter: dict[str, int] = counter) -> None:
                counter["n"] += 1
                report(questions_done=counter["n"])
                check()

            started = time.perf_counter()
            rows, used_floor, _around = questions_evaluate(
                questions=questions, scope=collection_scope(collection=design, reader=measure.reader),
                top_n=measure.top_n, on_question=asked_one, documents=originals,
            )  # fmt: skip
            results[index] = _variant(
                collection, settings, rows, corpus=corpus, design=design, floor=used_floor,
                build_seconds=build_seconds, ask_seconds=time.perf_counter() - started, windows=windows,
            )  # fmt: skip
        if not built.own:
            Collection.objects.filter(pk=design.pk).delete()  # the next build needs the space more than this one
    variants = [v for v in results if v is not None]
    return variants, _floor_summary(variants, asked=floor)


def _variant(
    collection: Collection, settings: dict[str, Any], rows: list[dict[str, Any]], *, corpus: dict[str, Any],
    design: Collection, floor: Any, build_seconds: float, ask_seconds: float, windows: dict[str, int],
) -> dict[str, Any]:  # fmt: skip
    model = get_model(settings["embedding_alias"])
    return {
        "settings": settings,
        "changed": settings_changed(collection, settings),
        "corpus": corpus,
        "model": {"alias": model.alias, "identity": get_embedder(model.alias).model_identity(), "dims": model.dims},
        "paragraphs": design.chunks.paragraphs().count(),
        "windows": windows,
        "floor_used": floor,
        "metrics": totals(rows),
        "floor": floor_read_off(rows),
        "seconds": {"build": round(build_seconds, 2), "questions": round(ask_seconds, 2)},
        "questions": rows,
    }


def windows_embedded(variants: list[dict[str, Any]]) -> dict[str, int]:
    """What a measure sent to the model in all, and what it took from the collection's stored vectors: each build
    counted once (variants asked on another's build name it in `built_for`). Empty for a measure run before
    windows were counted."""
    builds = [v["windows"] for i, v in enumerate(variants) if "windows" in v and v["windows"]["built_for"] == i]
    if not builds:
        return {}
    return {"embedded": sum(b["embedded"] for b in builds), "reused": sum(b["reused"] for b in builds)}


def best_variant(variants: list[dict[str, Any]]) -> int | None:
    """The variant with the best nDCG@10 (hit@5, then MRR break ties); None when nothing was judged."""
    scored = [
        (tuple(v["metrics"].get(m) or 0 for m in ("ndcg_at_10", "hit_at_5", "mrr")), -i)
        for i, v in enumerate(variants)
        if v["metrics"].get("ndcg_at_10") is not None
    ]
    return -max(scored)[1] if scored else None


def _floor_summary(variants: list[dict[str, Any]], *, asked: float | None) -> dict[str, Any]:
    best = best_variant(variants)
    differences = sorted(
        {f"{what} differs between variants" for what in ("corpus", "model")
         if len({repr(v[what]) for v in variants}) > 1}
    )  # fmt: skip
    return {
        "asked": asked,
        "unfloored": asked is None,
        "best_variant": best,
        **(variants[best]["floor"] if best is not None else {}),
        "comparable": not differences,
        "differences": differences,
    }
