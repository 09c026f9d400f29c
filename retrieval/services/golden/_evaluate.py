"""Evaluate a collection as it is: every golden question through the search pipeline as it serves agents.

Each question is searched with `search()` on the collection's scope, exactly as the search API runs it for a key
that names this one collection (reader, floor, around, hybrid weight, rerank, judge: all as configured), at
`top_n` results (10 by default, so nDCG@10 reads ten). The answer is judged on the text handed back
(`_judging`). Evaluation searches write no SearchEvent: the searches audit and the per-agent counts stay the
agents' own, and a model call the pipeline makes (a judge, a planner) is charged to nobody, as a search made on
behalf of no agent is. The questions' text is kept in the evaluation's rows: it is the editor's own set.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from accounts.models import Reader
from collections_app.models import Chunk, Collection, Document
from infra.locks import session_lock, session_lock_held
from infra.queueing import task_name_shown, task_queue_on_commit
from retrieval.models import Evaluation, EvaluationStatus, GoldenQuestion
from retrieval.selectors.search import SearchScope, UnknownReader, collection_scope, search

from ._judging import Answers, judge, totals
from ._questions import InvalidGolden, golden_questions_for

logger = logging.getLogger(__name__)

DEFAULT_TOP_N = 10
SETTINGS_SHOWN = ("chunk_strategy", "chunk_size", "chunk_size_unit", "chunk_overlap", "parent_size",
                  "hybrid_weight", "min_score", "score_threshold", "around", "rerank_top_k")  # fmt: skip


def evaluation_start(
    *, collection: Collection, reader: Reader | None = None, top_n: int = DEFAULT_TOP_N, requested_by: str = ""
) -> Evaluation:
    """Queue an evaluation of the collection's golden questions; it runs once this transaction commits."""

    total = golden_questions_for(collection).count()
    if not total:
        raise InvalidGolden("this collection has no golden questions: add some (POST .../golden) or import a set first")
    if collection.per_reader and reader is None:
        raise InvalidGolden(
            f"{collection.name} is filtered per reader: name the registered reader to evaluate as in `reader`",
            field="reader",
        )
    with transaction.atomic():
        evaluation = Evaluation.objects.create(
            tenant_id=collection.tenant_id, collection=collection, reader=reader, top_n=top_n,
            questions_total=total, requested_by=requested_by[:200],
        )  # fmt: skip
        evaluation_id = str(evaluation.pk)
        task_queue_on_commit(
            "retrieval.tasks.evaluate_collection",
            evaluation_id,
            task_name=task_name_shown(collection.name, f"evaluate collection {evaluation_id}"),
            group="evaluation",
        )
    return evaluation


def reader_named(*, tenant_id: Any, name: str | None) -> Reader | None:
    """The registered reader an evaluation searches as; an unknown name is refused as a search refuses it."""
    if name is None:
        return None
    found = Reader.objects.for_tenant(tenant_id).filter(name=name).first()
    if found is None:
        raise UnknownReader(f"no reader named {name[:80]!r} is registered in this tenant")
    return found


def _lease_key(evaluation_id: Any) -> str:
    return f"kbsite-evaluation:{evaluation_id}"


@contextmanager
def evaluation_lease(*, evaluation_id: Any) -> Iterator[bool]:
    """Hold the evaluation's lease while the block runs: a session advisory lock on a connection of its own,
    which the server drops when the worker's process dies. Yields False if a live worker holds it."""
    with session_lock(_lease_key(evaluation_id), application_name=f"kbsite-evaluation pid={os.getpid()}") as taken:
        yield taken


def evaluation_lease_held(*, evaluation_id: Any) -> bool:
    return session_lock_held(_lease_key(evaluation_id))


WORKER_STOPPED = "the worker stopped: the evaluation did not finish; evaluate again"


