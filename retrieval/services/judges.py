"""A collection's judge: setting it, removing it, and what an editor is warned of."""

from __future__ import annotations

from collections_app.models import Collection
from infra.errors import Invalid
from infra.validation import text_problem
from retrieval.llm import llm_configured
from retrieval.models import CollectionJudge

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
