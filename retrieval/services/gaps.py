"""Gaps: an admin's dismissal of a group of unanswered questions (retrieval.selectors.gaps reads them)."""

from __future__ import annotations

from collections_app.models import Collection
from infra.errors import DomainError, Invalid
from retrieval.models import GapDismissal
from retrieval.selectors.gaps import Gap, collection_gaps, normalised, question_digest


class GapNotFound(DomainError):
    meaning = "not_found"
    field = "question"


def gap_dismiss(*, collection: Collection, question: str, dismissed_by: str = "") -> tuple[Gap, GapDismissal]:
    """Hide the open gap that asks `question` (any of its wordings) until one of its wordings is asked again.

    What is kept is the digests of the group's wordings, never their text."""
    if not isinstance(question, str) or not normalised(question):
        raise Invalid("question: give the question of a gap, as the gaps list shows it", field="question")
    digest = question_digest(question)
    gap = next((g for g in collection_gaps(collection=collection).gaps if digest in g.digests), None)
    if gap is None:
        raise GapNotFound(
            f"no open gap of {collection.name} asks that question: it may be dismissed already, or was answered"
        )
    dismissal = GapDismissal.objects.create(
        tenant_id=collection.tenant_id, collection=collection, digests=gap.digests, dismissed_by=dismissed_by[:200]
    )
    return gap, dismissal
