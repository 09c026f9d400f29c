"""Schemathesis against the running API with every role's key: no 5xx, and every answer is what the schema says.

The requests go through Django's real WSGI application in this process (schemathesis' WSGI transport),
inside the test's transaction, so each role starts from the same collection and document. Examples are
bounded (KB_SCHEMATHESIS_EXAMPLES per operation and generation mode) and not shrunk, to keep the whole
run near a minute; a failure is reported with the request that caused it.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from django.core import signals
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    negative_data_rejection,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.core.result import Ok

from accounts.issuing import api_key_create
from accounts.models import Role
from collections_app.models import Document
from collections_app.services.collections import collection_create

EXAMPLES = int(os.environ.get("KB_SCHEMATHESIS_EXAMPLES", "12"))
# Not positive_data_acceptance: schema-valid settings may still break a business rule (a planned chunk strategy,
# an unregistered embedding alias, parent_size below chunk_size), refused with a 400 that says so.
CHECKS = [
    not_a_server_error,
    negative_data_rejection,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
]


class InTransaction:
    """Django's WSGI application, minus closing the connection that holds the test's transaction.

    Django's test client does the same (and re-connects the signal after each of its own requests,
    so it is done per call here rather than once).
    """

    def __init__(self) -> None:
        self.handler = get_wsgi_application()

    def __call__(self, environ, start_response):
        signals.request_started.disconnect(close_old_connections)
        signals.request_finished.disconnect(close_old_connections)
        try:
            response = self.handler(environ, start_response)
            try:
                body = b"".join(response)
            finally:
                response.close()  # sends request_finished, as a WSGI server would
            return [body]
        finally:
            signals.request_started.connect(close_old_connections)
            signals.request_finished.connect(close_old_connections)


@pytest.fixture
def wsgi_app(settings) -> InTransaction:
    # Rate limits have their own tests; here they would only turn generated cases into 429s.
    settings.KB_THROTTLE_SEARCH = settings.KB_THROTTLE_UPLOAD = ""
    return InTransaction()


def run_operation(operation, mode: GenerationMode, path_parameters: dict[str, str], headers: dict[str, str]):
    """Run one operation's bounded examples; return (statuses seen, the failure or None)."""
    statuses: Counter[int] = Counter()

    @given(case=operation.as_strategy(generation_mode=mode, path_parameters=path_parameters))
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        derandomize=True,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    def exercise(case) -> None:
        response = case.call(headers=headers)
        statuses[response.status_code] += 1
        case.validate_response(response, checks=CHECKS, headers=headers)

    try:
        exercise()
    # Hypothesis re-raises the checks' failures (a FailureGroup is a BaseExceptionGroup): keep going, report all.
    except (Exception, BaseExceptionGroup) as exc:
        return statuses, exc
    return statuses, None


@pytest.mark.parametrize("role", [Role.VIEWER, Role.EDITOR, Role.ADMIN])
def test_every_answer_matches_the_schema_and_none_is_a_server_error(cast, collection, upload, wsgi_app, role):
    assert upload(cast.editor, collection, "garage.txt", b"Bikes are stored in the garage.").status_code == 202
    document = Document.objects.get(collection=collection)
    # With the floor off every search finds the paragraph, so typed results are checked, not only empty lists.
    collection.min_score = 0
    collection.save(update_fields=["min_score"])
    doomed = collection_create(tenant=cast.tenant, name="to delete")
    secret = api_key_create(tenant=cast.tenant, role=role).secret
    headers = {"Authorization": f"Bearer {secret}"}
    schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", wsgi_app)

    seen: Counter[int] = Counter()
    failures = []
    for result in schema.get_all_operations():
        if not isinstance(result, Ok):
            pytest.fail(f"the schema has an operation schemathesis cannot read: {result.err()}")
        operation = result.ok()
        params = {"collection_id": str(collection.pk), "document_id": str(document.pk)}
        if operation.method.upper() == "DELETE":
            params["collection_id"] = str(doomed.pk)
        params = {name: value for name, value in params.items() if f"{{{name}}}" in operation.path}
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            statuses, failure = run_operation(operation, mode, params, headers)
            seen += statuses
            print(f"{operation.method.upper()} {operation.path} {mode.value}: {dict(sorted(statuses.items()))}")
            if failure is not None:
                failures.append(f"{operation.method.upper()} {operation.path} ({mode.value}): {failure}")
    print(f"\nschemathesis, {role} key: {seen.total()} cases {dict(sorted(seen.items()))}, {len(failures)} failing")
    assert seen.total() >= EXAMPLES * 10
    assert not failures, "\n\n".join(failures)


