"""The keyword stage's postings stay right through every change, and its scores are BM25's.

The reference is plain BM25 (k1 0.9, b 0.4, idf ln(1 + (N - df + 0.5) / (df + 0.5))) computed here in
Python over the paragraphs' texts as PostgreSQL tokenizes them (each paragraph's language stemmer OR'd
with 'simple', as ingestion indexes them) — never over the stored index or postings it checks.
"""

from __future__ import annotations

import math

import pytest
from django.db import connection, transaction
from django.db.models import Q

from accounts.models import Tenant
from collections_app.models import Chunk, Collection, Document, KeywordPosting, KeywordStats, KeywordTerm
from collections_app.services import reindex
from collections_app.services.collections import collection_delete, collection_update
from collections_app.services.documents import document_delete
from collections_app.services.keyword_index import keyword_index_deferred
from collections_app.sql import keyword_vector
from ingestion import text_search_config
from retrieval.selectors.search import Visibility, _keyword, keyword_retrieve
from tests.files.documents import html_bytes
from tests.files.sections import SECTIONS

K1, B = 0.9, 0.4


def paragraph_words(collection: Collection) -> dict[str, dict[str, int]]:
    """Each readable paragraph's words and their counts, tokenized by PostgreSQL from its text."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT c.id, u.lexeme, coalesce(array_length(u.positions, 1), 1)
            FROM collections_app_chunk c JOIN collections_app_collection col ON col.id = c.collection_id,
                 unnest({keyword_vector("c.language", "c.text")}) u
            WHERE c.collection_id = %s AND c.kind = 'paragraph' AND c.generation = col.active_generation
            """,
            [collection.pk],
        )
        words: dict[str, dict[str, int]] = {}
        for chunk_id, lexeme, tf in cursor.fetchall():
            words.setdefault(str(chunk_id), {})[lexeme] = tf
    return words


def question_words(query: str, language: str = "en") -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT DISTINCT u.lexeme FROM unnest(to_tsvector(%s::regconfig, %s) || to_tsvector('simple', %s)) u",
            [text_search_config(language), query, query],
        )
        return {row[0] for row in cursor.fetchall()}


