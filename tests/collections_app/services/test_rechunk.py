"""Chunk preview (writes nothing) and rechunk (the stored parser output, never the parser), through the API."""

from __future__ import annotations

import pytest
from django.db import connection

from collections_app.models import Build, Chunk, Collection, Document
from tests.files.documents import docx_bytes, html_bytes
from tests.files.sections import SECTIONS


def counts() -> dict[str, int]:
    tables = [
        "collections_app_chunk",
        "collections_app_document",
        "collections_app_build",
        "collections_app_collection",
    ]
    with connection.cursor() as cursor:
        found = {}
        for table in tables:
            cursor.execute(f"SELECT count(*), coalesce(max(xmin::text::bigint), 0) FROM {table}")
            found[table], found[f"{table} xmin"] = cursor.fetchone()
        return found


@pytest.fixture
def document(cast, collection, upload) -> Document:
    answer = upload(cast.editor, collection, "handbook.html", html_bytes(SECTIONS))
    document = Document.objects.get(pk=answer.json()["document_id"])
    assert document.status == "done", document.error
    return document


def preview_url(document: Document) -> str:
    return f"/api/manage/collections/{document.collection_id}/documents/{document.pk}/chunk-preview"


def test_a_preview_answers_the_chunks_and_their_numbers_and_writes_nothing(cast, document):
    before = counts()
    answer = cast.editor.post(preview_url(document), {"chunk_size": 300, "chunk_overlap": 30}, format="json")
    assert answer.status_code == 200, answer.json()
    body = answer.json()
    assert counts() == before  # no row added, removed or changed
    assert body["settings"] == {
        "chunk_strategy": "structure",
        "chunk_size": 300,
        "chunk_size_unit": "chars",
        "chunk_overlap": 30,
        "parent_size": None,
    }
    assert body["chunk_count"] == len(body["chunks"]) > Chunk.objects.filter(document=document).count()
    assert all(len(c["text"]) <= 300 and c["tokens"] > 0 for c in body["chunks"])
    assert {tuple(c["section"]) for c in body["chunks"]} >= {("Handbook", "Returns")}
    assert 0 <= body["share_under_50_tokens"] <= 1
    assert body["heading_only_count"] == 0  # structure never leaves a heading alone
    assert body["parent_count"] is None and body["median_parent_tokens"] is None


def test_a_fixed_preview_counts_its_lone_headings_and_short_paragraphs(cast, document):
    body = cast.editor.post(preview_url(document), {"chunk_strategy": "fixed"}, format="json").json()
    headings = [level for level, _, _ in SECTIONS]
    assert body["heading_only_count"] == len(headings)  # each heading is a block, kept on its own
    assert body["share_under_50_tokens"] >= 0.5


def test_a_hierarchical_preview_counts_parents_and_their_median_tokens(cast, document):
    body = cast.editor.post(
        preview_url(document),
        {"chunk_strategy": "hierarchical", "chunk_size": 64, "chunk_overlap": 8, "chunk_size_unit": "tokens"},
        format="json",
    ).json()
    parents = [c for c in body["chunks"] if c["kind"] == "parent"]
    assert body["parent_count"] == len(parents) >= 2
    assert body["chunk_count"] == len(body["chunks"]) - len(parents)
    assert all(c["tokens"] <= 64 for c in body["chunks"] if c["kind"] == "paragraph")
    assert all(c["tokens"] <= 4 * 64 for c in parents)
    assert body["median_parent_tokens"] > 64


def test_a_preview_of_a_new_size_without_an_overlap_cuts_with_a_fifth_of_it_and_says_so(cast, document):
    answer = cast.editor.post(preview_url(document), {"chunk_size": 64, "chunk_size_unit": "tokens"}, format="json")
    assert answer.status_code == 200, answer.json()
    assert answer.json()["settings"] == {
        "chunk_strategy": "structure",
        "chunk_size": 64,
        "chunk_size_unit": "tokens",
        "chunk_overlap": 12,
        "parent_size": None,
    }
    kept = cast.editor.post(
        preview_url(document), {"chunk_size": 64, "chunk_size_unit": "tokens", "chunk_overlap": 3}, format="json"
    )
    assert kept.status_code == 200 and kept.json()["settings"]["chunk_overlap"] == 3
    # The collection's own overlap, when neither its size nor its unit changes.
    same = cast.editor.post(preview_url(document), {"chunk_strategy": "fixed", "chunk_size": 1000}, format="json")
    assert same.json()["settings"]["chunk_overlap"] == 200


