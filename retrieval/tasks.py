"""django-q2 tasks of the retrieval app: take primitive ids, call one service, safe to run twice."""

from retrieval.services.golden import evaluation_run
from retrieval.services.measure import measure_run


def evaluate_collection(evaluation_id: str) -> None:
    evaluation_run(evaluation_id=evaluation_id)


def measure_collection(measure_id: str) -> None:
    measure_run(measure_id=measure_id)
