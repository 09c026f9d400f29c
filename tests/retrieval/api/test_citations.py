"""POST /api/citations/verify (and the MCP tool verify_citations): each fact of a citation on its own, over real
documents searched with the real default embedding model.

The cases are the ones an agent's answer can get wrong: an id it invented, another tenant's, one it was never
shown, one a re-index replaced or a delete removed since, one its reader may not read, and a quote that is in
the paragraph as written, only once normalised, or not at all. Reading a citation tells nothing the caller
could not read: a restricted paragraph's words never come back.
"""

from __future__ import annotations

import json
import re
import uuid
from datetime import datetime
from typing import Any

import pytest
from django.utils import timezone

from accounts.issuing import api_key_create
from accounts.models import Role
from accounts.readers import reader_create
from collections_app.models import Chunk
from collections_app.services.collections import collection_create
from retrieval.models import CitationCheck, SearchEvent
from tests.conftest import client_for
from tests.files.documents import HANDBOOK, docx_bytes, html_bytes

VERIFY = "/api/citations/verify"
REFUND_QUESTION = "when is my money paid back"
REFUNDS = "Money is paid back to the original card within five working days after we receive the parcel."
# Paragraphs only the finance reader may read: none of their words is a word the check's answers use.
SALARIES = [
    (1, "Salaries", ""),
    (2, "Bands", "Engineering salary bands range from seventy to ninety thousand euros yearly."),
    (2, "Bonuses", "Quarterly bonuses depend upon individual targets agreed with managers."),
]


def verify(client, **body) -> dict[str, Any]:
    reply = client.post(VERIFY, body, format="json")
    assert reply.status_code == 200, reply.content
    return reply.json()


def search(client, **body) -> dict[str, Any]:
    reply = client.post("/api/search", body, format="json")
    assert reply.status_code == 200, reply.content
    return reply.json()


@pytest.fixture
def handbook(cast, collection, upload):
    assert upload(cast.editor, collection, "handbook.docx", docx_bytes(HANDBOOK)).status_code == 202
    return collection


@pytest.fixture
def finance(cast, upload):
    restricted = collection_create(tenant=cast.tenant, name="finance", per_reader=True)
    reader_create(tenant=cast.tenant, name="fay@example.com", labels=["finance"])
    reader_create(tenant=cast.tenant, name="bob@example.com", labels=["sales"])
    reply = upload(cast.editor, restricted, "salaries.html", html_bytes(SALARIES), labels='["finance"]')
    assert reply.status_code == 202, reply.content
    return restricted


def paragraph(collection, containing: str) -> Chunk:
    return Chunk.objects.live().paragraphs().get(collection=collection, text__contains=containing)


def test_a_cited_paragraph_that_was_returned_is_real_current_surfaced_readable_and_holds_its_quote(
    cast, handbook
) -> None:
    answer = search(cast.viewer, query=REFUND_QUESTION, top_n=1, around=0)
    cited = answer["results"][0]["chunk_id"]
    assert paragraph(handbook, "paid back").pk == uuid.UUID(cited)

    checked = verify(
        cast.viewer,
        search_id=answer["search_id"],
        citations=[{"paragraph_id": cited, "quote": "paid back to the original card"}],
    )

    assert checked["citations"] == [
        {"paragraph_id": cited, "exists": True, "current": True, "retired": None, "surfaced": True, "readable": True,
         "quote": "exact", "similarity": 1.0},
    ]  # fmt: skip


def test_an_invented_id_and_another_tenants_id_answer_exactly_alike(cast, handbook, upload) -> None:
    theirs = collection_create(tenant=cast.outsider_tenant, name="handbook")
    assert upload(cast.outsider, theirs, "handbook.docx", docx_bytes(HANDBOOK)).status_code == 202
    their_paragraph = str(paragraph(theirs, "paid back").pk)
    invented = str(uuid.uuid4())

    checked = verify(
        cast.viewer,
        citations=[
            {"paragraph_id": their_paragraph, "quote": "paid back"},
            {"paragraph_id": invented, "quote": "paid back"},
            {"paragraph_id": "paragraph-3", "quote": "paid back"},
        ],
    )["citations"]

    nothing = {"exists": False, "current": None, "retired": None, "surfaced": None, "readable": None, "quote": None,
               "similarity": None}  # fmt: skip
    assert [c["paragraph_id"] for c in checked] == [their_paragraph, invented, "paragraph-3"]
    assert [{k: v for k, v in c.items() if k != "paragraph_id"} for c in checked] == [nothing] * 3