def test_a_preview_refuses_a_planned_strategy_naming_it_and_settings_out_of_bounds(cast, document):
    planned = cast.editor.post(preview_url(document), {"chunk_strategy": "semantic"}, format="json")
    assert planned.status_code == 400 and "semantic" in str(planned.json())
    overlap = cast.editor.post(preview_url(document), {"chunk_size": 100, "chunk_overlap": 100}, format="json")
    assert overlap.status_code == 400 and "chunk_overlap" in overlap.json()
    parent = cast.editor.post(preview_url(document), {"chunk_size": 300, "parent_size": 200}, format="json")
    assert parent.status_code == 400 and "parent_size" in parent.json()


def test_it_previews_for_editors_only_and_the_outsider_finds_nothing(cast, document):
    assert cast.viewer.post(preview_url(document), {}, format="json").status_code == 403
    assert cast.outsider.post(preview_url(document), {}, format="json").status_code == 404


def test_rechunk_applies_the_collections_settings_to_the_stored_blocks_without_the_parser(
    cast, collection, document, monkeypatch, django_capture_on_commit_callbacks
):
    def never(*args, **kwargs):
        raise AssertionError("rechunk called the parser")

    for module in ("ingestion", "ingestion.parsing"):
        monkeypatch.setattr(f"{module}.parse_document", never)
    monkeypatch.setattr("collections_app.services.documents._read.parse_document_bounded", never)
    changed = cast.editor.patch(
        f"/api/manage/collections/{collection.pk}", {"chunk_strategy": "fixed", "chunk_size": 20_000}, format="json"
    ).json()
    assert changed["stale_documents"] == 1
    assert cast.viewer.get(f"/api/manage/collections/{collection.pk}/documents/{document.pk}").json()["stale"]
    old = set(Chunk.objects.filter(document=document).values_list("pk", flat=True))

    with django_capture_on_commit_callbacks(execute=True):
        answer = cast.editor.post(f"/api/manage/collections/{collection.pk}/documents/{document.pk}/rechunk")

    assert answer.status_code == 202, answer.json()
    document.refresh_from_db()
    assert document.status == "done" and not document.stale, document.error
    chunks = list(Chunk.objects.filter(document=document).order_by("position__ordinal"))
    assert [c.text for c in chunks] == [b["text"] for b in document.blocks or []]  # fixed: one per block
    assert not old & {c.pk for c in chunks}
    assert Build.objects.filter(document=document).latest("built_at").method["strategy"] == "fixed"
    detail = cast.viewer.get(f"/api/manage/collections/{collection.pk}/documents/{document.pk}").json()
    assert detail["stale"] is False and detail["chunk_count"] == len(chunks)


def test_rechunk_refuses_a_document_being_read_and_one_without_parser_output(cast, collection, document):
    url = f"/api/manage/collections/{collection.pk}/documents/{document.pk}/rechunk"
    Document.objects.filter(pk=document.pk).update(status="parsing")
    assert cast.editor.post(url).status_code == 409
    Document.objects.filter(pk=document.pk).update(status="error", blocks=None)
    refused = cast.editor.post(url)
    assert refused.status_code == 409 and "upload it again" in refused.json()["detail"]


def test_it_rechunks_for_editors_only_and_the_outsider_finds_nothing(cast, collection, document):
    url = f"/api/manage/collections/{collection.pk}/documents/{document.pk}/rechunk"
    assert cast.viewer.post(url).status_code == 403
    assert cast.outsider.post(url).status_code == 404
    assert Collection.objects.count() == 1


def test_a_title_followed_by_a_section_heading_is_no_chunk_of_its_own_in_a_word_preview(cast, collection, upload):
    policy = [
        (0, "Procurement policy", ""),
        (1, "1 Scope", "This policy applies to every purchase made on behalf of the company by any employee."),
        (2, "1.1 Approval", "Purchases above 5,000 EUR need the approval of the finance director before ordering."),
        (1, "2 Payment terms", "Invoices are paid within thirty days of receipt, by bank transfer to the supplier."),
    ]
    answer = upload(cast.editor, collection, "policy.docx", docx_bytes(policy))
    document = Document.objects.get(pk=answer.json()["document_id"])
    body = cast.editor.post(
        preview_url(document), {"chunk_size": 64, "chunk_size_unit": "tokens"}, format="json"
    ).json()
    headings = {heading for _, heading, _ in policy}
    assert not [c["text"] for c in body["chunks"] if c["text"] in headings]  # "Procurement policy" alone was one
    assert body["heading_only_count"] == 0
    first = body["chunks"][0]
    assert first["text"].startswith("Procurement policy\n\n1 Scope\n\nThis policy") and first["section"] == ["1 Scope"]
    assert [c["section"] for c in body["chunks"][1:]] == [["1 Scope", "1.1 Approval"], ["2 Payment terms"]]
