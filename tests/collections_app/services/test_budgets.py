"""Budgets for every document: small files that would hold a worker for hours end in `error` naming the limit and
its setting, or are read in part and say so; a large document takes the one large-document lane; deleting a
document (or its collection) stops its ingestion within seconds (docs/DECISIONS.md, "Budgets for every document").

Budgets are set small here so that each file is small and each test fast.
"""

from __future__ import annotations

import ast
import datetime as dt
import io
import logging
import os
import threading
import time
from unittest import mock

import pytest
from django.db import connections
from django.utils import timezone
from django.utils.module_loading import import_string
from django_q.models import Schedule

from collections_app.models import Build, Chunk, Collection, Document
from collections_app.services.documents import _watch
from collections_app.services.documents._lane import Lane
from collections_app.services.recovery import documents_recover
from collections_app.tasks import ingest_document
from embedding import get_embedder
from ingestion import Block, BlockBudget, _unstructured, parsing, pdf, records
from ingestion.ocr import OcrPlan
from tests.files.documents import pdf_bytes, scanned_pdf_bytes, words
from tests.files.records import csv_bytes, issue_rows, xlsx_bytes

EMBEDDER = "collections_app.services.documents._embed.get_embedder"  # where ingestion asks for its model
RETURNS = "Goods can be sent back within thirty days of purchase if they are unused and in their box."
INGEST_FUNC = "collections_app.tasks.ingest_document"


def document_of(response) -> Document:
    assert response.status_code == 202, response.content
    return Document.objects.get(pk=response.json()["document_id"])


def never_parsed(*args, **kwargs):
    raise AssertionError("the file was parsed: its budget should have refused it before")


def handbook_md(sections: int) -> bytes:
    return "\n".join(f"## Returns {n}\n\n{RETURNS} Case {n}.\n" for n in range(sections)).encode()


# --- pages, rows -------------------------------------------------------------------------------------------------


def test_a_pdf_over_the_page_budget_ends_in_error_naming_the_limit_and_its_setting_before_it_is_parsed(
    cast, collection, upload, settings, monkeypatch
):
    settings.KB_MAX_PAGES = 10
    monkeypatch.setattr(pdf, "parse_pdf", never_parsed)  # the page count comes from the page tree alone
    atlas = pdf_bytes([[("Atlas", "A page of the atlas.")]] * 12)

    document = document_of(upload(cast.editor, collection, "atlas.pdf", atlas))

    assert document.status == "error"
    assert document.error == "this PDF has 12 pages; the limit is 10 (KB_MAX_PAGES)"
    assert document.blocks is None
    assert Build.objects.get(document=document).refused == ["atlas.pdf"]


def test_an_xlsx_over_the_row_budget_ends_in_error_on_its_declared_size_before_its_rows_are_read(
    cast, collection, upload, settings, monkeypatch
):
    settings.KB_MAX_ROWS = 20
    monkeypatch.setattr(records, "parse_records", never_parsed)
    sheet: list[list[object]] = [["id", "title"], *([n, f"Issue {n}"] for n in range(30))]

    document = document_of(upload(cast.editor, collection, "issues.xlsx", xlsx_bytes({"Issues": sheet})))

    assert document.status == "error"
    assert document.error == "this spreadsheet has 31 rows; the limit is 20 (KB_MAX_ROWS)"
    assert Chunk.objects.filter(document=document).count() == 0


def test_rows_without_a_declared_size_are_counted_while_read_and_refused_at_the_first_over(
    cast, collection, upload, settings
):
    settings.KB_MAX_ROWS = 20
    rows = issue_rows(30)

    document = document_of(upload(cast.editor, collection, "issues.csv", csv_bytes(rows)))

    assert document.status == "error"
    assert document.error == "this spreadsheet has more than 20 rows; the limit is 20 (KB_MAX_ROWS)"
    within = document_of(upload(cast.editor, collection, "few.csv", csv_bytes(rows[:19])))  # 19 + the header
    assert within.status == "done", within.error


# --- OCR pages, blocks -------------------------------------------------------------------------------------------


