"""An editor's language is a per-document override: every later build keeps it, and null gives detection back.

The document is an English memo quoting German terms: detection labels it (and the paragraph quoting
"Kuendigungsfristen") English, so the German form "Kuendigungsfrist" finds nothing through the keyword stage
until an editor says the document is German — and keeps finding it after a re-chunk, a re-index, an identical
re-upload and a re-ingest, each of which detects languages again.
"""

from __future__ import annotations

from typing import Any

import pytest

from collections_app.models import Chunk, Collection, Document
from collections_app.services.collections import collection_create

MEMO = """# Remote Work Policy

Remote Work Policy: Kuendigungsfristen for the Senior Consultant team in the Berlin office are four weeks.

# Onboarding

Onboarding Guide for new team members in the Berlin office: laptops arrive on the first morning.

# Kündigung

Die Kündigungsfristen für Arbeitnehmer und Arbeitgeber sind im Arbeitsvertrag geregelt und betragen vier Wochen.
"""


# Each paragraph's first word -> its detected label: the English memo's sections (headings take the document's
# language) and the German section, heading included, German.
DETECTED = {"Remote": "en", "Onboarding": "en", "Kündigung": "de", "Die": "de"}


@pytest.fixture
def fixed(cast) -> Collection:
    # One paragraph per block: each section's paragraph is labelled on its own. The floor off: what the keyword
    # stage finds comes back whatever its cosine on this CPU (a search cannot turn it off).
    return collection_create(tenant=cast.tenant, name="policies", chunk_strategy="fixed", chunk_size=2000, min_score=0)


def ingest(cast, collection, upload) -> Document:
    response = upload(cast.editor, collection, "memo.md", MEMO.encode())
    assert response.status_code == 202, response.content
    document = Document.objects.get(pk=response.json()["document_id"])
    assert document.status == "done", document.error
    return document


def keyword_hits(cast, query: str) -> list[str]:
    response = cast.viewer.post("/api/search", {"query": query, "hybrid_weight": 0, "around": 0}, format="json")
    assert response.status_code == 200, response.content
    return [r["text"] for r in response.json()["results"]]


def quoted_german_found(cast) -> bool:
    # "Kuendigungsfrist" finds "Kuendigungsfristen" only under the German stemmer.
    return any(
        "Kuendigungsfristen for the Senior Consultant" in text for text in keyword_hits(cast, "Kuendigungsfrist")
    )


def live_labels(document: Document) -> dict[str, str]:
    collection = Collection.objects.get(pk=document.collection_id)
    rows = Chunk.objects.filter(document=document, kind="paragraph", generation=collection.active_generation)
    return {text.split()[0]: language for text, language in rows.values_list("text", "language")}


def set_language(cast, document: Document, language: str | None) -> dict[str, Any]:
    url = f"/api/manage/collections/{document.collection_id}/documents/{document.pk}/language"
    answer = cast.editor.patch(url, {"language": language}, format="json")
    assert answer.status_code == 200, answer.content
    return answer.json()


def document_api(cast, document: Document) -> dict[str, Any]:
    return cast.viewer.get(f"/api/manage/collections/{document.collection_id}/documents/{document.pk}").json()


def test_a_pinned_language_survives_rechunk_and_reindex(cast, fixed, upload, django_capture_on_commit_callbacks):
    document = ingest(cast, fixed, upload)
    assert live_labels(document) == DETECTED
    assert not quoted_german_found(cast)

    pinned = set_language(cast, document, "de")
    assert pinned["language"] == pinned["language_pinned"] == "de" and pinned["language_note"] is None
    assert quoted_german_found(cast)

    with django_capture_on_commit_callbacks(execute=True):
        rechunk = cast.editor.post(f"/api/manage/collections/{fixed.pk}/documents/{document.pk}/rechunk")
    assert rechunk.status_code in (200, 202), rechunk.content
    assert document_api(cast, document)["status"] == "done"
    assert set(live_labels(document).values()) == {"de"}
    assert quoted_german_found(cast)

    # A chunking change makes the document stale; the re-index rebuilds it into a new generation.
    changed = cast.editor.patch(f"/api/manage/collections/{fixed.pk}", {"chunk_size": 1500}, format="json")
    assert changed.status_code == 200, changed.content
    with django_capture_on_commit_callbacks(execute=True):
        started = cast.editor.post(f"/api/manage/collections/{fixed.pk}/reindex")
    assert started.status_code in (200, 202), started.content
    fixed.refresh_from_db()
    assert fixed.active_generation > 0 and fixed.reindex_generation is None
    assert set(live_labels(document).values()) == {"de"}
    assert quoted_german_found(cast)
    shown = document_api(cast, document)
    assert shown["language"] == shown["language_pinned"] == "de"
    # Detection ran each time and was kept beside the pin.
    assert set(Chunk.objects.filter(document=document).values_list("language_detected", flat=True)) == {"en", "de"}