def test_surfaced_is_true_for_the_match_and_its_stitched_neighbour_and_false_for_a_paragraph_not_shown(
    cast, handbook
) -> None:
    answer = search(cast.viewer, query=REFUND_QUESTION, top_n=1, around=1)
    result = answer["results"][0]
    assert result["passages"] == 3  # the refunds paragraph with a neighbour on either side
    matched = result["chunk_id"]
    neighbour = str(paragraph(handbook, "sent back within thirty days").pk)
    not_shown = str(paragraph(handbook, "This handbook explains").pk)
    assert "This handbook explains" not in result["text"]

    checked = verify(
        cast.viewer,
        search_id=answer["search_id"],
        citations=[{"paragraph_id": p} for p in (matched, neighbour, not_shown)],
    )["citations"]

    assert [c["surfaced"] for c in checked] == [True, True, False]
    assert [c["exists"] for c in checked] == [True, True, True]
    assert [c["quote"] for c in checked] == [None, None, None]  # no quote sent: nothing to check


def test_without_a_search_surfaced_is_null_and_a_search_of_another_key_is_refused(cast, handbook) -> None:
    answer = search(cast.viewer, query=REFUND_QUESTION, top_n=1)
    cited = answer["results"][0]["chunk_id"]

    alone = verify(cast.viewer, citations=[{"paragraph_id": cited}])["citations"][0]
    someone_elses = cast.editor.post(
        VERIFY, {"search_id": answer["search_id"], "citations": [{"paragraph_id": cited}]}, format="json"
    )
    unknown = cast.viewer.post(
        VERIFY, {"search_id": str(uuid.uuid4()), "citations": [{"paragraph_id": cited}]}, format="json"
    )

    assert alone["surfaced"] is None and alone["exists"] is True and alone["current"] is True
    assert someone_elses.status_code == 400 and "search_id" in someone_elses.json()
    assert unknown.status_code == 400 and unknown.json() == someone_elses.json()  # the same words for both


def test_a_paragraph_a_reindex_replaced_is_not_current_and_says_when(
    cast, handbook, django_capture_on_commit_callbacks
) -> None:
    answer = search(cast.viewer, query=REFUND_QUESTION, top_n=1, around=0)
    cited = answer["results"][0]["chunk_id"]
    before = timezone.now()
    with django_capture_on_commit_callbacks(execute=True):
        assert cast.editor.post(f"/api/manage/collections/{handbook.pk}/reindex").status_code == 202
    rebuilt = str(paragraph(handbook, "paid back").pk)
    assert rebuilt != cited  # the re-index wrote new rows

    old, new = verify(
        cast.viewer,
        search_id=answer["search_id"],
        citations=[{"paragraph_id": cited, "quote": "paid back"}, {"paragraph_id": rebuilt, "quote": "paid back"}],
    )["citations"]

    assert old["exists"] is True and old["current"] is False and old["surfaced"] is True
    assert old["retired"]["how"] == "replaced"
    assert datetime.fromisoformat(old["retired"]["at"]) >= before
    # Gone from the serving build, nobody reads it: readability and its quote are not facts any more.
    assert old["readable"] is None and old["quote"] is None
    assert new["current"] is True and new["surfaced"] is False and new["quote"] == "exact"


def test_a_paragraph_whose_document_was_deleted_is_reported_deleted(cast, handbook) -> None:
    answer = search(cast.viewer, query=REFUND_QUESTION, top_n=1, around=0)
    cited = answer["results"][0]["chunk_id"]
    document = answer["results"][0]["document"]["id"]
    assert cast.editor.delete(f"/api/manage/collections/{handbook.pk}/documents/{document}").status_code == 200
    in_trash = verify(cast.viewer, citations=[{"paragraph_id": cited}])["citations"][0]
    assert in_trash["exists"] is True and in_trash["current"] is False and in_trash["retired"]["how"] == "deleted"
    assert cast.editor.delete(f"/api/manage/collections/{handbook.pk}/trash/{document}").status_code == 204  # purged

    with_search = verify(cast.viewer, search_id=answer["search_id"], citations=[{"paragraph_id": cited}])
    without = verify(cast.viewer, citations=[{"paragraph_id": cited}])

    for checked in (with_search["citations"][0], without["citations"][0]):
        assert checked["exists"] is True and checked["current"] is False
        assert checked["retired"]["how"] == "deleted"