def reference(
    collection: Collection, query: str, readable: set[str] | None = None, common: float = 5000
) -> dict[str, float]:
    """Plain BM25 in Python: every candidate's score. A word in more than half of the paragraphs (and more
    than `common`) scores but makes no candidate by itself, unless the question has no other word (the
    stage's documented rule)."""
    paragraphs = paragraph_words(collection)
    n = len(paragraphs)
    avgdl = sum(sum(w.values()) for w in paragraphs.values()) / n
    terms = question_words(query)
    df = {t: sum(t in w for w in paragraphs.values()) for t in terms}
    idf = {t: math.log(1 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items() if d}
    rare = {t for t in idf if df[t] <= max(n / 2, common)} or set(idf)
    scores = {}
    for chunk_id, words in paragraphs.items():
        if readable is not None and chunk_id not in readable:
            continue
        if not rare & words.keys():
            continue
        dl = sum(words.values())
        scores[chunk_id] = sum(
            idf[t] * words[t] * (K1 + 1) / (words[t] + K1 * (1 - B + B * dl / avgdl)) for t in idf if t in words
        )
    return scores


def stage(collection: Collection, query: str, limit: int = 10, labels: list[str] | None = None):
    visible = Visibility(collection.tenant_id, [str(collection.pk)], labels or [])
    hits = keyword_retrieve(visible=visible, query=query, language="en", limit=limit)
    return [(h.chunk_id, h.keyword) for h in hits]


def assert_same_ranking(found: list[tuple[str, float | None]], scores: dict[str, float], limit: int = 10) -> None:
    """The stage's hits are the best `limit` by the reference's scores, each with its reference score (paragraphs
    whose scores tie may come in either order: the two sums add the same terms in another order)."""
    best = sorted(scores.values(), reverse=True)[:limit]
    assert len(found) == len(best)
    for position, (chunk_id, score) in enumerate(found):
        assert chunk_id in scores
        assert score == pytest.approx(scores[chunk_id], rel=1e-9)
        assert score == pytest.approx(best[position], rel=1e-9)


def postings(collection: Collection) -> set[tuple[str, str, int, int]]:
    return {
        (str(p.chunk_id), p.lexeme, p.tf, p.length) for p in KeywordPosting.objects.filter(collection_id=collection.pk)
    }


def expected_postings(collection: Collection) -> set[tuple[str, str, int, int]]:
    """Recomputed from the texts of the paragraphs searches read."""
    found = set()
    for chunk_id, words in paragraph_words(collection).items():
        length = sum(words.values())
        found |= {(chunk_id, lexeme, tf, length) for lexeme, tf in words.items()}
    return found


def index(collection: Collection, texts: list[str], name: str = "doc", labels: list[str] | None = None) -> Document:
    """Paragraphs written and indexed as ingestion writes them: one insert, then one keyword-index update."""
    document = Document.objects.create(
        tenant=collection.tenant, collection=collection, content_hash=name, filename=f"{name}.txt"
    )
    Chunk.objects.bulk_create(
        Chunk(
            tenant=collection.tenant,
            collection=collection,
            document=document,
            text=t,
            language="en",
            labels=labels or [],
        )
        for i, t in enumerate(texts)
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE collections_app_chunk SET search_vector = {keyword_vector()} WHERE document_id = %s",
            [document.pk],
        )
    return document


ROOMS = [
    "The office kitchen has a kettle and a fridge for the office.",
    "Printer paper is kept in the office store room next to the printer.",
    "The defibrillator hangs by the lifts on every office floor.",
    "Bikes go in the covered rack behind the office.",
    "The fire alarm is tested on Mondays; the office empties by the stairs.",
    "Visitors sign in at reception and wear a badge in the office.",
    "Lost badges are replaced at reception within a day.",
    "The kettle in the kitchen is descaled every Friday.",
]
QUESTIONS = ["where is the printer paper", "office kettle", "badge at reception", "the office", "fire stairs"]


@pytest.fixture
def collection(db) -> Collection:
    return Collection.objects.create(tenant=Tenant.objects.create(name="acme"), name="notes")


def test_scores_are_plain_bm25_and_postings_follow_inserts_index_updates_and_deletes(collection) -> None:
    first = index(collection, ROOMS[:5], name="a")
    index(collection, ROOMS[5:], name="b")
    assert postings(collection) == expected_postings(collection)
    for question in QUESTIONS:
        assert_same_ranking(stage(collection, question), reference(collection, question))

    # A paragraph's text changes and it is indexed again: its old words leave, its new ones arrive.
    Chunk.objects.filter(document=first, position__ordinal=1).update(text="Parcels for the office leave on weekdays.")
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE collections_app_chunk SET search_vector = {keyword_vector()} WHERE document_id = %s",
            [first.pk],
        )
    assert postings(collection) == expected_postings(collection)
    assert stage(collection, "printer paper") == []
    assert_same_ranking(stage(collection, "office parcels"), reference(collection, "office parcels"))

    gone = {str(pk) for pk in first.chunks.values_list("pk", flat=True)}
    first.delete()
    assert postings(collection) == expected_postings(collection)
    assert gone and not gone & {p[0] for p in postings(collection)}
    for question in QUESTIONS:
        assert_same_ranking(stage(collection, question), reference(collection, question))


def keyword_rows(collection: Collection) -> tuple[object, ...]:
    """Everything the keyword stage reads of one collection: its postings, word counts and totals."""
    terms = set(KeywordTerm.objects.filter(collection=collection).values_list("lexeme", "paragraphs"))
    totals = list(KeywordStats.objects.filter(collection=collection).values_list("paragraphs", "total_length"))
    return postings(collection), terms, totals


def test_a_bulk_write_indexes_its_collection_in_one_pass_and_its_neighbours_as_always(collection) -> None:
    neighbour = Collection.objects.create(tenant=collection.tenant, name="neighbour")
    index(collection, ROOMS[:2], name="before")  # indexed by the triggers before the bulk write
    with transaction.atomic(), keyword_index_deferred(collection.pk):
        first = index(collection, ROOMS[2:6], name="a")
        index(collection, ROOMS[6:], name="b")
        Chunk.objects.filter(document=first, position__ordinal=0).delete()
        index(neighbour, ROOMS[:4], name="n")
        # Nothing of the bulk write is indexed yet; the neighbour is, statement by statement.
        assert {p[0] for p in postings(collection)} == set(paragraph_words(collection)) - {
            str(pk)
            for pk in Chunk.objects.filter(document__filename__in=["a.txt", "b.txt"]).values_list("pk", flat=True)
        }
        assert postings(neighbour) == expected_postings(neighbour)
    for each in (collection, neighbour):
        assert postings(each) == expected_postings(each)
        assert_blocks_in_order(each)
        for question in QUESTIONS:
            assert_same_ranking(stage(each, question), reference(each, question))
    stats = KeywordStats.objects.get(collection=collection)
    assert stats.paragraphs == len(ROOMS) - 1


