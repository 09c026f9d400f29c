"""Languages are named for people the same way everywhere: "Greek", "Serbo-Croatian (sr/hr/bs)", never a bare
code or the ISO register's "Modern Greek (1453-)"."""

from __future__ import annotations

import pytest

from collections_app.models import Chunk, Document
from ingestion.languages import SUPPORTED_LANGUAGES, language_name, language_shown
from retrieval.models import SearchEvent

ADMIN = "/admin/collections_app"


@pytest.mark.parametrize(
    ("code", "name"),
    [("el", "Greek"), ("sh", "Serbo-Croatian (sr/hr/bs)"), ("sr", "Serbo-Croatian (sr/hr/bs)"),
     ("hr", "Serbo-Croatian (sr/hr/bs)"), ("ne", "Nepali"), ("mk", "Macedonian"), ("de-AT", "German"),
     ("", "undetected"), (None, "undetected"), ("xx", "xx")],
)  # fmt: skip
def test_a_language_is_named_for_people(code, name) -> None:
    assert language_name(code) == name


def test_no_supported_language_is_shown_with_a_register_qualifier() -> None:
    shown = [language_shown(code) for code in SUPPORTED_LANGUAGES]
    assert "Greek (el)" in shown and "Serbo-Croatian (sr/hr/bs)" in shown
    assert not [s for s in shown if "Modern" in s or "1453" in s or "macrolanguage" in s]


@pytest.fixture
def labelled(cast, collection) -> Document:
    document = Document.objects.create(
        tenant=cast.tenant, collection=collection, content_hash="mix", filename="mix.txt", status="done", language="el"
    )
    Chunk.objects.bulk_create(
        Chunk(tenant=cast.tenant, collection=collection, document=document, text=f"p{i}", language=code)
        for i, code in enumerate(["el", "sh", "sh", ""])
    )
    return document


def test_the_admin_names_languages_in_lists_filters_pages_and_choices(cast, staff, collection, labelled) -> None:
    documents = staff.get(f"{ADMIN}/document/").content.decode()
    assert "Greek (el)" in documents

    paragraphs = staff.get(f"{ADMIN}/chunk/").content.decode()
    filters = paragraphs.split('id="changelist-filter"')[1]
    assert "Greek (el)" in filters and "Serbo-Croatian (sr/hr/bs)" in filters and "undetected" in filters
    assert ">sh<" not in paragraphs and ">el<" not in paragraphs
    assert staff.get(f"{ADMIN}/chunk/", {"language": "sh"}).context["cl"].result_count == 2

    page = staff.get(f"{ADMIN}/document/{labelled.pk}/change/").content.decode()
    assert "Greek (el)" in page
    choices = staff.get(f"{ADMIN}/document/{labelled.pk}/language/").content.decode()
    assert ">Greek (el)</option>" in choices and ">Serbo-Croatian (sr/hr/bs)</option>" in choices
    assert "Modern Greek" not in choices

    collection_page = staff.get(f"{ADMIN}/collection/{collection.pk}/change/").content.decode()
    assert "Measured languages: <strong>Serbo-Croatian (sr/hr/bs), Greek (el)</strong>" in collection_page


def test_the_searches_audit_names_the_questions_language(cast, staff) -> None:
    event = SearchEvent.objects.create(tenant=cast.tenant, question_language="sh", collections=[])

    page = staff.get(f"/admin/retrieval/searchevent/{event.pk}/change/").content.decode()

    assert "Serbo-Croatian (sr/hr/bs)" in page


def test_the_api_names_each_measured_language(cast, collection, labelled) -> None:
    shares = cast.viewer.get(f"/api/manage/collections/{collection.pk}").json()["language_shares"]

    assert [(s["language"], s["name"]) for s in shares] == [
        ("sh", "Serbo-Croatian (sr/hr/bs)"),
        (None, "undetected"),
        ("el", "Greek"),
    ]  # fmt: skip  (most frequent first, then by label)
