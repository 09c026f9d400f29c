from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction

from accounts.models import Agent, ApiKey, Tenant
from collections_app.exceptions import Conflict, Invalid
from collections_app.ingestion import detect_language
from collections_app.models import Collection
from collections_app.services.keys import ANY_READER
from collections_app.validation import name_problem, text_problem
from retrieval.llm import llm_configured
from retrieval.models import CollectionJudge, ModelCall, Reader, SearchEvent
from retrieval.search import SearchAnswer, SearchScope

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


# --- readers --------------------------------------------------------------------------------------------

READER_NAME_CHARS = Reader._meta.get_field("name").max_length or 200
LABEL_CHARS = Reader._meta.get_field("labels").base_field.max_length or 100


class ReaderNameTaken(Conflict):
    field = "name"


class InvalidReader(Invalid):
    pass


def _reader_clean(values: dict[str, Any]) -> dict[str, Any]:
    cleaned = dict(values)
    if "name" in values:
        problem = name_problem(values["name"], max_chars=READER_NAME_CHARS)
        if problem:
            raise InvalidReader(f"name {problem}", field="name")
        cleaned["name"] = values["name"].strip()
        if cleaned["name"].casefold() == ANY_READER:
            raise InvalidReader(
                f'name "{ANY_READER}" is reserved: it means every reader when a key is given readers', field="name"
            )
        if "," in cleaned["name"]:
            raise InvalidReader("name must not contain a comma: commas separate reader names", field="name")
    if "labels" in values:
        labels = values["labels"]
        if not isinstance(labels, list) or not all(isinstance(label, str) for label in labels):
            raise InvalidReader("labels must be a list of label names", field="labels")
        for label in labels:
            problem = name_problem(label, max_chars=LABEL_CHARS)
            if problem:
                raise InvalidReader(f"label {label[:40]!r} {problem}", field="labels")
        cleaned["labels"] = sorted({label.strip() for label in labels})
    return cleaned


def reader_create(*, tenant: Tenant, name: str, labels: list[str] | None = None) -> Reader:
    values = _reader_clean({"name": name, "labels": labels or []})
    reader = Reader(tenant=tenant, **values)
    _reader_save(reader)
    return reader


def reader_update(*, reader: Reader, **changes: Any) -> Reader:
    """Change a reader's name or labels; the next search as that reader reads with the new labels."""
    for field, value in _reader_clean(changes).items():
        setattr(reader, field, value)
    _reader_save(reader, update_fields=[*changes, "updated_at"])
    return reader


def reader_delete(*, reader: Reader) -> None:
    reader.delete()  # its past searches keep their audit rows (reader set to null)


def _reader_save(reader: Reader, update_fields: list[str] | None = None) -> None:
    try:
        with transaction.atomic():
            reader.save(update_fields=update_fields)
    except IntegrityError as exc:
        if "reader_name_unique_per_tenant" in str(exc):
            raise ReaderNameTaken(f"a reader named {reader.name!r} already exists") from exc
        raise


# --- judges ---------------------------------------------------------------------------------------------

JUDGE_MAX_TIMEOUT = 120.0  # seconds: a search waits for its judge, so the wait stays bounded


class InvalidJudge(Invalid):
    pass


def collection_judge_set(
    *, collection: Collection, enabled: bool = True, model: str = "", timeout: float | None = None, prompt: str = ""
) -> CollectionJudge:
    """Give a collection its judge (or replace its settings): with KB_LLM_URL set, its searches may be refused."""
    for field, value in (("model", model), ("prompt", prompt)):
        problem = text_problem(value)
        if problem:
            raise InvalidJudge(f"{field} {problem}", field=field)
    if timeout is not None and not 0 < timeout <= JUDGE_MAX_TIMEOUT:
        raise InvalidJudge(f"timeout must be above 0 and at most {JUDGE_MAX_TIMEOUT:g} seconds", field="timeout")
    judge, _ = CollectionJudge.objects.update_or_create(
        collection=collection,
        defaults={"tenant_id": collection.tenant_id, "enabled": enabled, "model": model.strip(), "timeout": timeout,
                  "prompt": prompt.strip()},
    )  # fmt: skip
    return judge


NO_ENDPOINT_WARNING = (
    "the judge is enabled but KB_LLM_URL is not set: this collection's searches are not judged and answer "
    "refused: null until the server is given a chat endpoint (KB_LLM_URL, see the README's configuration)"
)


def judge_warnings(judge: CollectionJudge | None) -> list[str]:
    """What an editor who enabled a judge should know: [] when it can run (or is off)."""
    if judge is not None and judge.enabled and not llm_configured():
        return [NO_ENDPOINT_WARNING]
    return []


def judged_collections_without_endpoint() -> list[str]:
    """Names ("tenant/collection") of the collections whose enabled judge cannot run: KB_LLM_URL is not set."""
    if llm_configured():
        return []
    rows = CollectionJudge.objects.filter(enabled=True).values_list("tenant__name", "collection__name")
    return [f"{tenant}/{name}" for tenant, name in rows.order_by("tenant__name", "collection__name")]


def collection_judge_remove(*, collection: Collection) -> None:
    """The collection's searches can no longer be refused (refused is null)."""
    CollectionJudge.objects.filter(collection=collection).delete()
