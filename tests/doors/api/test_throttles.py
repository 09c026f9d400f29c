"""Rate limits per API key: past the rate a key gets 429 with Retry-After; other keys are not held up."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading

import pytest
import requests
from django.conf import settings

from accounts.issuing import api_key_create
from accounts.models import Role


def test_searches_past_the_rate_get_429_with_retry_after_and_other_keys_go_on(cast, collection, settings):
    settings.KB_THROTTLE_SEARCH = "3/min"
    answers = [cast.viewer.post("/api/search", {"query": "bikes"}, format="json") for _ in range(4)]
    assert [a.status_code for a in answers] == [200, 200, 200, 429]
    assert 0 < int(answers[-1]["Retry-After"]) <= 60
    assert "throttled" in answers[-1].json()["detail"].lower()
    # The limit is the key's own: another key of the same tenant still searches.
    assert cast.agent_client.post("/api/search", {"query": "bikes"}, format="json").status_code == 200


def test_uploads_past_the_rate_get_429_but_reading_the_list_does_not_count(cast, collection, settings):
    settings.KB_THROTTLE_UPLOAD = "2/hour"
    url = f"/api/manage/collections/{collection.pk}/documents"

    def post(n: int):
        file = io.BytesIO(f"note number {n}".encode())
        file.name = f"note-{n}.txt"
        return cast.editor.post(url, {"file": file}, format="multipart")

    for _ in range(5):
        assert cast.editor.get(url).status_code == 200
    first, second, third = post(1), post(2), post(3)
    assert (first.status_code, second.status_code, third.status_code) == (202, 202, 429)
    assert 3000 < int(third["Retry-After"]) <= 3600
    other_editor = cast.new_client(Role.EDITOR)
    file = io.BytesIO(b"from another key")
    file.name = "other.txt"
    assert other_editor.post(url, {"file": file}, format="multipart").status_code == 202


def test_an_empty_rate_switches_the_limit_off(cast, collection, settings):
    settings.KB_THROTTLE_SEARCH = ""
    assert all(cast.viewer.post("/api/search", {"query": "bikes"}, format="json").status_code == 200 for _ in range(5))


@pytest.mark.django_db(transaction=True)
def test_the_rate_holds_for_concurrent_requests_on_separate_connections(cast, collection, settings, live_server):
    """Counted in the database every web process shares, under one lock per key: 4 clients on their own
    connections, 40 searches at once on one key, and exactly the rate gets through."""
    settings.KB_THROTTLE_SEARCH = "10/min"
    secret = api_key_create(tenant=cast.tenant, role=Role.VIEWER).secret
    statuses: list[int] = []

    def searches() -> None:
        with requests.Session() as session:
            for _ in range(10):
                answer = session.post(
                    f"{live_server.url}/api/search",
                    json={"query": "bikes", "around": 0},
                    headers={"Authorization": f"Bearer {secret}"},
                    timeout=60,
                )
                statuses.append(answer.status_code)

    clients = [threading.Thread(target=searches) for _ in range(4)]
    for client in clients:
        client.start()
    for client in clients:
        client.join()

    assert sorted(statuses) == [200] * 10 + [429] * 30


# What a second web process does: its own interpreter, its own memory, the same database.
_ONE_PROCESS = """
import sys
from django.test import Client
client = Client(HTTP_AUTHORIZATION="Bearer " + sys.argv[1])
codes = [client.post("/api/search", {"query": "bikes", "around": 0}, content_type="application/json").status_code
         for _ in range(int(sys.argv[2]))]
print(codes.count(200))
"""


@pytest.mark.django_db(transaction=True)
def test_the_rate_holds_across_web_processes(cast, tmp_path):
    """Two processes (as gunicorn's two workers) serve one key: together they allow the rate, not twice it.
    Counted in a process's memory, each allowed its own 10 (the probe: 1,200 of 1,500 in 15 s against 600/min)."""
    from django.db import connection

    secret = api_key_create(tenant=cast.outsider_tenant, role=Role.VIEWER).secret  # a tenant with no collection
    db = connection.settings_dict
    url = f"postgres://{db['USER']}@/{db['NAME']}?host={db['HOST']}&port={db['PORT']}"
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "KB_THROTTLE_SEARCH": "10/min",
        "DJANGO_SETTINGS_MODULE": "kbsite.settings",
    }
    env.update({"KB_DEBUG": "1", "KB_SECRET_KEY": "test-only", "KB_VAR_DIR": str(tmp_path)})
    script = "import django; django.setup()\n" + _ONE_PROCESS
    allowed = [
        int(subprocess.run(
            [sys.executable, "-c", script, secret, "15"], env=env, cwd=settings.BASE_DIR, capture_output=True,
            text=True, timeout=300, check=True,
        ).stdout.split()[-1])
        for _ in range(2)
    ]  # fmt: skip

    assert allowed == [10, 0], allowed