def test_a_deleted_collection_takes_its_keyword_index_and_leaves_its_neighbours(
    collection, django_capture_on_commit_callbacks
) -> None:
    """The deleted collection's removal (queued on commit, run here) drops its index by its id and tells the delete
    trigger to leave it out; the neighbour sharing its words keeps exactly its own index, and a delete after it is
    counted again."""
    neighbour = Collection.objects.create(tenant=collection.tenant, name="neighbour")
    index(collection, ROOMS, name="gone")
    kept = index(neighbour, ROOMS[:6], name="kept")
    index(neighbour, ROOMS[6:], name="later")
    before = keyword_rows(neighbour)
    assert KeywordPosting.objects.filter(collection_id=collection.pk).exists()

    with django_capture_on_commit_callbacks(execute=True):
        collection_delete(collection=collection)

    assert not KeywordPosting.objects.filter(collection_id=collection.pk).exists()
    assert not KeywordTerm.objects.filter(collection_id=collection.pk).exists()
    assert not KeywordStats.objects.filter(collection_id=collection.pk).exists()
    assert keyword_rows(neighbour) == before
    assert postings(neighbour) == expected_postings(neighbour)
    for question in QUESTIONS:
        assert_same_ranking(stage(neighbour, question), reference(neighbour, question))

    # Still inside the test's one transaction: the trigger leaves out the dropped collection's rows only.
    kept.delete()
    assert postings(neighbour) == expected_postings(neighbour)
    assert KeywordStats.objects.get(collection=neighbour).paragraphs == len(ROOMS) - 6
    for question in QUESTIONS:
        assert_same_ranking(stage(neighbour, question), reference(neighbour, question))


def test_the_window_widens_until_the_ranking_equals_scoring_every_candidate(collection, monkeypatch) -> None:
    """Common words scored only inside a small window, and a window full of paragraphs the reader may not
    read: the answer is still exactly the full ranking."""
    collection_update(collection=collection, per_reader=True)
    index(collection, [f"{text} Room {n}." for n, text in enumerate(ROOMS * 4)], name="open")
    # The best matches for "office kettle" are all labelled for another reader.
    index(collection, ["The office kettle, the office kettle and the kettle."] * 12, name="hr", labels=["hr"])
    monkeypatch.setattr(_keyword, "COMMON_WORD_PARAGRAPHS", 0)  # "office", "the": common at this size
    monkeypatch.setattr(_keyword, "KEYWORD_WINDOW_MIN", 1)
    readable = {str(pk) for pk in Chunk.objects.filter(collection=collection, labels=[]).values_list("pk", flat=True)}
    executed: list[str] = []

    def record(call, sql, params, many, context):
        executed.append(sql)
        return call(sql, params, many, context)

    with connection.execute_wrapper(record):
        found = stage(collection, "office kettle", limit=3)
    assert len(executed) > 1  # the first window held only the hr paragraphs: it widened
    assert_same_ranking(found, reference(collection, "office kettle", readable=readable, common=0), limit=3)
    assert_same_ranking(
        stage(collection, "office kettle", limit=3, labels=["hr"]),
        reference(collection, "office kettle", common=0),
        limit=3,
    )
    for question in QUESTIONS:
        assert_same_ranking(
            stage(collection, question, limit=2), reference(collection, question, readable=readable, common=0), limit=2
        )


@pytest.fixture
def handbook(cast, collection_api, upload) -> Document:
    answer = upload(cast.editor, collection_api, "handbook.html", html_bytes(SECTIONS))
    document = Document.objects.get(pk=answer.json()["document_id"])
    assert document.status == "done", document.error
    return document


@pytest.fixture
def collection_api(cast) -> Collection:
    from collections_app.services.collections import collection_create

    return collection_create(tenant=cast.tenant, name="handbook")


def change_chunking(collection: Collection, **fields: object) -> None:
    """What saving new chunking settings does (the API's PATCH calls the same service)."""
    Collection.objects.filter(pk=collection.pk).update(**fields)
    assert reindex.collection_mark_stale(collection=collection, changed=list(fields)) > 0