def test_past_the_ocr_budget_the_scans_left_are_named_in_the_warnings_and_the_build(
    cast, collection, upload, settings, monkeypatch
):
    settings.KB_MAX_OCR_PAGES = 2
    monkeypatch.setattr(pdf, "ocr_plan", lambda options: OcrPlan(langs=["eng"]))
    monkeypatch.setattr(pdf, "ocr_page", lambda image, plan, dpi=None: ["Refunds are paid within five days."])

    document = document_of(upload(cast.editor, collection, "scans.pdf", scanned_pdf_bytes(5)))

    assert document.status == "done", document.error
    assert {block["page"] for block in document.blocks or []} == {1, 2}
    skipped = "page(s) 3-5 are scans and were not read: a document has at most 2 page(s) read by OCR (KB_MAX_OCR_PAGES)"
    assert document.warnings == [skipped]
    assert Build.objects.get(document=document).warnings == [skipped]


@pytest.mark.parametrize("streamed", [False, True], ids=["parsed", "streamed"])
def test_a_giant_markdown_heading_is_read_as_paragraphs_and_never_rides_in_a_heading_trail(
    cast, collection, upload, settings, streamed
):
    """The 1,000,000-character heading of the probe spent its time in embedding: the heading trail is put before
    every paragraph's text for the model (ChunkDraft.embedding_text), so each of its ~1,000 paragraphs carried
    the whole heading; the model reads all of it (15 s for one 20,000-character passage, on 2 cores)."""
    if streamed:
        settings.KB_STREAM_TEXT_ABOVE = 1000
    heading = words(8000)
    content = f"# {heading}\n\n## Returns\n\n{RETURNS}\n".encode()
    real = get_embedder(collection.embedding_alias)
    longest: list[int] = []

    class Measuring:
        def __getattr__(self, name: str):
            return getattr(real, name)

        def embed_passages(self, texts: list[str]) -> list[list[float]]:
            longest.append(max(len(text) for text in texts))
            assert longest[-1] <= 2 * collection.chunk_size, "a passage carries more than its paragraph and trail"
            return real.embed_passages(texts)

    with mock.patch(EMBEDDER, return_value=Measuring()):
        document = document_of(upload(cast.editor, collection, "giant.md", content))

    assert document.status == "done", document.error
    # What becomes of the heading: its text is read as paragraphs (cut to the chunk size like any long text)...
    assert Chunk.objects.filter(document=document, text__startswith=heading[:100]).exists()
    # ...and it is in no paragraph's heading trail: the text beneath keeps the trail of its own headings.
    assert all(len(title) <= 300 for chunk in Chunk.objects.filter(document=document) for title in chunk.section)
    assert Chunk.objects.get(document=document, text__contains="thirty days").section == ["Returns"]
    assert (
        f"1 heading longer than 300 characters (the longest {len(heading):,}) read as a paragraph and left out of "
        "the heading trail of the text beneath (a heading is at most 300 characters)"
    ) in document.warnings
    assert longest and max(longest) <= 2 * collection.chunk_size


def test_no_block_is_longer_than_the_budget_and_a_record_is_cut_to_it_keeping_its_values():
    record = Block("title: " + "x" * 80, "record", metadata={"id": 7})
    table = Block("| a | b |\n| --- | --- |\n" + "\n".join(f"| {n} | row {n} |" for n in range(20)), "table")
    budget = BlockBudget(block_chars=60)

    blocks = list(budget.apply([Block("word " * 30, "paragraph", section=["A"]), record, table]))

    assert all(len(block.text) <= 60 for block in blocks)
    paragraphs = [b for b in blocks if b.kind == "paragraph"]
    assert len(paragraphs) == 3 and " ".join(b.text for b in paragraphs).split() == ["word"] * 30
    assert all(b.section == ["A"] for b in paragraphs)
    assert [b for b in blocks if b.kind == "record"] == [record] and record.metadata == {"id": 7}  # the same block
    assert all(b.text.startswith("| a | b |\n| --- | --- |\n| ") for b in blocks if b.kind == "table")
    assert budget.warnings() == [
        "2 blocks longer than 60 characters cut into pieces of at most that size (KB_MAX_BLOCK_CHARS)",
        "1 record longer than 60 characters cut to that size; the rest of each was not read (KB_MAX_BLOCK_CHARS)",
    ]


