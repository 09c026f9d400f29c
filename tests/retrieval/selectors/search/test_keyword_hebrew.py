"""Hebrew words meet with and without the one-letter prefixes glued to them, in the keyword stage, both ways.

Hebrew writes "and", "the", "in", "to", "from", "that", "as" as letters glued to the next word ("ובבית": and in the
house). Paragraphs labelled `he` are indexed with each word's prefix-stripped forms beside the word itself, and the
question's words get the same forms (migration 0038), so an editor's "העדים" is found by an agent's "לעדים". Every
other language is indexed and asked exactly as before.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.db import connection

from accounts.models import Tenant
from collections_app.models import Chunk, Collection, Document
from collections_app.sql import keyword_vector
from ingestion.languages import SUPPORTED_LANGUAGES
from retrieval.selectors.search import Visibility, _keyword, keyword_retrieve
from tests.retrieval.selectors.search import test_keyword_postings as postings
from tests.retrieval.selectors.search.test_keyword_bm25 import recount, stored

# Paragraphs of a staff handbook, in Hebrew.
HANDBOOK = [
    "העדים נכנסים לאולם רק אחרי שהשופט מזמין אותם.",
    "ובבית הספר פותחים את השערים בשבע וחצי בבוקר.",
    "החניה לאופניים נמצאת מאחורי הבניין, ליד המחסן.",
    "משכורות משולמות בתשיעי לכל חודש דרך מחלקת הכספים.",
    "כשהמעלית מושבתת משתמשים במדרגות שבצד המזרחי.",
    "ימי חופשה נצברים לפי ותק ונרשמים בפורטל העובדים.",
]


def index(collection: Collection, texts: list[str], language: str, name: str = "doc") -> Document:
    """Paragraphs written and indexed as ingestion writes them, labelled `language`."""
    document = Document.objects.create(
        tenant=collection.tenant, collection=collection, content_hash=name, filename=f"{name}.txt", language=language
    )
    Chunk.objects.bulk_create(
        Chunk(tenant=collection.tenant, collection=collection, document=document, text=t, language=language)
        for t in texts
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE collections_app_chunk SET search_vector = {keyword_vector()} WHERE document_id = %s",
            [document.pk],
        )
    return document


@pytest.fixture
def handbook(db) -> Collection:
    collection = Collection.objects.create(tenant=Tenant.objects.create(name="acme"), name="נהלים")
    index(collection, HANDBOOK, "he")
    return collection


def found(collection: Collection, query: str, language: str = "he") -> list[str]:
    """The texts the keyword stage finds, best first, asked as the pipeline asks (the collections' languages)."""
    visible = Visibility(collection.tenant_id, [str(collection.pk)])
    hits = keyword_retrieve(visible=visible, query=query, language=language, limit=5, present=True)
    return [Chunk.objects.get(pk=h.chunk_id).text for h in hits]


@pytest.mark.parametrize(
    ("question", "paragraph"),
    [
        ("מה אומרים לעדים לפני שנכנסים?", 0),  # "לעדים" asks; "העדים" answers: both are "עדים"
        ("באיזו שעה שערים נפתחים?", 1),  # the paragraph's "השערים" without its article
        ("איפה חונים עם אופניים?", 2),  # "לאופניים" in the paragraph
        ("ומשכורות, מתי?", 3),  # the question's "ומשכורות" is the paragraph's "משכורות"
        ("מה עושים כשמעלית לא עובדת?", 4),  # "כשמעלית" and "כשהמעלית": "מעלית" on both sides
    ],
    ids=["witnesses", "gates", "bikes", "salaries", "lift"],
)
def test_a_hebrew_word_is_found_whatever_prefixes_either_side_glues_to_it(handbook, question, paragraph) -> None:
    assert found(handbook, question)[0] == HANDBOOK[paragraph]


def test_a_word_in_a_run_of_prefixes_is_found_by_the_bare_word_and_the_other_way_round(handbook) -> None:
    # "ובבית" is ו + ב + בית; the question asks for the house with no prefix, then with others.
    assert found(handbook, "בית")[0] == HANDBOOK[1]
    assert found(handbook, "לבית ספר")[0] == HANDBOOK[1]


def test_a_hebrew_question_still_ranks_a_paragraph_with_its_exact_words_first(handbook) -> None:
    # The surface word is indexed too: the paragraph that holds "העובדים" itself beats any that only share a stem.
    index(handbook, ["עובדים חדשים מקבלים כרטיס כניסה ביום הראשון."], "he", name="more")

    assert found(handbook, "העובדים")[0] == HANDBOOK[5]


def test_the_keyword_statistics_follow_hebrew_paragraphs(handbook) -> None:
    """The stripped forms are counted like any word: the statistics the triggers keep equal a recount."""
    index(handbook, ["והעובדים רושמים שעות נוספות בפורטל."], "he", name="more")

    assert stored(handbook) == recount(handbook)
    assert stored(handbook)[2]["עובדים"] == 2  # "העובדים" and "והעובדים", one paragraph each


# Sentences in every language the labeller gives, and a few it does not (tests/data/languages.json).
SAMPLES = json.loads((Path(__file__).parents[3] / "data" / "languages.json").read_text(encoding="utf-8"))["samples"]


def test_every_other_language_is_indexed_and_asked_exactly_as_before(db) -> None:
    """The keyword index of every label but Hebrew is its snowball configuration OR'd with 'simple', as before
    migration 0038, and a question without Hebrew letters gets no word it did not have."""
    texts = [s["text"] for s in SAMPLES if s["lang"] != "he"]
    labels = sorted((SUPPORTED_LANGUAGES - {"he"}) | {"", "xx", "en-GB"})
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT count(*) FILTER (WHERE {keyword_vector("l", "t")} IS DISTINCT FROM
                                          to_tsvector(kb_ts_config(l), t) || to_tsvector('simple', t)),
                   count(*) FILTER (WHERE cardinality(kb_hebrew_forms(u.lexeme)) > 0)
            FROM unnest(%s::text[]) l, unnest(%s::text[]) t, unnest(to_tsvector('simple', t)) u
            """,
            [labels, texts],
        )
        changed, stripped = cursor.fetchone()
    assert len(labels) > 30 and len(texts) > 50
    assert changed == 0 and stripped == 0


def test_the_index_and_the_question_strip_a_word_alike(db) -> None:
    """The paragraph's forms (kb_hebrew_vector) are the question's (kb_hebrew_forms) for every word, else the word."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT t, ARRAY(SELECT lexeme FROM unnest(kb_hebrew_vector(t)) ORDER BY 1),
                   ARRAY(SELECT DISTINCT f FROM unnest(to_tsvector('simple', t)) u,
                         unnest(CASE WHEN cardinality(kb_hebrew_forms(u.lexeme)) > 0 THEN kb_hebrew_forms(u.lexeme)
                                     ELSE ARRAY[u.lexeme] END) f ORDER BY 1)
            FROM unnest(%s::text[]) t
            """,
            [[*HANDBOOK, *POINTED, PRESENTATION_FORMS, "וכשהלכו לבית-הכנסת, it's 2024 ו ה של"]],
        )
        for text, indexed, asked in cursor.fetchall():
            assert indexed == asked, text


# Vocalised Hebrew: vowel points and accents are combining marks inside the word (migration 0039).
POINTED = [
    "וּבַבַּיִת הַזֶּה יָשְׁבוּ הַתַּלְמִידִים כָּל־הַיּוֹם.",  # "and in this house the pupils sat all day"
    "הַמְּלָכִים בָּנוּ חוֹמָה סְבִיב הָעִיר.",  # "the kings built a wall around the city"
]


@pytest.fixture
def pointed(db) -> Collection:
    collection = Collection.objects.create(tenant=Tenant.objects.create(name="acme"), name="ספרים")
    index(collection, [*POINTED, *HANDBOOK[:3]], "he", name="pointed")
    return collection


@pytest.mark.parametrize(
    ("question", "paragraph"),
    [
        ("איפה ישבו התלמידים?", 0),  # unpointed, and "התלמידים" without the paragraph's points
        ("מי בנה חומה לעיר?", 1),  # "חומה" / "חוֹמָה", and "לעיר" against "הָעִיר": points and prefixes both
        ("כל היום", 0),  # "כָּל־הַיּוֹם": unpointed, and apart at the maqaf
    ],
    ids=["pupils", "wall", "all-day"],
)
def test_a_vocalised_paragraph_is_found_by_an_unpointed_question(pointed, question, paragraph) -> None:
    assert found(pointed, question)[0] == POINTED[paragraph]


def test_a_pointed_question_finds_an_unpointed_paragraph(handbook) -> None:
    # "לָעֵדִים" (to the witnesses), pointed, asks; the handbook's "העדים" answers.
    assert found(handbook, "מָה אוֹמְרִים לָעֵדִים?")[0] == HANDBOOK[0]


def test_maqaf_and_sof_pasuq_still_part_words(db) -> None:
    """Only points and accents come off: maqaf (the Hebrew hyphen) and sof pasuq are punctuation between words."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT ARRAY(SELECT lexeme FROM unnest(kb_hebrew_vector(%s)) ORDER BY 1)", ["כָּל־הָאָרֶץ׃"])
        (lexemes,) = cursor.fetchone()
    assert "כל" in lexemes and "ארץ" in lexemes and "כלהארץ" not in lexemes