def evaluations_sweep() -> int:
    """The recovery round's sweep (registered in RetrievalConfig.ready): an evaluation left `running` with
    nobody holding its lease lost its worker, and is marked failed saying so. Not requeued: an evaluation is
    cheap to start again and the editor sees why it stopped; one that kills its worker (memory, a timeout)
    would otherwise loop. Returns how many were marked."""
    marked = 0
    for running in Evaluation.objects.filter(status=EvaluationStatus.RUNNING).values_list("pk", flat=True):
        if evaluation_lease_held(evaluation_id=running):
            continue
        marked += Evaluation.objects.filter(pk=running, status=EvaluationStatus.RUNNING).update(
            status=EvaluationStatus.FAILED, error=WORKER_STOPPED, finished_at=timezone.now()
        )
    if marked:
        logger.info("marked %d evaluation(s) failed: their worker stopped", marked)
    return marked


def evaluation_run(*, evaluation_id: str) -> None:
    """The task's work. Safe to run twice: a finished evaluation is left as it is; a second delivery while a
    live worker runs it finds the lease held and does nothing; one left running by a worker that died before
    the sweep saw it starts over. The lease is taken before the row says `running`, so the sweep never sees
    a running evaluation whose live worker holds no lease."""
    with evaluation_lease(evaluation_id=evaluation_id) as held:
        if not held:
            logger.info("evaluation %s is running in a live worker; this delivery does nothing", evaluation_id)
            return
        _evaluation_run(evaluation_id)


def _evaluation_run(evaluation_id: str) -> None:
    evaluation = Evaluation.objects.select_related("collection", "reader").filter(pk=evaluation_id).first()
    if evaluation is None or evaluation.status in (EvaluationStatus.DONE, EvaluationStatus.FAILED):
        return
    Evaluation.objects.filter(pk=evaluation.pk).update(status=EvaluationStatus.RUNNING, questions_done=0)
    try:
        collection = Collection.objects.get(pk=evaluation.collection_id)  # as it is now, not as queued
        rows, settings = evaluate(collection=collection, reader=evaluation.reader, top_n=evaluation.top_n,
                                  progress=evaluation.pk)  # fmt: skip
    except Exception as exc:
        # The reason names the kind of failure and its message (never a question: stages do not quote it).
        logger.exception("evaluation %s of collection %s stopped", evaluation.pk, evaluation.collection_id)
        Evaluation.objects.filter(pk=evaluation.pk).update(
            status=EvaluationStatus.FAILED, error=f"stopped ({type(exc).__name__}): {exc}"[:500],
            finished_at=timezone.now(),
        )  # fmt: skip
        return
    Evaluation.objects.filter(pk=evaluation.pk).update(
        status=EvaluationStatus.DONE, rows=rows, metrics=totals(rows), settings=settings,
        questions_total=len(rows), questions_done=len(rows), finished_at=timezone.now(),
    )  # fmt: skip