# --- memory and wall time ----------------------------------------------------------------------------------------


def test_a_parser_running_past_its_wall_time_is_stopped_and_the_document_names_the_limit(
    cast, collection, upload, settings, monkeypatch
):
    settings.KB_PARSE_SECONDS = 1
    monkeypatch.setattr(_unstructured, "parse_office", lambda *args: time.sleep(120))
    started = time.monotonic()

    document = document_of(upload(cast.editor, collection, "notes.md", b"# Notes\n\nA note about refunds."))

    assert time.monotonic() - started < 30  # not the parser's two minutes
    assert document.status == "error"
    assert document.error == "reading this file was stopped after 1 s; the limit is 1 s (KB_PARSE_SECONDS)"


def test_a_parser_reaching_its_memory_limit_is_stopped_and_the_document_names_the_limit(
    cast, collection, upload, settings, monkeypatch
):
    settings.KB_PARSE_MEMORY_MB = 64

    def greedy(*args):
        return bytearray(1024 * 1024 * 1024)  # a gigabyte

    monkeypatch.setattr(_unstructured, "parse_office", greedy)

    document = document_of(upload(cast.editor, collection, "notes.md", b"# Notes\n\nA note about refunds."))

    assert document.status == "error"
    assert document.error == (
        "reading this file needed more memory than allowed; the limit is 64 MB (KB_PARSE_MEMORY_MB)"
    )


# --- the large-document lane -------------------------------------------------------------------------------------


def test_a_large_document_waits_for_the_lane_while_a_small_one_is_read(cast, collection, upload, settings):
    settings.KB_LARGE_DOCUMENT_BYTES = 1000
    with Lane() as elsewhere:
        elsewhere.take()  # another worker is reading a large document

        large = document_of(upload(cast.editor, collection, "large.md", handbook_md(20)))
        small = document_of(upload(cast.editor, collection, "small.md", b"# Refunds\n\nPaid within five days."))

        assert small.status == "done", small.error
        large.refresh_from_db()
        assert (large.status, large.progress, large.error) == ("queued", 0, "")
        assert not Chunk.objects.filter(document=large).exists()
        [retry] = Schedule.objects.filter(func=INGEST_FUNC)
        assert ast.literal_eval(retry.args) == (str(large.pk), True)  # marked large: it asks for the lane first
        assert dt.timedelta(seconds=20) < retry.next_run - timezone.now() <= dt.timedelta(seconds=30)
        # Waiting is not dying: the recovery leaves it to its schedule.
        Document.objects.filter(pk=large.pk).update(updated_at=timezone.now() - dt.timedelta(minutes=5))
        assert documents_recover().requeued == []

    ingest_document(str(large.pk), True)  # what the schedule runs, once the lane is free

    large.refresh_from_db()
    assert large.status == "done", large.error
    assert Chunk.objects.filter(document=large).count() == 20


def test_a_document_found_large_by_its_paragraphs_waits_without_being_parsed_again(
    cast, collection, upload, settings, monkeypatch
):
    settings.KB_LARGE_DOCUMENT_PARAGRAPHS = 5
    with Lane() as elsewhere:
        elsewhere.take()
        document = document_of(upload(cast.editor, collection, "handbook.md", handbook_md(8)))
    document.refresh_from_db()
    assert document.status == "queued" and document.blocks is not None  # parsed, then found large

    monkeypatch.setattr(parsing, "parse_document", never_parsed)
    ingest_document(str(document.pk), True)

    document.refresh_from_db()
    assert document.status == "done", document.error
    assert Chunk.objects.filter(document=document).count() == 8


def test_a_pdf_with_many_pages_is_large(cast, collection, upload, settings):
    settings.KB_LARGE_DOCUMENT_PAGES = 3
    with Lane() as elsewhere:
        elsewhere.take()
        document = document_of(upload(cast.editor, collection, "atlas.pdf", pdf_bytes([[("Atlas", "A page.")]] * 4)))
    document.refresh_from_db()
    assert document.status == "queued" and document.blocks is None  # refused the lane before it was parsed


# --- deleting stops the ingestion --------------------------------------------------------------------------------


