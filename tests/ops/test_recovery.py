"""The recovery's rules, in process: which `parsing` documents have a live task and which are requeued."""

from __future__ import annotations

import datetime as dt
import io
import uuid

import pytest
from django.utils import timezone
from django_q.conf import Conf
from django_q.models import OrmQ, Task
from django_q.signing import SignedPackage

from collections_app.models import Chunk, Document, DocumentStatus
from collections_app.services.documents import document_create, document_delete
from collections_app.services.recovery import (
    INGEST_FUNC,
    STARTED,
    document_lease,
    document_recover,
    documents_recover,
)
from collections_app.tasks import ingest_document


@pytest.fixture
def queued(monkeypatch):
    """Tasks go to the ORM broker's queue (a table) instead of running inline as in the other tests."""
    monkeypatch.setattr(Conf, "SYNC", False)


@pytest.fixture
def stuck(collection) -> Document:
    """A document left `parsing` a minute ago, with no task queued."""
    result = document_create(
        collection=collection, filename="handbook.md", content=io.BytesIO(b"# Refunds\n\nPaid back."), queue=False
    )
    Document.objects.filter(pk=result.document.pk).update(updated_at=timezone.now() - dt.timedelta(minutes=1))
    return Document.objects.get(pk=result.document.pk)


def queue_row(document: Document, *, lock: dt.datetime, name: str = "") -> OrmQ:
    task = {
        "id": "t",
        "name": name or f"ingest document {document.pk}",
        "func": INGEST_FUNC,
        "args": (str(document.pk),),
    }
    return OrmQ.objects.create(key=Conf.CLUSTER_NAME, payload=SignedPackage.dumps(task), lock=lock)


def ingest_rows(document: Document) -> list[dict]:
    rows = [SignedPackage.loads(row.payload) for row in OrmQ.objects.all()]
    return [task for task in rows if task["args"][0] == str(document.pk)]


def test_a_document_whose_task_failed_out_is_requeued(stuck, queued, django_capture_on_commit_callbacks):
    # A timeout (django-q2 raises it inside the task) ends the task with a failed result and no queue row.
    Task.objects.create(
        id=uuid.uuid4().hex,
        name=f"ingest document {stuck.pk}",
        func=INGEST_FUNC,
        started=timezone.now(),
        stopped=timezone.now(),
        success=False,
    )
    with django_capture_on_commit_callbacks(execute=True):
        report = documents_recover()
    assert report.requeued == [str(stuck.pk)]
    assert [task["name"] for task in ingest_rows(stuck)] == [f"ingest document {stuck.pk} (recovery 2)"]


def test_a_document_ingested_outside_the_queue_is_left_alone(stuck, queued):
    # A folder sync or a script ingests in its own process and holds no lease: no task, nothing to recover.
    assert documents_recover(cluster_start=True).requeued == []
    assert OrmQ.objects.count() == 0


def test_a_document_uploaded_moments_ago_is_left_to_its_task(stuck, queued):
    Document.objects.filter(pk=stuck.pk).update(updated_at=timezone.now())
    assert documents_recover().requeued == []


def test_a_document_whose_lease_is_held_is_alive(stuck, queued):
    queue_row(stuck, lock=STARTED)
    with document_lease(document_id=str(stuck.pk)) as held:
        assert held
        assert documents_recover().requeued == []
    assert OrmQ.objects.count() == 1


def test_a_started_task_whose_worker_died_is_replaced(stuck, queued, django_capture_on_commit_callbacks):
    dead = queue_row(stuck, lock=STARTED)
    with django_capture_on_commit_callbacks(execute=True):
        assert documents_recover().requeued == [str(stuck.pk)]
    assert not OrmQ.objects.filter(pk=dead.pk).exists()
    assert [task["name"] for task in ingest_rows(stuck)] == [f"ingest document {stuck.pk} (recovery 2)"]


def test_a_started_task_whose_worker_died_moments_ago_is_kept_for_the_next_pass(
    stuck, queued, django_capture_on_commit_callbacks
):
    """A restart right after a crash: the document was still being read a moment ago (inside the grace), so
    this pass leaves it, and its dead task's row must stay for the next pass to see, not be swept as finished."""
    dead = queue_row(stuck, lock=STARTED)
    Document.objects.filter(pk=stuck.pk).update(updated_at=timezone.now())
    assert documents_recover(cluster_start=True).requeued == []
    assert OrmQ.objects.filter(pk=dead.pk).exists()

    Document.objects.filter(pk=stuck.pk).update(updated_at=timezone.now() - dt.timedelta(minutes=1))
    with django_capture_on_commit_callbacks(execute=True):
        assert documents_recover().requeued == [str(stuck.pk)]
    assert [task["name"] for task in ingest_rows(stuck)] == [f"ingest document {stuck.pk} (recovery 2)"]


def test_a_waiting_task_is_alive(stuck, queued):
    queue_row(stuck, lock=timezone.now() - dt.timedelta(seconds=1))
    assert documents_recover(cluster_start=True).requeued == []


def test_a_task_taken_but_not_started_is_alive_until_its_cluster_is_gone(
    stuck, queued, django_capture_on_commit_callbacks
):
    queue_row(stuck, lock=timezone.now() + dt.timedelta(hours=1))
    assert documents_recover().requeued == []
    with django_capture_on_commit_callbacks(execute=True):
        assert documents_recover(cluster_start=True).requeued == [str(stuck.pk)]
    assert len(ingest_rows(stuck)) == 1


def test_the_sweep_releases_queue_rows_of_deleted_documents_whatever_their_lock(stuck, queued):
    """After a crash, rows a dead cluster had taken (locked for `retry`, hours) of documents deleted since
    are removed by the next pass, even when no document is left to recover."""
    taken = queue_row(stuck, lock=timezone.now() + dt.timedelta(hours=8))
    started = queue_row(stuck, lock=STARTED)
    waiting = queue_row(stuck, lock=timezone.now() - dt.timedelta(seconds=1))
    document_delete(document=stuck)

    documents_recover()

    assert not OrmQ.objects.filter(pk__in=[taken.pk, started.pk, waiting.pk]).exists()


def test_a_document_that_died_too_often_ends_in_error(stuck, queued, settings):
    settings.KB_INGEST_MAX_ATTEMPTS = 3
    queue_row(stuck, lock=STARTED, name=f"ingest document {stuck.pk} (recovery 3)")
    assert documents_recover().failed == [str(stuck.pk)]
    stuck.refresh_from_db()
    assert stuck.status == DocumentStatus.ERROR
    assert "stopped 3 times before finishing" in stuck.error
    assert OrmQ.objects.count() == 0


def test_a_reupload_of_a_stuck_document_requeues_it(stuck, queued, django_capture_on_commit_callbacks):
    queue_row(stuck, lock=STARTED)
    with django_capture_on_commit_callbacks(execute=True):
        assert document_recover(document=stuck)
    assert len(ingest_rows(stuck)) == 1
    assert not document_recover(document=Document.objects.get(pk=stuck.pk))  # now it has a waiting task


def test_a_second_delivery_while_the_lease_is_held_does_nothing(stuck):
    with document_lease(document_id=str(stuck.pk)):
        ingest_document(str(stuck.pk))
    stuck.refresh_from_db()
    assert stuck.status == DocumentStatus.PARSING
    assert not Chunk.objects.filter(document=stuck).exists()
    ingest_document(str(stuck.pk))
    stuck.refresh_from_db()
    assert stuck.status == DocumentStatus.DONE