def test_an_identical_reupload_and_a_reingest_keep_the_pinned_language(
    cast, fixed, upload, staff, django_capture_on_commit_callbacks
):
    document = ingest(cast, fixed, upload)
    set_language(cast, document, "de")

    again = upload(cast.editor, fixed, "memo-copy.md", MEMO.encode())
    assert again.status_code in (200, 202) and again.json()["document_id"] == str(document.pk)
    shown = document_api(cast, document)
    assert shown["language"] == shown["language_pinned"] == "de"

    with django_capture_on_commit_callbacks(execute=True):
        queued = staff.post(f"/admin/collections_app/document/{document.pk}/reingest/")
    assert queued.status_code == 302
    document.refresh_from_db()
    assert document.status == "done" and document.language == "de" and document.language_pinned == "de"
    assert set(live_labels(document).values()) == {"de"}
    assert quoted_german_found(cast)


def test_null_returns_the_document_and_its_paragraphs_to_detection(cast, fixed, upload):
    document = ingest(cast, fixed, upload)
    detected_language = document.language  # from a sample of the whole text
    pinned = set_language(cast, document, "mk")
    # The rule: a pin labels every paragraph, the German section included.
    assert set(live_labels(document).values()) == {"mk"} and pinned["language_pinned"] == "mk"

    detected = set_language(cast, document, None)

    assert detected["language"] == detected_language and detected["language_pinned"] is None
    assert "detected languages again" in detected["language_note"]
    assert live_labels(document) == DETECTED
    assert not quoted_german_found(cast)  # English stems again
    german = keyword_hits(cast, "Kündigungsfrist")
    assert german and "Die Kündigungsfristen" in german[0]  # the German section keeps its German stems


def test_null_on_a_document_built_before_labels_were_kept_waits_for_the_next_build(
    cast, fixed, upload, django_capture_on_commit_callbacks
):
    document = ingest(cast, fixed, upload)
    detected_language = document.language
    set_language(cast, document, "mk")
    # As a document built before detected labels were kept: nothing says what detection gave.
    Chunk.objects.filter(document=document).update(language_detected=None)
    Document.objects.filter(pk=document.pk).update(language_detected=None)

    answer = set_language(cast, document, None)

    assert answer["language_pinned"] is None and answer["language"] == "mk"
    assert "until the document is next built" in answer["language_note"]
    assert set(live_labels(document).values()) == {"mk"}
    with django_capture_on_commit_callbacks(execute=True):
        cast.editor.post(f"/api/manage/collections/{fixed.pk}/documents/{document.pk}/rechunk")
    assert live_labels(document) == DETECTED
    assert document_api(cast, document)["language"] == detected_language


def test_the_admin_language_page_pins_and_returns_to_automatic(cast, staff, fixed, upload):
    document = ingest(cast, fixed, upload)
    detected_language = document.language
    page = f"/admin/collections_app/document/{document.pk}/language/"

    assert "as detected" in staff.get(page).content.decode()
    assert staff.post(page, {"language": "de"}).status_code == 302
    assert "set by an editor" in staff.get(page).content.decode()
    assert set(live_labels(document).values()) == {"de"}

    back = staff.post(page, {"language": ""}, follow=True)
    assert "detected languages again" in back.content.decode()
    assert live_labels(document) == DETECTED
    document.refresh_from_db()
    assert document.language_pinned == "" and document.language == detected_language
