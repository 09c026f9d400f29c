"""Hostile values in every field of every JSON operation the schema declares: only 4xx, never a 500.

Generated from the OpenAPI schema, so an endpoint added later is fuzzed without anyone listing it:
NUL characters and lone surrogates in every string, integers past 2**63 and beyond any float, NaN and
infinities in every number, names longer than their limit, JSON nested past the parser's depth.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from drf_spectacular.generators import SchemaGenerator

from accounts.readers import reader_create
from collections_app.models import Chunk, Document, ParagraphEdit
from retrieval.models import Evaluation, GoldenQuestion, Measure

NUL, SURROGATE = "a\x00b", "\ud800"
DEEP = "[" * 40 + "]" * 40


def operations() -> list[tuple[str, str, dict[str, Any]]]:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    components = schema["components"]["schemas"]
    found = []
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            content = operation.get("requestBody", {}).get("content", {})
            if "application/json" not in content:
                continue  # uploads are multipart: tests/doors/api/test_fuzz.py sends them hostile files and fields
            body = content["application/json"]["schema"]
            body = components[body["$ref"].rsplit("/", 1)[-1]] if "$ref" in body else body
            found.append((method, path, body.get("properties", {})))
    return found


def hostile_values(field: dict[str, Any]) -> list[tuple[str, str]]:
    """(label, JSON text) of values this field must refuse."""
    kind = field.get("type")
    values = [("deep", DEEP)]
    if kind == "string" or "enum" in field:
        values += [("NUL", json.dumps(NUL)), ("surrogate", json.dumps(SURROGATE))]
        if "maxLength" in field:
            values += [("too long", json.dumps("é" * (field["maxLength"] + 1)))]
    if kind == "integer":
        values += [("2**63", str(2**63)), ("10**400", "1" + "0" * 400), ("-2**63-1", str(-(2**63) - 1))]
    if kind == "number":
        values += [("NaN", "NaN"), ("Infinity", "Infinity"), ("10**400", "1" + "0" * 400)]
    if kind == "array":
        values += [("NUL item", json.dumps([NUL])), ("surrogate item", json.dumps([SURROGATE]))]
    return values


CASES = [
    pytest.param(method, path, name, label, text, id=f"{method.upper()} {path} {name} {label}")
    for method, path, properties in operations()
    for name, field in properties.items()
    if not field.get("readOnly")
    for label, text in hostile_values(field)
]


@pytest.fixture
def admin_world(cast, collection):
    admin = cast.admin
    # A document row is enough: every case is refused before anything would read it.
    document = Document.objects.create(
        tenant=cast.tenant, collection=collection, content_hash="0" * 64, filename="notes.txt", status="done"
    )
    paragraph = Chunk.objects.create(
        tenant=cast.tenant, collection=collection, document=document, text="Bikes go in the rack."
    )
    edit = ParagraphEdit.objects.create(
        tenant=cast.tenant, collection=collection, document=document, operation="edit", status="stale"
    )
    ids = {
        "collection_id": collection.pk,
        "document_id": document.pk,
        "paragraph_id": paragraph.pk,
        "edit_id": edit.pk,
        "reader_id": reader_create(tenant=cast.tenant, name="ada@example.com", labels=["hr"]).pk,
        "golden_id": GoldenQuestion.objects.create(
            tenant=cast.tenant, collection=collection, question="Bikes?", markers=["rack"]
        ).pk,
        "evaluation_id": Evaluation.objects.create(tenant=cast.tenant, collection=collection).pk,
        "measure_id": Measure.objects.create(tenant=cast.tenant, collection=collection, status="done").pk,
    }
    return admin, ids


def test_the_schema_declares_json_operations_to_fuzz() -> None:
    assert len({(m, p) for m, p, _ in operations()}) >= 6 and len(CASES) >= 60


@pytest.mark.parametrize(("method", "path", "name", "label", "text"), CASES)
def test_a_hostile_value_in_any_field_is_refused_with_a_4xx(admin_world, method, path, name, label, text) -> None:
    client, ids = admin_world
    url = re.sub(r"\{(\w+)\}", lambda m: str(ids[m.group(1)]), path)
    body = f'{{"query": "bikes", "name": "n", {json.dumps(name)}: {text}}}'
    response = getattr(client, method)(url, data=body.encode("utf-8", "surrogatepass"), content_type="application/json")
    assert 400 <= response.status_code < 500, (response.status_code, response.content[:300])
