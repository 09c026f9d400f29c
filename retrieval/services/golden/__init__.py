"""Golden questions and evaluations: what an editor knows the answers to, and how the collection answers them.

    golden_question_create(collection=..., question="...", markers=["..."])
    evaluation_start(collection=...)        # queued; the task calls evaluation_run(evaluation_id=...)

Public API: the services (`golden_question_create/update/delete`, `golden_question_from_search` ("Try a
search"'s buttons), `evaluation_start`, `evaluation_run`, `evaluations_sweep` (the
recovery round's: evaluations whose worker died)), the
selector `golden_questions_for`, `GOLDEN_TABLE` (their table in a collection file),
import and export (`golden_import_jsonl`, `golden_export_jsonl`,
`golden_import_beir`, `golden_export_beir`), `golden_questions_referring` (which questions a document's deletion
takes answers from), `documents_resolve` (ids from the names editors use), `evaluate`
(the searches and their judgements, written nowhere) and the judging (`judge`, `totals`, `Answers`).
"""

from ._collection_file import GOLDEN_TABLE
from ._evaluate import (
    DEFAULT_TOP_N,
    WORKER_STOPPED,
    evaluate,
    evaluation_lease,
    evaluation_run,
    evaluation_start,
    evaluations_sweep,
    gate_evaluate,
    questions_evaluate,
    reader_named,
)
from ._exchange import (
    MAX_IMPORT_BYTES,
    ImportReport,
    ImportTooLarge,
    golden_export_beir,
    golden_export_jsonl,
    golden_import_beir,
    golden_import_jsonl,
)
from ._judging import NDCG_DEPTH, Answers, Judgement, judge, totals
from ._questions import (
    GoldenQuestionTaken,
    InvalidGolden,
    document_names,
    documents_resolve,
    golden_question_clean,
    golden_question_create,
    golden_question_delete,
    golden_question_from_search,
    golden_question_update,
    golden_questions_for,
    marker_from,
)
from ._references import golden_questions_referring

__all__ = [
    "DEFAULT_TOP_N",
    "GOLDEN_TABLE",
    "MAX_IMPORT_BYTES",
    "NDCG_DEPTH",
    "WORKER_STOPPED",
    "Answers",
    "GoldenQuestionTaken",
    "ImportReport",
    "ImportTooLarge",
    "InvalidGolden",
    "Judgement",
    "document_names",
    "documents_resolve",
    "evaluate",
    "evaluation_lease",
    "evaluation_run",
    "evaluation_start",
    "evaluations_sweep",
    "gate_evaluate",
    "golden_export_beir",
    "golden_export_jsonl",
    "golden_import_beir",
    "golden_import_jsonl",
    "golden_question_clean",
    "golden_question_create",
    "golden_question_delete",
    "golden_question_from_search",
    "golden_question_update",
    "golden_questions_for",
    "golden_questions_referring",
    "judge",
    "marker_from",
    "questions_evaluate",
    "reader_named",
    "totals",
]
