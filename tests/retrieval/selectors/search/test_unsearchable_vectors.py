"""A paragraph whose vector has no length (a pre-existing bad row) never takes a tenant's search down.

Its cosine with any question is NaN: fusion and scoring drop that score, count it in the trace, and every
other paragraph answers as before, through the API and through the MCP tool alike.
"""

from __future__ import annotations

import json

import pytest
from django.db import connection

from collections_app.models import Chunk
from tests.retrieval.services.golden.corpus import corpus_upload, paragraph
from tests.standins import Request, serve

QUESTION = {"query": "where do I lock my bicycle", "top_n": 5}
PARKING = {"query": "where do I park my car", "top_n": 5}


@pytest.fixture
def zeroed(cast, collection, upload) -> Chunk:
    """The handbook read for real, then the bicycle paragraph's vector set to 384 zeros in the database."""
    corpus_upload(cast, collection, upload)
    bad = paragraph(collection, "lock their bikes")
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE collections_app_chunk SET embedding = array_fill(0, ARRAY[384])::real[]::vector WHERE id = %s",
            [bad.pk],
        )
    return bad


def dropped(answer: dict) -> int:
    fusion = [s for s in answer["trace"] if s["stage"] == "fusion"]
    assert fusion and fusion[0]["status"] == "ran", answer["trace"]
    return fusion[0]["counts"].get("not_finite_dropped", 0)


def test_a_tenant_wide_search_answers_200_and_counts_the_dropped_score(cast, zeroed) -> None:
    response = cast.viewer.post("/api/search", QUESTION, format="json")

    assert response.status_code == 200, response.content[:300]
    answer = response.json()
    assert dropped(answer) >= 1
    assert str(zeroed.pk) not in {r["chunk_id"] for r in answer["results"]}
    # The other paragraphs still answer, with finite scores: the parking question finds the parking paragraph.
    parking = cast.viewer.post("/api/search", PARKING, format="json")
    assert parking.status_code == 200, parking.content[:300]
    found = parking.json()
    assert dropped(found) >= 1  # the bad row is a candidate of every exact scan, and is dropped every time
    assert found["results"] and "underground garage" in found["results"][0]["text"], found["reason"]
    assert all(isinstance(r["score"], float) for r in found["results"])


def test_the_mcp_search_tool_answers_the_same_with_the_dropped_count(cast, zeroed, client) -> None:
    from accounts.issuing import api_key_create

    secret = api_key_create(tenant=cast.tenant, role="viewer").secret
    response = client.post(
        "/mcp",
        data={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search", "arguments": PARKING}},
        content_type="application/json",
        HTTP_MCP_PROTOCOL_VERSION="2025-06-18",
        HTTP_AUTHORIZATION=f"Bearer {secret}",
        HTTP_ACCEPT="application/json, text/event-stream",
    )

    assert response.status_code == 200, response.content[:300]
    assert "result" in response.json(), response.content[:300]
    result = response.json()["result"]
    assert result["isError"] is False, result["content"][0]["text"][:300]
    answer = json.loads(result["content"][0]["text"])
    assert dropped(answer) >= 1
    assert answer["results"] and "underground garage" in answer["results"][0]["text"]


def test_a_reranker_answering_nan_for_one_paragraph_leaves_it_out_and_says_so(
    cast, collection, upload, settings
) -> None:
    collection.min_score = 0  # the floor off: every paragraph the reranker scored may come back
    collection.save()
    corpus_upload(cast, collection, upload)

    def scores(request: Request) -> list[float]:
        # NaN for whichever text is about bicycles, a plain score for the rest (json writes NaN as NaN).
        return [float("nan") if "bikes" in text else 0.9 - i / 100 for i, text in enumerate(request.body["texts"])]

    with serve(rerank=scores) as server:
        settings.KB_RERANK_URL = server.url + "/rerank"
        response = cast.viewer.post("/api/search", {**QUESTION, "around": 0}, format="json")

    assert response.status_code == 200, response.content[:300]
    answer = response.json()
    rerank = next(s for s in answer["trace"] if s["stage"] == "rerank")
    assert rerank["status"] == "ran" and rerank["counts"]["not_finite_dropped"] == 1, rerank
    assert answer["results"] and all("lock their bikes" not in r["text"] for r in answer["results"])