def test_the_schema_generates_and_validates_without_a_warning(tmp_path):
    from django.core.management import call_command

    # A warning here (an operationId collision, an untyped field) means part of the API is described by guesswork.
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yaml"))
    assert "DocumentPageOutput" in (tmp_path / "schema.yaml").read_text()


def test_every_operation_is_described_and_every_refusal_has_an_example() -> None:
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    operations = [(m, p, op) for p, ops in schema["paths"].items() for m, op in ops.items()]
    assert len(operations) >= 15
    for method, path, operation in operations:
        assert operation.get("summary") and operation.get("description"), f"{method} {path}"
        for code, answer in operation["responses"].items():
            if code.startswith("4"):
                assert all("examples" in c for c in answer.get("content", {}).values()), f"{method} {path} {code}"
    search = schema["paths"]["/api/search"]["post"]["requestBody"]["content"]["application/json"]
    assert len(search["examples"]) == 2


# --- the documentation's examples and descriptions -------------------------------------------------------------


def _schema() -> dict:
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)


def _strict(node: Any) -> Any:
    """An OpenAPI 3.0 schema as JSON Schema: references to `$defs`, `nullable` as a null type, and no property the
    schema does not name (an example with a field the answer lacks is as wrong as one missing a field)."""
    if isinstance(node, list):
        return [_strict(item) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        return {"$ref": "#/$defs/" + node["$ref"].rsplit("/", 1)[1]}
    out = {k: _strict(v) for k, v in node.items() if k not in {"nullable", "readOnly", "writeOnly"}}
    if "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    if node.get("nullable"):
        return {"anyOf": [out, {"type": "null"}], "description": out.get("description", "")}
    return out


def _json_schema(node: Any, components: dict) -> dict:
    return {**_strict(node), "$defs": {name: _strict(c) for name, c in components.items()}}


def _body(node: Any, components: dict) -> dict:
    """A request body's own schema (its component), each property as written there."""
    while "$ref" in node:
        node = components[node["$ref"].rsplit("/", 1)[1]]
    return {**node, "properties": {k: _strict(v) for k, v in node.get("properties", {}).items()}}


def _reads_and_search(schema: dict) -> Iterator[tuple[str, dict]]:
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            if method == "get" or path == "/api/search":
                yield f"{method.upper()} {path}", operation


def test_the_search_and_every_read_show_a_200_example_that_is_a_valid_answer() -> None:
    from jsonschema import Draft202012Validator, FormatChecker

    schema = _schema()
    components = schema["components"]["schemas"]
    checked = 0
    for name, operation in _reads_and_search(schema):
        if "application/json" not in operation["responses"]["200"].get("content", {}):
            continue  # a download (an original, an export): its example would be the file
        content = operation["responses"]["200"]["content"]["application/json"]
        assert content.get("examples"), f"{name}: no 200 example"
        validator = Draft202012Validator(_json_schema(content["schema"], components), format_checker=FormatChecker())
        for title, example in content["examples"].items():
            errors = [
                f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(example["value"])
            ]
            assert not errors, f"{name} example {title!r}: {errors}"
            checked += 1
    assert checked >= 11  # nine reads and the search's two answers

    search = schema["paths"]["/api/search"]["post"]["responses"]["200"]["content"]["application/json"]["examples"]
    answered, empty = (example["value"] for example in search.values())
    assert answered["results"] and {r["badge"] for r in answered["results"]} == {"supported", "weak"}
    first = answered["results"][0]
    assert first["text"] and first["page"] and first["section"] and first["metadata"] and answered["search_id"]
    assert (answered["reason"], empty["results"], empty["reason"], empty["retried"]) == (None, [], "below_floor", True)


def test_every_request_field_and_query_parameter_is_described() -> None:
    schema = _schema()
    components = schema["components"]["schemas"]
    undescribed = []
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            for parameter in operation.get("parameters", []):
                if parameter["in"] == "query" and not parameter.get("description"):
                    undescribed.append(f"{method.upper()} {path} ?{parameter['name']}")
            for media, content in operation.get("requestBody", {}).get("content", {}).items():
                body = _body(content["schema"], components)
                for field, spec in body.get("properties", {}).items():
                    if not spec.get("description"):
                        undescribed.append(f"{method.upper()} {path} ({media}) {field}")
    assert not undescribed, "\n".join(undescribed)


def test_the_badge_says_what_each_value_means_and_its_score_band() -> None:
    badge = _schema()["components"]["schemas"]["SearchResult"]["properties"]["badge"]
    described = badge["description"]
    assert "**supported**" in described and "**weak**" in described
    assert "0.84" in described and "0.80" in described and "score_threshold" in described


def test_each_conflict_has_its_own_example_that_fits_its_description() -> None:
    conflicts = {}
    for path, operations in _schema()["paths"].items():
        for method, operation in operations.items():
            answer = operation["responses"].get("409")
            if answer:
                [example] = answer["content"]["application/json"]["examples"].values()
                conflicts[f"{method.upper()} {path}"] = (answer["description"], example["value"]["detail"])
    assert len(conflicts) >= 8
    # What each conflict is about, named in its description and in its example's message alike.
    subjects = {
        "POST /api/search": ("width", "dimensions"),
        "POST /api/manage/readers": ("reader", "reader"),
        "PATCH /api/manage/readers/{reader_id}": ("reader", "reader"),
        "POST /api/manage/collections": ("collection", "collection"),
        "PATCH /api/manage/collections/{collection_id}": ("collection", "collection"),
        "POST /api/manage/collections/import": ("collection", "collection"),
        "POST /api/manage/collections/{collection_id}/documents": ("labels", "labels"),
        "PATCH /api/manage/collections/{collection_id}/documents/{document_id}/ingest-options": (
            "confirm_reparse", "confirm_reparse"),
        "PATCH /api/manage/collections/{collection_id}/documents/{document_id}/language": ("being read", "being read"),
        "POST /api/manage/collections/{collection_id}/documents/{document_id}/rechunk": ("being read", "being read"),
        "POST /api/manage/collections/{collection_id}/golden": ("question", "golden question"),
        "PATCH /api/manage/collections/{collection_id}/golden/{golden_id}": ("question", "golden question"),
        "POST /api/manage/collections/{collection_id}/measure": ("being measured", "being measured"),
        "POST /api/manage/collections/{collection_id}/trash/{document_id}/restore": ("same file", "same file"),
        **{f"{operation} /api/manage/collections/{{collection_id}}/documents/{{document_id}}/{rest}": ("edit", "edit")
           for operation, rest in (
               ("PATCH", "paragraphs/{paragraph_id}"),
               ("POST", "paragraphs/{paragraph_id}/split"),
               ("POST", "paragraphs/{paragraph_id}/merge-next"),
               ("POST", "paragraph-edits/{edit_id}/revert"),
               ("POST", "paragraph-edits/{edit_id}/reapply"),
               ("POST", "paragraph-edits/{edit_id}/discard"),
           )},
    }  # fmt: skip
    assert set(conflicts) == set(subjects)
    for operation, (in_description, in_example) in subjects.items():
        description, example = conflicts[operation]
        assert in_description in description and in_example in example, (operation, description, example)
