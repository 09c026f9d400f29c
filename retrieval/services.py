from __future__ import annotations

from collections_app.models import ApiKey
from retrieval.models import SearchEvent
from retrieval.search import SearchAnswer, SearchScope


def search_event_record_staff(*, scope: SearchScope, answer: SearchAnswer) -> SearchEvent:
    """Audit a search a staff member tried in the admin: no key and no agent (that is how it is told apart)."""
    floor = answer.floor if isinstance(answer.floor, float | int) else None
    return SearchEvent.objects.create(
        tenant_id=scope.tenant_id,
        collections=[c.name for c in scope.collections],
        refused=answer.refused,
        floor=floor,
        around=answer.around,
        stages=[s.to_json() for s in answer.stages],
        results=len(answer.results),
        latency_ms=round(answer.latency_ms, 2),
    )


def search_event_record(*, key: ApiKey, scope: SearchScope, answer: SearchAnswer) -> SearchEvent:
    """Audit one search. It records what ran and how long, never the question or the paragraphs."""
    floor = answer.floor if isinstance(answer.floor, float | int) else None
    return SearchEvent.objects.create(
        tenant_id=key.tenant_id,
        api_key=key,
        agent_id=key.agent_id,
        collections=[c.name for c in scope.collections],
        refused=answer.refused,
        floor=floor,
        around=answer.around,
        stages=[s.to_json() for s in answer.stages],
        results=len(answer.results),
        latency_ms=round(answer.latency_ms, 2),
    )
