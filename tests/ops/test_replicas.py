"""Searches from a PostgreSQL read replica, on loopback: a primary and its streaming standby (bench/_pg_pair.py).

The primary starts as a copy of the migrated test database (pg_dump: migrating a new database takes a minute on
two busy cores); the standby is made from it by pg_basebackup -R and streams from it. The platform runs in
processes of its own (tests/ops/replica_driver.py) with DATABASE_URL on the primary and KB_DATABASE_REPLICA_URLS
on the standby, and is driven through its real views: searches read from the replica, their audit rows are
written on the primary, a cutover is seen whole or not at all, a lagging replica is passed over (or the search
refused when told so), and a standby stopped mid-run costs no search.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import connection

from bench import _pg_pair as pg_pair

# django_db: so that the session sets up the test database this module copies.
pytestmark = [pytest.mark.ops, pytest.mark.django_db]

PARAGRAPHS = 8


class Driver:
    """One platform process against the pair; `ask` sends a command and returns its answer."""

    def __init__(self, folder: Path, primary: pg_pair.Server, standby: pg_pair.Server, **env: str) -> None:
        self.log = folder / f"driver-{len(list(folder.glob('driver-*')))}.log"
        self.process = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("replica_driver.py"))],
            cwd=settings.BASE_DIR,
            env={
                **{k: v for k, v in os.environ.items() if k != "KB_DATABASE_REPLICA_URLS"},
                "PYTHONPATH": str(settings.BASE_DIR),
                "DJANGO_SETTINGS_MODULE": "kbsite.settings",
                "KB_DEBUG": "1",  # the test client's host
                "KB_SECRET_KEY": "replica-tests",
                "KB_VAR_DIR": str(folder / "var"),
                "KB_STORAGE_ROOT": str(folder / "storage"),
                "KB_TASKS_SYNC": "1",
                "KB_THROTTLE_SEARCH": "",
                "DATABASE_URL": primary.url,
                "KB_DATABASE_REPLICA_URLS": standby.url,
                **env,
            },
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=open(self.log, "w"),  # noqa: SIM115 - the process's own, closed with it
            text=True,
        )
        self._read()  # ready

    def _read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise AssertionError(f"the driver died:\n{self.log.read_text()[-4000:]}")
        answer = json.loads(line)
        assert "error" not in answer, f"{answer['error']}\n{self.log.read_text()[-4000:]}"
        return answer

    def send(self, op: str, **arguments: Any) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"op": op, **arguments}) + "\n")
        self.process.stdin.flush()

    def ask(self, op: str, **arguments: Any) -> dict[str, Any]:
        self.send(op, **arguments)
        return self._read()

    def answer(self) -> dict[str, Any]:
        return self._read()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            assert self.process.stdin is not None
            self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class Pair:
    def __init__(self, folder: Path, primary: pg_pair.Server, standby: pg_pair.Server) -> None:
        self.folder, self.primary, self.standby = folder, primary, standby
        self.drivers: list[Driver] = []
        self.secret = ""

    def driver(self, **env: str) -> Driver:
        driver = Driver(self.folder, self.primary, self.standby, **env)
        self.drivers.append(driver)
        return driver

    def caught_up(self) -> None:
        pg_pair.wait_replayed(self.primary, self.standby)

    def latest_version(self) -> int:
        return int(self.primary.sql("SELECT max(version) FROM collections_app_document"))


def _copy_test_database(primary: pg_pair.Server) -> None:
    """The migrated test database's schema and rows, restored into the primary's kbsite database."""
    db = connection.settings_dict
    bin_path = pg_pair.POSTGRES_BIN_PATH
    dump = subprocess.run(
        [str(bin_path / "pg_dump"), "-h", str(db["HOST"]), "-p", str(db["PORT"]), "-U", str(db["USER"]),
         "-d", str(db["NAME"]), "--no-owner", "--no-privileges"],
        capture_output=True, check=True, timeout=120,
    )  # fmt: skip
    restore = subprocess.run(
        [str(bin_path / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", primary.url],
        input=dump.stdout, capture_output=True, timeout=120, check=False,
    )  # fmt: skip
    assert restore.returncode == 0, restore.stderr.decode()[-3000:]


@pytest.fixture(scope="module")
def pair(django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[Pair]:
    folder = tmp_path_factory.mktemp("replicas")
    primary = pg_pair.primary_create(folder)
    standby = None
    try:
        with django_db_blocker.unblock():
            _copy_test_database(primary)
        standby = pg_pair.standby_create(primary, folder)
        made = Pair(folder, primary, standby)
        writer = made.driver()
        made.secret = writer.ask("setup", paragraphs=PARAGRAPHS)["secret"]
        made.caught_up()
        yield made
    finally:
        for driver in locals().get("made", Pair(folder, primary, primary)).drivers:
            driver.close()
        if standby is not None:
            standby.stop("immediate")
        primary.stop("immediate")


@pytest.fixture(scope="module")
def reader(pair: Pair) -> Driver:
    """Searches with a generous lag bound: a replica that streams is always fresh enough."""
    return pair.driver(KB_REPLICA_MAX_LAG_SECONDS="60")


def test_searches_and_the_corpus_map_read_from_the_replica_and_their_audit_rows_go_to_the_primary(pair, reader):
    events_before = int(pair.primary.sql("SELECT count(*) FROM retrieval_searchevent"))
    answers = reader.ask("search", secret=pair.secret, n=5)["answers"]

    assert [a["status"] for a in answers] == [200] * 5
    for answer in answers:
        assert answer["database"]["served_by"] == "replica-1"
        assert answer["database"]["replay_lag_seconds"] >= 0
        assert "fallback" not in answer["database"]
        assert answer["versions"] == [1] and answer["results"] == PARAGRAPHS
    # The trace names the replica by alias: never its address.
    assert str(pair.standby.port) not in json.dumps(answers) and "127.0.0.1" not in json.dumps(answers)
    # The audit rows were written on the primary (a standby refuses every write), and replicated back.
    assert int(pair.primary.sql("SELECT count(*) FROM retrieval_searchevent")) == events_before + 5
    assert reader.ask("map", secret=pair.secret)["status"] == 200
    # The standby really served: its statistics count the searches' reads of the paragraphs.
    assert int(pair.standby.sql("SELECT count(*) FROM collections_app_chunk")) >= PARAGRAPHS


def test_a_search_on_the_replica_never_sees_half_a_cutover_while_the_primary_rebuilds(pair, reader):
    writer = pair.drivers[0]
    first = pair.latest_version()
    writer.send("replace", seconds=15)
    answers = reader.ask("search", secret=pair.secret, seconds=15)["answers"]
    rebuilt = writer.answer()

    assert rebuilt["cutovers"] >= 2, rebuilt
    assert answers and all(a["status"] == 200 for a in answers), answers[:3]
    assert all(a["database"]["served_by"] == "replica-1" for a in answers), [a["database"] for a in answers][:5]
    # Each answer from one version, whole: every paragraph of it and none of another.
    torn = [a for a in answers if len(a["versions"]) != 1 or a["results"] != PARAGRAPHS]
    assert not torn, torn[:3]
    seen = [a["versions"][0] for a in answers]
    assert len(set(seen)) >= 2, "the searches saw no cutover: nothing was shown"
    assert seen == sorted(seen), "a later search saw an older version"
    assert first <= seen[0] and seen[-1] <= rebuilt["version"]


def test_a_lagging_replica_is_passed_over_for_the_primary_or_the_search_is_refused(pair):
    strict = pair.driver(KB_REPLICA_MAX_LAG_SECONDS="1")
    refusing = pair.driver(KB_REPLICA_MAX_LAG_SECONDS="1", KB_REPLICA_FALLBACK="refuse")
    pair.caught_up()
    assert strict.ask("search", secret=pair.secret, n=1)["answers"][0]["database"]["served_by"] == "replica-1"

    pair.standby.sql("SELECT pg_wal_replay_pause()")
    try:
        pair.drivers[0].ask("replace", seconds=0.1)  # a new version the paused replica has not replayed
        time.sleep(2.5)
        [fallen_back] = strict.ask("search", secret=pair.secret, n=1)["answers"]
        [refused] = refusing.ask("search", secret=pair.secret, n=1)["answers"]
    finally:
        pair.standby.sql("SELECT pg_wal_replay_resume()")

    # Never a stale answer in silence: the primary answered, with the newest version, and the trace says why.
    assert fallen_back["status"] == 200
    assert fallen_back["database"]["served_by"] == "primary"
    assert "replica-1 lags" in fallen_back["database"]["fallback"]
    assert "KB_REPLICA_MAX_LAG_SECONDS" in fallen_back["database"]["fallback"]
    assert fallen_back["versions"] == [pair.latest_version()]
    # Told not to fall back: 503, saying why.
    assert refused["status"] == 503
    assert "KB_REPLICA_FALLBACK" in refused["detail"] and "replica-1 lags" in refused["detail"]

    pair.caught_up()
    [back] = strict.ask("search", secret=pair.secret, n=1)["answers"]
    assert back["database"]["served_by"] == "replica-1" and back["versions"] == [pair.latest_version()]


def test_a_replica_stopped_mid_run_costs_no_search_they_fall_back_to_the_primary(pair, reader):
    pair.caught_up()
    stopper = threading.Timer(3.0, pair.standby.stop, kwargs={"mode": "immediate"})
    stopper.start()
    try:
        answers = reader.ask("search", secret=pair.secret, seconds=8)["answers"]
    finally:
        stopper.join()
    pair.standby.start()  # for whatever runs after

    assert answers and all(a["status"] == 200 for a in answers), [a for a in answers if a["status"] != 200][:3]
    served = [a["database"]["served_by"] for a in answers]
    assert served[0] == "replica-1" and served[-1] == "primary", served
    assert served == sorted(served, key=lambda s: s == "primary"), "back on a stopped replica"
    fallbacks = {a["database"]["fallback"] for a in answers if a["database"]["served_by"] == "primary"}
    assert all("replica-1" in reason for reason in fallbacks), fallbacks
    assert all(a["versions"] == [pair.latest_version()] and a["results"] == PARAGRAPHS for a in answers)
