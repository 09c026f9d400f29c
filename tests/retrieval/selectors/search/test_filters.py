"""Metadata filters on search: exact answer sets, refusals that name the key, windows that never leak."""

from __future__ import annotations

import json
import re
from datetime import date

import pytest

from collections_app.models import Chunk, Document
from collections_app.services.collections import collection_create
from tests.files.records import csv_bytes, issue_rows

# Every record's text starts with "id: N\ntitle: ...", so the keyword side finds all of them for "title";
# with the floor off (min_score 0) and top_n above the filtered count, the answer set is complete.
EVERY_ROW = "title"


def ingest(cast, collection, upload, name: str, content: bytes) -> Document:
    response = upload(cast.editor, collection, name, content)
    assert response.status_code == 202, response.content
    document = Document.objects.get(pk=response.json()["document_id"])
    assert document.status == "done", document.error
    return document


def search(client, **body):
    response = client.post("/api/search", body, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def refused(client, **body) -> str:
    response = client.post("/api/search", body, format="json")
    assert response.status_code == 400, response.content
    return response.json()["detail"]


def row_ids(answer: dict) -> list[int]:
    """Every row in the answer: adjacent matching rows are stitched into one result, each starting "id: N"."""
    ids = [int(i) for r in answer["results"] for i in re.findall(r"(?:^|\s)id: (\d+)\n", r["text"])]
    assert sum(r["passages"] for r in answer["results"]) == len(ids)
    return sorted(ids)


@pytest.fixture
def open_collection(collection):
    collection.min_score = 0
    collection.save()
    return collection


@pytest.fixture
def issues(cast, open_collection, upload):
    """Twenty issues: small enough to embed in a few seconds, varied enough for every type of filter."""
    rows = issue_rows(20)
    ingest(cast, open_collection, upload, "issues.csv", csv_bytes(rows))
    return rows


@pytest.fixture
def declared(collection):
    """A schema as an upload of issues declares it: refusals happen before any retrieval, so nothing is embedded."""
    collection.metadata_schema = {
        "id": {"type": "number"},
        "status": {"type": "enum", "values": ["blocked", "closed", "open"]},
        "priority": {"type": "enum", "values": ["P1", "P2", "P3", "P4"]},
        "opened_on": {"type": "date"},
        "estimate": {"type": "number"},
    }
    collection.save()
    return collection


@pytest.mark.slow
def test_a_thousand_row_csv_gives_a_thousand_paragraphs_and_filters_return_exactly_the_matching_rows(
    cast, open_collection, upload
):
    rows = issue_rows(1000)
    document = ingest(cast, open_collection, upload, "issues.csv", csv_bytes(rows))
    assert Chunk.objects.filter(document=document).count() == 1000

    def matching(filters: dict) -> list[int]:
        answer = search(cast.viewer, query=EVERY_ROW, top_n=50, around=0, filters=filters)
        keyword = next(s for s in answer["trace"] if s["stage"] == "keyword retrieval")
        ids = row_ids(answer)
        assert keyword["counts"]["filter_matches"] == len(ids)
        return ids

    by_estimate = [r["id"] for r in rows if 10 <= r["estimate"] <= 11]
    assert 0 < len(by_estimate) < 50
    assert matching({"estimate": {"gte": 10, "lte": 11}}) == by_estimate

    by_date = [r["id"] for r in rows if date(2025, 9, 1) <= r["opened_on"] < date(2025, 9, 11)]
    assert 0 < len(by_date) < 50
    assert matching({"opened_on": {"gte": "2025-09-01", "lt": "2025-09-11"}}) == by_date

    blocked = [r["id"] for r in rows if r["status"] == "blocked"]
    assert 0 < len(blocked) < 50
    assert matching({"status": "blocked"}) == blocked

    urgent_blocked = [r["id"] for r in rows if r["status"] == "blocked" and r["priority"] in ("P1", "P2")]
    assert matching({"status": "blocked", "priority": {"in": ["P1", "P2"]}}) == urgent_blocked


def test_filters_combine_operators_and_types_on_a_small_file(cast, issues):
    expected = [r["id"] for r in issues if r["estimate"] in (1.5, 2, 20) and r["opened_on"] >= date(2025, 8, 1)]
    answer = search(
        cast.viewer,
        query=EVERY_ROW,
        top_n=50,
        around=0,
        filters={"estimate": {"in": [1.5, 2, 20]}, "opened_on": {"gte": "2025-08-01"}},
    )
    assert row_ids(answer) == expected

    others = sorted({r["status"] for r in issues} - {"open"})
    not_open = [r["id"] for r in issues if r["status"] != "open" and r["id"] > 5]
    answer = search(
        cast.viewer,
        query=EVERY_ROW,
        top_n=50,
        around=0,
        filters={"status": {"in": others}, "id": {"gt": 5}},
    )
    assert row_ids(answer) == not_open


def test_the_trace_reports_the_filter_in_every_retrieval_stage(cast, issues):
    answer = search(cast.viewer, query=EVERY_ROW, around=0, filters={"status": "open", "id": {"lte": 10}})

    stages = {s["stage"]: s for s in answer["trace"]}
    expected = sum(1 for r in issues if r["status"] == "open" and r["id"] <= 10)
    for name in ("keyword retrieval", "vector retrieval"):
        assert stages[name]["counts"]["filters"] == ["status eq", "id lte"]
        assert stages[name]["counts"]["filter_matches"] == expected
    assert stages["vector retrieval"]["counts"]["scan"] == "exact"
    assert "open" not in json.dumps(stages["keyword retrieval"]["counts"])  # keys and operators, not values


def test_a_window_stops_at_a_neighbour_the_filter_leaves_out(cast, open_collection, upload):
    content = b"id,title,status\n1,Alpha title,open\n2,Beta title,blocked\n3,Gamma title,blocked\n4,Delta title,open\n"
    ingest(cast, open_collection, upload, "four.csv", content)

    answer = search(cast.viewer, query=EVERY_ROW, around=1, filters={"status": "blocked"})

    assert len(answer["results"]) == 1
    window = answer["results"][0]
    assert window["passages"] == 2
    assert "Beta" in window["text"] and "Gamma" in window["text"]
    assert "Alpha" not in window["text"] and "Delta" not in window["text"]


def test_platform_keys_need_no_schema(cast, open_collection, upload, issues):
    other = ingest(cast, open_collection, upload, "more.csv", csv_bytes(issue_rows(3, seed=99)))

    answer = search(cast.viewer, query=EVERY_ROW, top_n=50, around=0, filters={"document": str(other.pk)})
    assert {r["document"]["id"] for r in answer["results"]} == {str(other.pk)}
    assert row_ids(answer) == [1, 2, 3]

    languages = set(Chunk.objects.values_list("language", flat=True))
    answer = search(cast.viewer, query=EVERY_ROW, top_n=50, around=0, filters={"language": {"in": sorted(languages)}})
    assert len(row_ids(answer)) == 23
    # author and created are accepted everywhere; these records carry neither, so nothing matches.
    assert search(cast.viewer, query=EVERY_ROW, filters={"created": {"gte": "2026-01-01"}})["results"] == []
    assert search(cast.viewer, query=EVERY_ROW, filters={"author": "ada"})["results"] == []


def test_an_unknown_key_is_400_naming_it_and_the_keys_there_are(cast, declared):
    detail = refused(cast.viewer, query="login", filters={"colour": "red"})
    assert "unknown key 'colour'" in detail
    assert "status" in detail and "opened_on" in detail and "author" in detail


@pytest.mark.parametrize(
    ("filters", "named"),
    [
        ({"estimate": "ten"}, "filters.estimate: 'ten' is not a number"),
        ({"estimate": {"gte": True}}, "filters.estimate: True is not a number"),
        ({"opened_on": {"gte": "last week"}}, "filters.opened_on: 'last week' is not a date"),
        ({"opened_on": "2025-09-01T10:00"}, "filters.opened_on: '2025-09-01T10:00' is not a date"),
        ({"status": "shipped"}, "filters.status: 'shipped' is not one of its values"),
        ({"status": 3}, "filters.status: 3 is not text"),
        ({"status": {"gt": "open"}}, "filters.status: gt compares numbers and dates"),
        ({"status": {"like": "op%"}}, "filters.status: unknown operator 'like'"),
        ({"priority": {"in": []}}, "filters.priority: in takes a non-empty list"),
        ({"document": "not-an-id"}, "filters.document: 'not-an-id' is not a document id"),
        (["status", "open"], "filters must be an object"),
    ],
)
def test_a_value_of_the_wrong_type_is_400_naming_the_key(cast, declared, filters, named):
    assert named in refused(cast.viewer, query="login", filters=filters)


def test_the_union_of_the_searched_collections_schemas_is_filterable(cast, open_collection, upload, issues):
    people = collection_create(tenant=cast.tenant, name="people", min_score=0)
    ingest(cast, people, upload, "people.csv", b"name,team\nAda,core\nGrace,core\nLinus,infra\nKen,infra\n")

    answer = search(cast.viewer, query="team", top_n=50, around=0, filters={"team": "infra"})
    assert sorted(re.findall(r"name: (\w+)", " ".join(r["text"] for r in answer["results"]))) == ["Ken", "Linus"]
    # Naming only the issues collection narrows the keys to its schema.
    assert "unknown key 'team'" in refused(cast.viewer, query="team", collections=["handbook"], filters={"team": "x"})


def test_a_key_typed_two_ways_in_the_searched_collections_is_refused_naming_both(cast, issues, upload):
    other = collection_create(tenant=cast.tenant, name="estimates")
    ingest(cast, other, upload, "e.csv", b"estimate,note\nsmall,a\nlarge,b\nsmall,c\nlarge,d\n")

    detail = refused(cast.viewer, query="x", filters={"estimate": {"gte": 1}})
    assert "estimates declares it as enum and handbook as number" in detail
    assert search(cast.viewer, query="x", collections=["handbook"], filters={"estimate": {"gte": 1}})


def test_another_tenant_cannot_filter_on_this_tenants_keys(cast, declared):
    collection_create(tenant=cast.outsider_tenant, name="handbook")
    assert "unknown key 'status'" in refused(cast.outsider, query="login", filters={"status": "open"})
