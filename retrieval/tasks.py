"""django-q2 tasks of the retrieval app: take primitive ids, call one service, safe to run twice."""

from retrieval.golden import evaluation_run


def evaluate_collection(evaluation_id: str) -> None:
    evaluation_run(evaluation_id=evaluation_id)
