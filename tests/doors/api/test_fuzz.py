"""Hostile input to every endpoint gets a 4xx naming what is wrong, never a 500.

NUL characters, lone surrogates, integers past 2**63, JSON nested past any sane depth, thousands of
query parameters and names too long in bytes each used to reach PostgreSQL (or Python's recursion
limit) and come back as a 500.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from rest_framework.test import APIClient

from collections_app.models import Collection, Document

NUL = "a\x00b"
SURROGATE = "\ud800"  # only JSON can carry one: "\ud800" is valid JSON text but no Unicode character
HUGE = [2**63, 2**64, -(2**63) - 1, 10**400]
LONG = "é" * 200  # 200 characters, 400 bytes


def deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def deep_object(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


DEEP = [deep(33), deep_object(33), deep(100_000)]
MANY_PARAMS = "&".join(f"p{i}=1" for i in range(5000))


@dataclass
class Target:
    client: APIClient
    collection: Collection
    document: Document

    @property
    def base(self) -> str:
        return f"/api/manage/collections/{self.collection.pk}"

    def raw(self, method: str, url: str, body: str) -> int:
        """Send a JSON body as written (json.dumps cannot write a lone surrogate escape unescaped)."""
        return getattr(self.client, method)(
            url, data=body.encode("utf-8", "surrogatepass"), content_type="application/json"
        ).status_code

    def json(self, method: str, url: str, data: object) -> int:
        return self.raw(method, url, json.dumps(data))


@pytest.fixture
def target(cast, collection, upload) -> Target:
    admin = cast.admin
    assert upload(admin, collection, "notes.txt", b"Bikes are stored in the garage.").status_code == 202
    return Target(admin, collection, Document.objects.get(collection=collection))


def json_payloads(
    fields: dict[str, Callable[[object], object]], *, named: tuple[str, ...] = ()
) -> list[tuple[str, str]]:
    """For each field (a function putting a hostile value where it goes): NUL, surrogate; too long for `named`."""
    cases = []
    for name, place in fields.items():
        values = [("NUL", NUL), ("surrogate", SURROGATE)] + ([("long", LONG * 60)] if name in named else [])
        for label, value in values:
            # Written by hand so the surrogate stays an escape: json.dumps(ensure_ascii=True) does exactly that.
            cases.append((f"{name} {label}", json.dumps(place(value))))
    return cases


def check(cases: list[tuple[str, int]]) -> None:
    print(f"\n{len(cases)} hostile requests: {sorted({code for _, code in cases})}")
    bad = [(label, code) for label, code in cases if not 400 <= code < 500]
    assert not bad, f"{len(bad)} of {len(cases)} hostile requests were not refused with a 4xx: {bad}"


def test_collection_create_refuses_every_hostile_input(target):
    url = "/api/manage/collections"
    cases = json_payloads(
        {
            "name": lambda v: {"name": v},
            "description": lambda v: {"name": "ok", "description": v},
            "languages": lambda v: {"name": "ok", "languages": [v]},
            "embedding_alias": lambda v: {"name": "ok", "embedding_alias": v},
            "key": lambda v: {"name": "ok", v: 1},
        },
        named=("name", "description", "languages", "embedding_alias"),
    )
    results = [(label, target.raw("post", url, body)) for label, body in cases]
    results += [(f"around {n}", target.json("post", url, {"name": "n", "around": n})) for n in HUGE]
    results += [(f"chunk_size {n}", target.json("post", url, {"name": "n", "chunk_size": n})) for n in HUGE]
    results += [(f"depth {len(body)}", target.raw("post", url, body)) for body in DEEP]
    results.append(("200 x é", target.json("post", url, {"name": LONG})))
    results.append(("NaN", target.raw("post", url, '{"name": "n", "hybrid_weight": NaN}')))
    check(results)
    assert Collection.objects.filter(tenant=target.collection.tenant).count() == 1


def test_collection_settings_out_of_bounds_are_refused_naming_the_field(target):
    url = target.base
    for field, value in [
        ("around", 32_767),
        ("around", 6),
        ("rerank_top_n", 0),
        ("rerank_top_k", 10**9),
        ("hybrid_weight", -5),
        ("hybrid_weight", 1e308),
        ("score_threshold", 1.5),
        ("min_score", -0.1),
        ("chunk_size", 0),
        ("chunk_overlap", 2**31),
        ("parent_size", 10**12),
    ]:
        response = target.client.patch(url, {field: value}, format="json")
        assert response.status_code == 400, (field, value, response.content)
        assert field in response.json(), (field, response.json())
    target.collection.refresh_from_db()
    assert (target.collection.around, target.collection.rerank_top_n, target.collection.hybrid_weight) == (
        None,
        8,
        None,
    )


def test_collection_detail_and_patch_refuse_every_hostile_input(target):
    url = target.base
    cases = json_payloads(
        {"name": lambda v: {"name": v}, "languages": lambda v: {"languages": [v]}}, named=("name", "languages")
    )
    results = [(label, target.raw("patch", url, body)) for label, body in cases]
    results += [(f"around {n}", target.json("patch", url, {"around": n})) for n in HUGE]
    results += [(f"depth {len(body)}", target.raw("patch", url, body)) for body in DEEP]
    check(results)


def test_document_list_refuses_every_hostile_query(target):
    url = f"{target.base}/documents"
    results = [(f"offset {n}", target.client.get(url, {"offset": n}).status_code) for n in HUGE]
    results += [(f"limit {n}", target.client.get(url, {"limit": n}).status_code) for n in HUGE]
    results += [("offset NUL", target.client.get(url, {"offset": NUL}).status_code)]
    results += [("5,000 parameters", target.client.get(f"{url}?{MANY_PARAMS}").status_code)]
    check(results)


def test_upload_refuses_every_hostile_field(target):
    url = f"{target.base}/documents"

    def post(filename: str = "a.txt", **fields: str) -> int:
        file = io.BytesIO(b"some words to read")
        file.name = filename
        return target.client.post(url, {"file": file, **fields}, format="multipart").status_code

    results = [
        ("source_uri NUL", post(source_uri=f"https://example.org/{NUL}")),
        ("source_uri javascript:", post(source_uri="javascript:alert(1)")),
        ("source_uri data:", post(source_uri="data:text/html,<script>")),
        ("ingest_options NUL", post(ingest_options=json.dumps({"labels": [NUL]}))),
        ("ingest_options surrogate", post(ingest_options=json.dumps({"labels": [SURROGATE]}))),
        ("ingest_options column role key NUL", post(ingest_options=json.dumps({"column_roles": {NUL: "both"}}))),
        ("ingest_options deep", post(ingest_options=deep(100_000))),
        ("ingest_options depth 33", post(ingest_options=deep_object(33))),
        ("ingest_options long label", post(ingest_options=json.dumps({"labels": [LONG]}))),
        # A form field past DATA_UPLOAD_MAX_MEMORY_SIZE (10 MB): Django's RequestDataTooBig, answered 413.
        ("ingest_options 11 MB", post(ingest_options=json.dumps({"labels": ["x" * 11_000_000]}))),
    ]
    check(results)
    assert Document.objects.filter(collection=target.collection).count() == 1


def test_a_nul_in_a_file_name_never_reaches_the_database(target):
    file = io.BytesIO(b"a file whose name hides a NUL")
    file.name = f"re{NUL}port.txt"
    response = target.client.post(f"{target.base}/documents", {"file": file}, format="multipart")
    # Django's upload parser drops unprintable characters from file names; whatever is left is stored.
    assert response.status_code == 202, response.content
    assert Document.objects.get(pk=response.json()["document_id"]).filename == "rea" + "bport.txt"


def test_upload_of_a_name_too_long_in_bytes_is_not_a_server_error(target):
    file = io.BytesIO(b"a file whose name is 200 characters but 400 bytes")
    file.name = LONG + ".txt"
    response = target.client.post(f"{target.base}/documents", {"file": file}, format="multipart")
    # The name is kept for people; the stored file's own name fits the file system's 255 bytes.
    assert response.status_code == 202, response.content
    document = Document.objects.get(pk=response.json()["document_id"])
    assert document.filename == LONG + ".txt"
    assert len((document.file.name or "").rsplit("/", 1)[-1].encode()) <= 255


def test_ingest_options_refuse_every_hostile_input(target):
    url = f"{target.base}/documents/{target.document.pk}/ingest-options"
    cases = json_payloads(
        {
            "labels": lambda v: {"labels": [v], "confirm_reparse": True},
            "column role": lambda v: {"column_roles": {"status": v}, "confirm_reparse": True},
            "column name": lambda v: {"column_roles": {v: "both"}, "confirm_reparse": True},
            "records_path": lambda v: {"records_path": v, "confirm_reparse": True},
            "table_mode": lambda v: {"table_mode": v, "confirm_reparse": True},
        },
        named=("labels", "column role", "column name", "records_path", "table_mode"),
    )
    results = [(label, target.raw("patch", url, body)) for label, body in cases]
    results += [(f"depth {len(body)}", target.raw("patch", url, body)) for body in DEEP]
    check(results)
    target.document.refresh_from_db()
    assert target.document.ingest_options == {}


def test_search_refuses_every_hostile_input(target):
    url = "/api/search"
    cases = json_payloads(
        {
            "query": lambda v: {"query": v},
            "collections": lambda v: {"query": "bikes", "collections": [v]},
            "reader_labels": lambda v: {"query": "bikes", "reader_labels": [v]},
            "filter value": lambda v: {"query": "bikes", "filters": {"author": v}},
            "filter key": lambda v: {"query": "bikes", "filters": {v: "x"}},
            "filter in": lambda v: {"query": "bikes", "filters": {"author": {"in": [v]}}},
        },
        named=("query", "collections", "reader_labels", "filter key"),
    )
    results = [(label, target.raw("post", url, body)) for label, body in cases]
    results += [(f"top_n {n}", target.json("post", url, {"query": "bikes", "top_n": n})) for n in HUGE]
    results += [(f"around {n}", target.json("post", url, {"query": "bikes", "around": n})) for n in HUGE]
    results += [(f"depth {len(body)}", target.raw("post", url, body)) for body in DEEP]
    results += [("filters depth 33", target.raw("post", url, '{"query": "x", "filters": ' + deep_object(33) + "}"))]
    results += [("5,000-digit integer", target.raw("post", url, '{"query": "x", "top_n": ' + "9" * 5000 + "}"))]
    results += [
        (
            "invalid UTF-8",
            target.client.post(url, b'{"query": "\xff\xfe"}', content_type="application/json").status_code,
        )
    ]
    results += [("body 2 MB", target.json("post", url, {"query": "x", "filters": {"author": "x" * 2_000_000}}))]
    check(results)
    # A charset Python does not know is ignored by Django (the body is read as UTF-8): answered, never a 500.
    unknown = target.client.post(url, b'{"query": "x"}', content_type="application/json; charset=klingon")
    assert unknown.status_code == 200


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/api/manage/collections"),
        ("post", "/api/manage/collections"),
        ("get", "{base}"),
        ("patch", "{base}"),
        ("get", "{base}/documents"),
        ("get", "{base}/documents/{document}"),
        ("patch", "{base}/documents/{document}/ingest-options"),
        ("get", "{base}/builds"),
        ("post", "/api/search"),
    ],
)
def test_five_thousand_query_parameters_are_never_a_server_error(target, method, path):
    url = path.format(base=target.base, document=target.document.pk)
    body = {} if method == "get" else {"data": b"{}", "content_type": "application/json"}
    response = getattr(target.client, method)(f"{url}?{MANY_PARAMS}", **body)
    assert response.status_code < 500, response.content