HANDBOOK_QUESTIONS = ["when do refunds arrive", "damaged parcel warehouse check", "payroll money goes back"]


def assert_blocks_in_order(collection: Collection) -> None:
    """Every word's blocks hold at most 128 paragraphs each, in ascending number order, and one block's paragraphs
    all come before the next block's first: what lets a removal find a paragraph's block by its number."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT count(*) FILTER (WHERE cardinality(offs) > 128 OR cardinality(offs) = 0
                                     OR offs[1] < 0 OR offs <> sorted OR base + offs[cardinality(offs)] >= next),
                   count(*)
            FROM (
                SELECT offs, base, ARRAY(SELECT o FROM unnest(offs) o ORDER BY o) AS sorted,
                       lead(base) OVER (PARTITION BY lexeme ORDER BY base) AS next
                FROM collections_app_keywordblock WHERE collection_id = %s
            ) b
            """,
            [collection.pk],
        )
        wrong, blocks = cursor.fetchone()
    assert blocks > 0 and wrong == 0


def assert_bm25_everywhere(collection: Collection) -> None:
    collection.refresh_from_db()
    assert postings(collection) == expected_postings(collection)
    indexed = Chunk.objects.filter(search_vector__isnull=False).values("pk")
    stray = Q(chunk_id__isnull=True) | ~Q(chunk_id__in=indexed)  # a number no indexed paragraph holds
    assert KeywordPosting.objects.filter(collection_id=collection.pk).filter(stray).count() == 0
    assert_blocks_in_order(collection)
    for question in HANDBOOK_QUESTIONS:
        assert_same_ranking(stage(collection, question), reference(collection, question))


def test_postings_follow_a_rechunk(cast, collection_api, handbook, django_capture_on_commit_callbacks) -> None:
    assert_bm25_everywhere(collection_api)
    old = postings(collection_api)
    change_chunking(collection_api, chunk_strategy="fixed", chunk_size=300)
    with django_capture_on_commit_callbacks(execute=True):
        reindex.document_rechunk(document=handbook)
    handbook.refresh_from_db()
    assert handbook.status == "done" and not handbook.stale, handbook.error

    assert_bm25_everywhere(collection_api)
    assert not {p[0] for p in old} & {p[0] for p in postings(collection_api)}  # the old paragraphs' postings left


def test_postings_follow_a_reindex_cutover(cast, collection_api, handbook, django_capture_on_commit_callbacks) -> None:
    before = postings(collection_api)
    change_chunking(collection_api, chunk_overlap=40)
    with django_capture_on_commit_callbacks(execute=True):
        reindex.collection_reindex(collection=collection_api)

    collection_api.refresh_from_db()
    assert collection_api.active_generation == 1
    assert_bm25_everywhere(collection_api)
    assert not {p[0] for p in before} & {p[0] for p in postings(collection_api)}


def test_postings_leave_with_a_deleted_document(cast, collection_api, handbook, upload) -> None:
    upload(cast.editor, collection_api, "notes.txt", b"Expenses are approved by the team lead within a week.")
    assert_bm25_everywhere(collection_api)

    document_delete(document=handbook)

    assert_bm25_everywhere(collection_api)
    assert {p[0] for p in postings(collection_api)} == {
        str(pk) for pk in Chunk.objects.filter(collection=collection_api).values_list("pk", flat=True)
    }


def test_a_relabel_keeps_postings_and_the_stage_follows_the_labels(cast, collection_api, handbook) -> None:
    per_reader = collection_update(collection=collection_api, per_reader=True)
    before = postings(per_reader)
    payroll = Chunk.objects.filter(document=handbook, section__contains=["Payroll"])
    assert payroll.exists()
    hidden = {str(pk) for pk in payroll.values_list("pk", flat=True)}

    payroll.update(labels=["hr"])

    assert postings(per_reader) == before == expected_postings(per_reader)
    readable = {str(pk) for pk in Chunk.objects.filter(document=handbook, labels=[]).values_list("pk", flat=True)}
    found = stage(per_reader, "payroll money goes back")
    assert found and not hidden & {chunk_id for chunk_id, _ in found}
    assert_same_ranking(found, reference(per_reader, "payroll money goes back", readable=readable))
    with_hr = stage(per_reader, "payroll money goes back", labels=["hr"])
    assert hidden & {chunk_id for chunk_id, _ in with_hr}
    assert_same_ranking(with_hr, reference(per_reader, "payroll money goes back"))
