"""A judge enabled while KB_LLM_URL is not set never runs: the API answer and the start-up checks say so."""

from __future__ import annotations

from django.core import checks

from retrieval.models import CollectionJudge
from retrieval.services.judges import NO_ENDPOINT_WARNING, collection_judge_set


def test_the_judge_answer_warns_while_no_chat_endpoint_is_set(cast, collection, settings) -> None:
    settings.KB_LLM_URL = ""
    url = f"/api/manage/collections/{collection.pk}/judge"

    enabled = cast.editor.put(url, {"enabled": True}, format="json")

    assert enabled.status_code == 200
    assert enabled.json()["warnings"] == [NO_ENDPOINT_WARNING] and enabled.json()["endpoint_configured"] is False
    assert cast.viewer.get(url).json()["warnings"] == [NO_ENDPOINT_WARNING]
    assert cast.editor.put(url, {"enabled": False}, format="json").json()["warnings"] == []
    settings.KB_LLM_URL = "http://127.0.0.1:9/v1"
    assert cast.editor.put(url, {"enabled": True}, format="json").json()["warnings"] == []


def test_the_start_up_check_names_each_judged_collection_without_an_endpoint(cast, collection, settings) -> None:
    settings.KB_LLM_URL = ""
    assert _judge_warnings() == []  # no judge: nothing to say

    collection_judge_set(collection=collection, enabled=True)
    [warning] = _judge_warnings()
    assert warning.level == checks.WARNING and "acme/handbook" in warning.msg and "KB_LLM_URL" in str(warning.hint)

    CollectionJudge.objects.update(enabled=False)
    assert _judge_warnings() == []
    CollectionJudge.objects.update(enabled=True)
    settings.KB_LLM_URL = "http://127.0.0.1:9/v1"
    assert _judge_warnings() == []


def _judge_warnings() -> list[checks.CheckMessage]:
    return [m for m in checks.run_checks() if m.id == "retrieval.W001"]