def test_readable_follows_the_searchs_reader_and_a_quote_is_never_tried_on_what_it_may_not_read(cast, finance) -> None:
    bands = str(paragraph(finance, "salary bands").pk)
    quote = "salary bands range from seventy"
    answer = search(cast.viewer, query="engineering salary bands", collections=["finance"], reader="fay@example.com")
    assert bands in {m["paragraph_id"] for r in answer["results"] for m in r["matches"]}

    fay = verify(cast.viewer, search_id=answer["search_id"], citations=[{"paragraph_id": bands, "quote": quote}])
    bob = verify(cast.viewer, reader="bob@example.com", citations=[{"paragraph_id": bands, "quote": quote}])
    nobody = verify(cast.viewer, citations=[{"paragraph_id": bands, "quote": quote}])

    assert (fay["citations"][0]["readable"], fay["citations"][0]["quote"]) == (True, "exact")
    for checked in (bob["citations"][0], nobody["citations"][0]):
        assert checked["exists"] is True and checked["current"] is True
        assert checked["readable"] is False
        assert checked["quote"] is None and checked["similarity"] is None  # the quote would tell its words


def test_no_word_of_a_restricted_paragraph_comes_back_through_the_check(cast, finance) -> None:
    restricted = list(Chunk.objects.live().paragraphs().filter(collection=finance))
    citations = [{"paragraph_id": str(c.pk), "quote": c.text[:40]} for c in restricted]
    citations += [{"paragraph_id": str(c.pk), "quote": "nothing like it at all"} for c in restricted]

    bodies = [
        cast.viewer.post(VERIFY, {"citations": citations, "reader": "bob@example.com"}, format="json").content,
        cast.viewer.post(VERIFY, {"citations": citations}, format="json").content,
        cast.agent_client.post(VERIFY, {"citations": citations}, format="json").content,
    ]

    for body in bodies:
        said = set(re.findall(r"[a-z]{4,}", body.decode().casefold()))
        for chunk in restricted:
            assert chunk.text.encode() not in body
            assert not said & set(re.findall(r"[a-z]{4,}", chunk.text.casefold())), said


def test_an_agent_key_sees_paragraphs_outside_its_collections_as_unknown(cast, handbook) -> None:
    cited = str(paragraph(handbook, "paid back").pk)  # the agent has no collection configured

    checked = verify(cast.agent_client, citations=[{"paragraph_id": cited, "quote": "paid back"}])["citations"][0]

    assert checked["exists"] is False and checked["quote"] is None


@pytest.mark.parametrize(
    ("quote", "found"),
    [
        ("the original card within five working days", "exact"),
        ("MONEY is  paid\nback to the original card", "normalised"),  # case and whitespace
        ("ｍｏｎｅｙ ｉｓ ｐａｉｄ ｂａｃｋ", "normalised"),  # full-width letters (NFKC)
        ("the money is refunded to a voucher", "absent"),
    ],
)
def test_a_quote_is_exact_normalised_or_absent(cast, handbook, quote, found) -> None:
    cited = str(paragraph(handbook, "paid back").pk)

    checked = verify(cast.viewer, citations=[{"paragraph_id": cited, "quote": quote}])["citations"][0]

    assert checked["quote"] == found
    assert (checked["similarity"] == 1.0) is (found != "absent")


def test_an_absent_quote_that_nearly_matches_scores_closer_than_an_unrelated_one(cast, handbook) -> None:
    cited = str(paragraph(handbook, "paid back").pk)
    near, unrelated = "paid back to the orignal card within five workng days", "cyclists lock bikes in racks"

    checked = verify(cast.viewer, citations=[{"paragraph_id": cited, "quote": q} for q in (near, unrelated)])

    first, second = checked["citations"]
    assert first["quote"] == second["quote"] == "absent"
    assert first["similarity"] > 0.9 > 0.6 > second["similarity"]


def test_the_check_is_recorded_under_its_search_with_counts_only_and_its_agent(cast, handbook) -> None:
    answer = search(cast.viewer, query=REFUND_QUESTION, top_n=1, around=0)
    cited = answer["results"][0]["chunk_id"]
    quote = "paid back to the original card"

    checked = verify(
        cast.viewer,
        search_id=answer["search_id"],
        on_behalf_of="support-bot",
        citations=[{"paragraph_id": cited, "quote": quote}, {"paragraph_id": str(uuid.uuid4())}],
    )

    record = CitationCheck.objects.get(pk=checked["check_id"])
    assert record.search == SearchEvent.objects.get(pk=answer["search_id"])
    assert record.on_behalf_of == cast.agent and record.citations == 2
    assert record.counts == {"exists": 1, "current": 1, "replaced": 0, "deleted": 0, "surfaced": 1, "readable": 1,
                             "quote_exact": 1, "quote_normalised": 0, "quote_absent": 0}  # fmt: skip
    stored = json.dumps([record.counts, record.citations])
    assert quote not in stored and cited not in stored


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"citations": []}, "citations"),
        ({"citations": [{"paragraph_id": "x", "quote": "a\x00b"}]}, "citations"),
        ({"citations": [{"paragraph_id": "x"}] * 101}, "citations"),
        ({"citations": [{"quote": "no id"}]}, "citations"),
        ({"search_id": "not-a-search", "citations": [{"paragraph_id": "x"}]}, "search_id"),
        ({"citations": [{"paragraph_id": "x"}], "on_behalf_of": "nobody"}, "on_behalf_of"),
    ],
)
def test_a_check_it_cannot_run_is_a_400_naming_the_field(cast, body, field) -> None:
    reply = cast.viewer.post(VERIFY, body, format="json")

    assert reply.status_code == 400, reply.content
    assert any(named.split(".")[0] == field for named in reply.json()), reply.json()
    assert not CitationCheck.objects.exists()


