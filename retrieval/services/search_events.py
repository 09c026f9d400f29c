"""The audit of searches: the event each answer leaves, the agent it was made for, and its model calls."""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.db import transaction

from accounts.models import Agent, ApiKey
from infra.errors import Invalid
from infra.validation import name_problem
from ingestion import detect_language
from retrieval.models import ModelCall, SearchEvent
from retrieval.selectors.search import SearchAnswer, SearchScope

AGENT_NAME_CHARS = Agent._meta.get_field("name").max_length or 200


class UnknownAgent(Invalid):
    field = "on_behalf_of"


def on_behalf_of_agent(*, tenant_id: uuid.UUID | str, name: str | None) -> Agent | None:
    """The agent a search is made for (its model calls are charged to it); None when the search names none."""
    if name is None:
        return None
    problem = name_problem(name, max_chars=AGENT_NAME_CHARS)
    if problem:
        raise UnknownAgent(f"on_behalf_of {problem}")
    agent = Agent.objects.filter(tenant_id=tenant_id, name=name).first()
    if agent is None:
        raise UnknownAgent(f"no agent named {name[:80]!r} in this tenant: name one of its agents, or leave it out")
    return agent


def search_event_record_staff(*, scope: SearchScope, answer: SearchAnswer, query: str = "") -> SearchEvent:
    """Audit a search a staff member tried in the admin: no key and no agent (that is how it is told apart)."""
    return _search_event_create(scope=scope, answer=answer, key=None, query=query, on_behalf_of=None)


def search_event_record(
    *, key: ApiKey, scope: SearchScope, answer: SearchAnswer, query: str = "", on_behalf_of: Agent | None = None
) -> SearchEvent:
    """Audit one search: what ran and how long; the question's text only when KB_AUDIT_QUESTIONS is on.

    With `on_behalf_of`, each model call the search made is charged to that agent (ModelCall); without it
    nothing is charged, not to the key, not to a placeholder."""
    return _search_event_create(scope=scope, answer=answer, key=key, query=query, on_behalf_of=on_behalf_of)


def _search_event_create(
    *, scope: SearchScope, answer: SearchAnswer, key: ApiKey | None, query: str, on_behalf_of: Agent | None
) -> SearchEvent:
    if on_behalf_of is not None and answer.calls:
        with transaction.atomic():  # the event and its charges together, or neither
            event = _search_event_write(scope=scope, answer=answer, key=key, query=query, on_behalf_of=on_behalf_of)
            model_calls_charge(event=event, agent=on_behalf_of, answer=answer)
        return event
    return _search_event_write(scope=scope, answer=answer, key=key, query=query, on_behalf_of=on_behalf_of)


def _search_event_write(
    *, scope: SearchScope, answer: SearchAnswer, key: ApiKey | None, query: str, on_behalf_of: Agent | None
) -> SearchEvent:
    floor = answer.floor if isinstance(answer.floor, float | int) else None
    return SearchEvent.objects.create(
        tenant_id=str(scope.tenant_id),  # a UUID (SearchScope types it loosely)
        api_key=key,
        agent_id=key.agent_id if key else None,
        on_behalf_of=on_behalf_of,
        reader=scope.reader,
        collections=[c.name for c in scope.collections],
        refused=answer.refused,
        reason=answer.reason or "",
        floor=floor,
        around=answer.around,
        threshold=_threshold_of(answer),
        question_language=detect_language(query, default="") if query else "",
        question=query if settings.KB_AUDIT_QUESTIONS else "",
        stages=[s.to_json() for s in answer.stages],
        results=len(answer.results),
        withheld=answer.withheld,
        documents=returned_documents(answer.results),
        paragraphs=answer.surfaced,
        latency_ms=round(answer.latency_ms, 2),
    )


def returned_documents(results: list[dict[str, Any]]) -> list[str]:
    """The ids of the documents an answer returned, each once, in result order (what the audit keeps)."""
    ids = (str((r.get("document") or {}).get("id") or "") for r in results)
    return list(dict.fromkeys(i for i in ids if i))


def model_calls_charge(*, event: SearchEvent, agent: Agent, answer: SearchAnswer) -> list[ModelCall]:
    """Charge the search's model calls to `agent`: kind, model, collection, tokens, duration — nothing said."""
    return ModelCall.objects.bulk_create(
        ModelCall(
            tenant_id=event.tenant_id,
            agent=agent,
            agent_name=agent.name,
            search=event,
            kind=call.kind,
            model=call.model[:200],
            collection_id=call.collection_id,
            tokens_in=call.tokens_in,
            tokens_out=call.tokens_out,
            duration_ms=round(call.ms, 2),
            ok=call.ok,
        )
        for call in answer.calls
    )


def _threshold_of(answer: SearchAnswer) -> float | None:
    # The threshold stage reports the score_threshold it applied (the strictest across collections).
    for stage in answer.stages:
        if stage.name == "threshold" and isinstance(stage.counts.get("threshold"), float | int):
            return float(stage.counts["threshold"])
    return None
