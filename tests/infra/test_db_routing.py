"""The database router's rule without a replica server: the primary by default, and a replica that cannot be
reached passed over (or the search refused) in the trace's words. The real standby: tests/ops/test_replicas.py."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator

import pytest
from django.db import OperationalError, connections

from collections_app.models import Document
from infra import db_routing

DOWN = {
    "ENGINE": "django.db.backends.postgresql",
    "NAME": "kbsite",
    "USER": "postgres",
    "HOST": "127.0.0.1",
    "PORT": "1",  # nothing listens there: a replica that is down
    "OPTIONS": {"connect_timeout": 2},
    "TEST": {"MIRROR": "default"},
}


@pytest.fixture
def replica_down(monkeypatch) -> Iterator[None]:
    # As settings.py declares one from KB_DATABASE_REPLICA_URLS, without touching the test database's settings.
    configured = connections.configure_settings({"default": connections.settings["default"], "replica-1": DOWN})
    connections.settings["replica-1"] = configured["replica-1"]
    monkeypatch.setattr(db_routing, "replica_aliases", lambda: ["replica-1"])
    monkeypatch.setattr(db_routing, "_down_until", {})

    def refused(alias: str) -> float:
        # What connecting to it raises (a test may not connect to a database it did not declare).
        raise OperationalError(f'connection to server at "127.0.0.1", port 1 failed: Connection refused ({alias})')

    monkeypatch.setattr(db_routing, "replica_lag_seconds", refused)
    yield
    connections["replica-1"].close()
    del connections.settings["replica-1"]
    with contextlib.suppress(AttributeError):
        del connections["replica-1"]


def _search(cast, upload, collection) -> tuple[int, dict]:
    upload(cast.editor, collection, "cellar.md", b"# Cellar\n\nLanterns are kept on the second shelf of the cellar.")
    answer = cast.viewer.post("/api/search", {"query": "where are the lanterns kept"}, format="json")
    return answer.status_code, answer.json()


def _database(body: dict) -> dict:
    [stage] = [s for s in body["trace"] if s["stage"] == "database"]
    return stage


def test_without_replicas_searches_read_from_the_primary_and_the_trace_says_so(cast, upload, collection):
    status, body = _search(cast, upload, collection)
    assert status == 200 and body["results"]
    stage = _database(body)
    assert stage["status"] == "ran" and stage["counts"] == {"served_by": "primary"}
    assert body["trace"][-1] is not None and body["trace"][-1]["stage"] == "database"  # last: where all read


def test_writes_and_migrations_always_go_to_the_primary_whatever_a_read_only_call_reads():
    router = db_routing.ReplicaRouter()
    with db_routing.reading_from("replica-1"):
        assert router.db_for_read(Document) == "replica-1"
        assert router.db_for_write(Document) == "default"
    assert router.db_for_read(Document) == "default"
    assert router.allow_migrate("default", "collections_app") and not router.allow_migrate("replica-1", "x")


def test_a_replica_that_is_down_is_passed_over_for_the_primary_saying_so(cast, upload, collection, replica_down):
    status, body = _search(cast, upload, collection)

    assert status == 200 and body["results"]
    counts = _database(body)["counts"]
    assert counts["served_by"] == "primary" and counts["fallback"] == "replica-1 is down"
    assert "127.0.0.1" not in json.dumps(body) and ":1/" not in json.dumps(body)  # the alias, never the address


def test_told_to_refuse_a_search_with_no_usable_replica_answers_503(cast, upload, collection, replica_down, settings):
    settings.KB_REPLICA_FALLBACK = "refuse"
    status, body = _search(cast, upload, collection)

    assert status == 503
    assert "replica-1 is down" in body["detail"] and "KB_REPLICA_FALLBACK" in body["detail"]
    assert "127.0.0.1" not in body["detail"]