def test_an_unknown_reader_is_refused_as_a_search_refuses_it(cast, handbook) -> None:
    reply = cast.viewer.post(VERIFY, {"reader": "eve@example.com", "citations": [{"paragraph_id": "x"}]}, format="json")

    assert reply.status_code == 403


def test_the_check_needs_a_key(client) -> None:
    assert (
        client.post(VERIFY, {"citations": [{"paragraph_id": "x"}]}, content_type="application/json").status_code == 401
    )


def test_verify_citations_over_mcp_answers_as_the_api_does(cast, handbook, client) -> None:
    secret = api_key_create(tenant=cast.tenant, role=Role.VIEWER).secret
    api = client_for(secret)
    answer = search(api, query=REFUND_QUESTION, top_n=1, around=1)
    body = {
        "search_id": answer["search_id"],
        "citations": [
            {"paragraph_id": answer["results"][0]["chunk_id"], "quote": "MONEY is paid back"},
            {"paragraph_id": str(paragraph(handbook, "Parcels leave").pk), "quote": "leave the warehouse"},
            {"paragraph_id": str(uuid.uuid4())},
        ],
    }
    rest = verify(api, **body)

    mcp = client.post(
        "/mcp",
        data={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "verify_citations", "arguments": body},
        },
        content_type="application/json",
        HTTP_MCP_PROTOCOL_VERSION="2025-06-18",
        HTTP_AUTHORIZATION=f"Bearer {secret}",
        HTTP_ACCEPT="application/json, text/event-stream",
    )
    bad = client.post(
        "/mcp",
        data={"jsonrpc": "2.0", "id": 2, "method": "tools/call",
              "params": {"name": "verify_citations", "arguments": {"citations": []}}},
        content_type="application/json",
        HTTP_MCP_PROTOCOL_VERSION="2025-06-18",
        HTTP_AUTHORIZATION=f"Bearer {secret}",
        HTTP_ACCEPT="application/json, text/event-stream",
    )  # fmt: skip

    result = mcp.json()["result"]
    assert result.get("isError") is not True, result
    over_mcp = result["structuredContent"]
    assert over_mcp["check_id"] != rest["check_id"]  # each call is its own record
    assert over_mcp["citations"] == rest["citations"]
    assert [c["quote"] for c in rest["citations"]] == ["normalised", "exact", None]
    refused = bad.json()["result"]
    assert refused["isError"] is True and "400" in refused["content"][0]["text"]
    assert CitationCheck.objects.filter(search_id=answer["search_id"]).count() == 2


def test_the_openapi_schema_documents_the_check_with_an_example_request_and_answer(client) -> None:
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()

    operation = schema["paths"][VERIFY]["post"]
    request = operation["requestBody"]["content"]["application/json"]
    answer = operation["responses"]["200"]["content"]["application/json"]
    assert request["examples"] and answer["examples"]
    example = next(iter(answer["examples"].values()))["value"]
    assert {"exists", "current", "surfaced", "readable", "quote", "similarity"} <= set(example["citations"][0])


def test_a_paragraph_an_editor_hid_is_reported_hidden_and_its_quote_is_not_tried(cast, handbook) -> None:
    cited = paragraph(handbook, "paid back")
    url = f"/api/manage/collections/{handbook.pk}/documents/{cited.document_id}/paragraphs/{cited.pk}"
    assert cast.editor.patch(url, {"hidden": True}, format="json").status_code == 200

    checked = verify(cast.viewer, citations=[{"paragraph_id": str(cited.pk), "quote": "paid back"}])["citations"][0]

    assert checked["exists"] is True and checked["current"] is False
    assert checked["retired"] == {"how": "hidden", "at": None}
    assert checked["readable"] is None and checked["quote"] is None