def evaluate(
    *, collection: Collection, reader: Reader | None = None, top_n: int = DEFAULT_TOP_N, progress: Any = None
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Search every golden question of the collection and judge each answer: (rows, the settings it ran with).

    `progress`: an Evaluation's id, whose questions_done is counted up as questions finish."""
    scope = collection_scope(collection=collection, reader=reader)

    def counted() -> None:
        Evaluation.objects.filter(pk=progress).update(questions_done=F("questions_done") + 1)

    rows, floor, around = questions_evaluate(
        questions=list(golden_questions_for(collection)), scope=scope, top_n=top_n,
        on_question=counted if progress is not None else None,
    )  # fmt: skip
    settings = {
        "model": collection.served_alias, "generation": collection.active_generation, "top_n": top_n,
        "floor": floor, "around": around, "reader": reader.name if reader else None,
        **{name: getattr(collection, name) for name in SETTINGS_SHOWN},
    }  # fmt: skip
    return rows, settings


def questions_evaluate(
    *,
    questions: list[GoldenQuestion],
    scope: SearchScope,
    top_n: int = DEFAULT_TOP_N,
    on_question: Callable[[], object] | None = None,
    documents: dict[str, str] | None = None,
) -> tuple[list[dict[str, Any]], Any, int | None]:
    """Search each question on `scope` and judge what came back: (rows, the floor used, around).

    `documents` maps the document ids results carry to the ones the questions name (measure searches copies of
    the collection's documents in its scratch store); unmapped ids are judged as they are. Each row carries the
    score of the answer it found (`answer_score`) and the best score any result reached (`best_score`), which
    the floor read-off reads."""
    paragraphs = _paragraph_texts(questions)
    trashed = _trashed_documents(questions)
    rows: list[dict[str, Any]] = []
    floor: Any = None
    around: int | None = None
    for golden in questions:
        answer = search(scope=scope, query=golden.question, top_n=top_n)
        floor, around = answer.floor, answer.around
        results = answer.results if not documents else [_as_original(r, documents) for r in answer.results]
        answers = _answers(golden, paragraphs, trashed)
        judged = judge(results, answers)
        scores = [r["score"] for r in results if r.get("score") is not None]
        rows.append(
            {
                "golden_id": str(golden.pk), "question": golden.question, "control": golden.control,
                "found": judged.found, "rank": judged.rank, "ndcg": judged.ndcg, "met": judged.met,
                "gone": list(answers.gone), "answered": bool(results), "results": len(results),
                "refused": answer.refused, "reason": answer.reason,
                "top_score": results[0]["score"] if results else None,
                "answer_score": results[judged.rank - 1]["score"] if judged.rank else None,
                "best_score": max(scores) if scores else None,
                "latency_ms": round(answer.latency_ms, 2),
            }
        )  # fmt: skip
        if on_question is not None:
            on_question()
    return rows, floor, around


def _as_original(result: dict[str, Any], documents: dict[str, str]) -> dict[str, Any]:
    document = dict(result.get("document") or {})
    document["id"] = documents.get(str(document.get("id")), document.get("id"))
    return {**result, "document": document}


def _paragraph_texts(questions: list[GoldenQuestion]) -> dict[str, tuple[str, str]]:
    """Every judged paragraph still stored and not in the trash: id -> (its document, its text), in one query. A
    trashed document's paragraphs are gone for the evaluation as a deleted one's are; restored, they count again."""
    ids = {p for golden in questions for p in golden.paragraphs}
    trashed = Document.all_objects.trashed().values("pk")
    rows = Chunk.objects.filter(pk__in=ids).exclude(document__in=trashed).values_list("pk", "document_id", "text")
    return {str(pk): (str(document), text) for pk, document, text in rows}


def _answers(
    golden: GoldenQuestion, paragraphs: dict[str, tuple[str, str]], trashed: frozenset[str] = frozenset()
) -> Answers:
    ids = [str(p) for p in golden.paragraphs]
    documents = [str(d) for d in golden.documents]
    return Answers(
        markers=tuple(golden.markers),
        paragraphs={p: paragraphs[p] for p in ids if p in paragraphs},
        # A document in the trash answers nothing: its reference counts for nothing until it is restored.
        documents=frozenset(d for d in documents if d not in trashed),
        gone=tuple(p for p in ids if p not in paragraphs) + tuple(d for d in documents if d in trashed),
    )


def _trashed_documents(questions: list[GoldenQuestion]) -> frozenset[str]:
    ids = {d for golden in questions for d in golden.documents}
    if not ids:
        return frozenset()
    return frozenset(str(pk) for pk in Document.all_objects.trashed().filter(pk__in=ids).values_list("pk", flat=True))


def gate_evaluate(collection: Collection) -> tuple[dict[str, Any] | None, str]:
    """The golden gate's evaluator (registered in RetrievalConfig.ready): the collection's golden questions as
    searches read it now, their totals, or None and why it cannot judge."""
    if collection.per_reader:
        return None, "a per-reader collection is judged as a reader; evaluate it as one instead"
    if not golden_questions_for(collection).filter(control=False).exists():
        return None, "the collection has no golden questions with an answer"
    rows, _ = evaluate(collection=collection)
    return totals(rows), ""