def test_hebrew_questions_rank_as_plain_bm25_over_the_hebrew_index(db, monkeypatch) -> None:
    """The prefix forms are words like any other to the stage's split and its proof: over 300 Mishnah paragraphs
    (bench/data/hebrew), with the split made to leave words out, every hit and score is BM25's, computed in Python
    over the paragraphs' indexes and the question's words with their forms."""
    data = Path(__file__).parents[4] / "bench" / "data" / "hebrew"
    with (data / "corpus.jsonl").open(encoding="utf-8") as handle:
        texts = [json.loads(line)["text"] for _, line in zip(range(300), handle, strict=False)]
    with (data / "questions.tsv").open(encoding="utf-8") as handle:
        questions = [line.split("\t")[2].strip() for line in list(handle)[1:30]]
    collection = Collection.objects.create(tenant=Tenant.objects.create(name="acme"), name="משנה")
    index(collection, texts, "he")
    monkeypatch.setattr(_keyword, "PROBE_POSTINGS", 100)
    monkeypatch.setattr(_keyword, "KEYWORD_WINDOW_MIN", 10)
    monkeypatch.setattr(_keyword, "KEYWORD_WINDOW_MAX", 60)

    def question_words(query: str, language: str = "en") -> set[str]:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT u.lexeme FROM unnest(to_tsvector('simple', %s)) u "
                "UNION SELECT unnest(kb_hebrew_forms(u.lexeme)) FROM unnest(to_tsvector('simple', %s)) u",
                [query, query],
            )
            return {row[0] for row in cursor.fetchall()}

    monkeypatch.setattr(postings, "question_words", question_words)
    for question in questions:
        visible = Visibility(collection.tenant_id, [str(collection.pk)])
        hits = keyword_retrieve(visible=visible, query=question, language="he", limit=10)
        postings.assert_same_ranking([(h.chunk_id, h.keyword) for h in hits], postings.reference(collection, question))


# Yiddish as much of it is written (and as PDFs give Hebrew back): pointed letters as single presentation-form
# characters (U+FB2E אַ, U+FB2F אָ, U+FB44 פּ) and the double vav as one ligature (U+05F0 װ) (migration 0040). The
# labeller calls Hebrew-script text Hebrew: Yiddish paragraphs are indexed as `he`.
PRESENTATION_FORMS = (
    "דער קיניג ה\ufb2fט גע\u05f0וינט אין \ufb2e גרויסן \ufb44\ufb2eל\ufb2eץ מיט \ufb2e שיינעם ג\ufb2fרטן"
)


@pytest.mark.parametrize(
    "question",
    ["גארטן", "גאָרטן", "וועלכער פאלאץ?", "ווו האט ער געוווינט"],
    ids=["unpointed", "pointed-as-typed", "palace", "double-vav"],
)
def test_a_paragraph_written_in_presentation_forms_is_found_pointed_or_not(db, question) -> None:
    collection = Collection.objects.create(tenant=Tenant.objects.create(name="acme"), name="מעשׂיות")
    index(collection, [PRESENTATION_FORMS, *HANDBOOK[:3]], "he", name="yiddish")

    assert found(collection, question)[0] == PRESENTATION_FORMS