def test_deleting_the_collection_while_its_pdf_is_read_by_ocr_stops_the_worker_within_seconds(
    transactional_db, cast, collection, monkeypatch, tmp_path, caplog
):
    """Forty scanned pages at a second each would hold the worker for 40 s; the deletion stops it at once."""
    started_ocr = tmp_path / "ocr-started"

    def slow_page(image, plan, dpi=None):
        started_ocr.write_text(str(os.getpid()))  # the parser's child process
        time.sleep(1)
        return ["Refunds are paid within five days."]

    monkeypatch.setattr(pdf, "ocr_plan", lambda options: OcrPlan(langs=["eng"]))
    monkeypatch.setattr(pdf, "ocr_page", slow_page)
    workers: list[threading.Thread] = []

    def as_a_worker(func, *args, **kwargs):  # the queued task, run by a "worker" thread as the cluster would
        task = import_string(func) if isinstance(func, str) else func  # the ingestion, then the collection's removal

        def run() -> None:
            try:
                task(*args)
            finally:
                connections.close_all()

        workers.append(threading.Thread(target=run))
        workers[-1].start()

    scans = io.BytesIO(scanned_pdf_bytes(40))
    scans.name = "scans.pdf"
    with mock.patch("django_q.tasks.async_task", side_effect=as_a_worker):
        response = cast.editor.post(
            f"/api/manage/collections/{collection.pk}/documents", {"file": scans}, format="multipart"
        )
    document_id = response.json()["document_id"]
    deadline = time.monotonic() + 60
    while not started_ocr.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert started_ocr.exists(), "the parser never reached its scanned pages"

    with caplog.at_level(logging.INFO):
        deleted = time.monotonic()
        assert cast.editor.delete(f"/api/manage/collections/{collection.pk}").status_code == 204
        workers[0].join(timeout=30)
        stopped = time.monotonic() - deleted

    for worker in workers[1:]:
        worker.join(timeout=30)
    assert not workers[0].is_alive()
    assert stopped < 8, f"the worker went on for {stopped:.1f} s after the deletion"
    with pytest.raises(ProcessLookupError):  # the parser's child is gone, not left reading 40 pages
        os.kill(int(started_ocr.read_text()), 0)
    assert not Document.objects.filter(pk=document_id).exists()
    assert not Collection.all_objects.filter(pk=collection.pk).exists()  # its removal ran too
    assert not Build.objects.filter(document_id=document_id).exists()
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []  # no error noise
    assert any("was deleted while it was read" in r.getMessage() for r in caplog.records)


def test_deleting_a_document_while_it_is_embedded_stops_its_ingestion_before_the_next_batch(
    cast, collection, staff, settings, monkeypatch, django_capture_on_commit_callbacks, caplog
):
    settings.KB_EMBED_BATCH = 2
    monkeypatch.setattr(_watch, "ASK_EVERY", 0)  # ask before every batch: the test counts batches
    real = get_embedder(collection.embedding_alias)
    batches: list[int] = []

    with django_capture_on_commit_callbacks() as queued:
        document = document_of(
            cast.editor.post(
                f"/api/manage/collections/{collection.pk}/documents",
                {"file": named(handbook_md(8), "handbook.md")},
                format="multipart",
            )
        )

    class DeletedWhileEmbedding:
        def __getattr__(self, name: str):
            return getattr(real, name)

        def embed_passages(self, texts: list[str]) -> list[list[float]]:
            batches.append(len(texts))
            if len(batches) == 1:  # an editor deletes the document in the admin meanwhile
                answer = staff.post(f"/admin/collections_app/document/{document.pk}/delete/", {"post": "yes"})
                assert answer.status_code == 302
            return real.embed_passages(texts)

    with mock.patch(EMBEDDER, return_value=DeletedWhileEmbedding()), caplog.at_level(logging.INFO):
        for task in queued:
            task()  # the ingestion, as the cluster runs it

    assert batches == [2]  # 8 paragraphs, 4 batches: it stopped before the second
    assert not Document.objects.filter(pk=document.pk).exists()
    assert not Chunk.objects.filter(document_id=document.pk).exists()
    assert not Build.objects.filter(collection=collection).exists()
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


def named(content: bytes, name: str) -> io.BytesIO:
    file = io.BytesIO(content)
    file.name = name
    return file
