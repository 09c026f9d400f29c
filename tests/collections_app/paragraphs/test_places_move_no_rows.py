"""A split or merge moves the later paragraphs' places, not their rows (issue 42): the rows after it keep their
tuple (no new HNSW entry, no new keyword index entry), and windows still stitch in document order."""

from __future__ import annotations

from django.db import connection

from collections_app.models import Chunk, ChunkPosition, Document
from tests.files.documents import docx_bytes

from .conftest import base, paragraph, paragraphs, search, uploaded

TOPICS = ["Refunds", "Shipping", "Payroll", "Holidays", "Travel", "Security", "Training", "Equipment"]
RULES = [
    (1, topic, f"{topic} rule: requests about {topic.lower()} go to the {topic.lower()} desk, which answers within "
     f"{i + 2} working days.")
    for i, topic in enumerate(TOPICS)
]  # fmt: skip


def _tuples(document: Document) -> dict[str, tuple[str, str]]:
    """Each of the document's chunk rows' (xmin, ctid): both change when PostgreSQL writes the row again."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id, xmin::text, ctid::text FROM {Chunk._meta.db_table} WHERE document_id = %s", [document.pk]
        )
        return {str(pk): (xmin, ctid) for pk, xmin, ctid in cursor.fetchall()}


def _listed(cast, document: Document) -> list[tuple[int, str]]:
    answer = cast.editor.get(f"{base(document)}/paragraphs", {"limit": 500})
    assert answer.status_code == 200, answer.content
    return [(p["ordinal"], p["text"]) for p in answer.json()["results"]]


def test_a_split_near_the_start_rewrites_no_later_paragraph_row(cast, searchable, upload):
    document = uploaded(cast, searchable, upload, "rules.docx", docx_bytes(RULES))
    before = _tuples(document)
    refunds = paragraph(document, "Refunds rule")
    later = [p for p in paragraphs(document) if p.ordinal > refunds.ordinal]
    assert len(later) == len(TOPICS) - 1

    at = refunds.text.index("go to")
    answer = cast.editor.post(f"{base(document)}/paragraphs/{refunds.pk}/split", {"at": at}, format="json")
    assert answer.status_code == 200, answer.content

    after = _tuples(document)
    # The split paragraph is written again (its text and vector changed) and its second half is new; every later
    # row is the very tuple it was: its place moved in ChunkPosition only.
    assert {str(p.pk): before[str(p.pk)] for p in later} == {str(p.pk): after[str(p.pk)] for p in later}
    assert after[str(refunds.pk)] != before[str(refunds.pk)]
    assert {p.pk: p.ordinal + 1 for p in later} == {
        p.chunk_id: p.ordinal for p in ChunkPosition.objects.filter(chunk__in=later)
    }
    # The API shows the same numbers as before the move: one after another, the second half right after the first.
    listed = _listed(cast, document)
    assert [o for o, _ in listed] == list(range(len(TOPICS) + 1))
    assert listed[refunds.ordinal][1] == refunds.text[:at].strip()
    assert listed[refunds.ordinal + 1][1] == refunds.text[at:].strip()


def test_windows_stitch_in_document_order_after_several_splits_and_merges(cast, searchable, upload):
    document = uploaded(cast, searchable, upload, "rules.docx", docx_bytes(RULES))
    url = f"{base(document)}/paragraphs"

    def split(contains: str, cut: str) -> None:
        row = paragraph(document, contains)
        answer = cast.editor.post(f"{url}/{row.pk}/split", {"at": row.text.index(cut)}, format="json")
        assert answer.status_code == 200, answer.content

    def merge(contains: str) -> None:
        row = paragraph(document, contains)
        answer = cast.editor.post(f"{url}/{row.pk}/merge-next", {"across_sections": True}, format="json")
        assert answer.status_code == 200, answer.content

    split("Refunds rule", "go to")
    split("Payroll rule", "which answers")
    merge("Shipping rule")  # Shipping with Payroll's first half, across their sections
    split("Refunds rule", "requests")
    merge("requests about refunds")  # its two halves rejoined
    split("Travel rule", "go to")

    listed = _listed(cast, document)
    assert [o for o, _ in listed] == list(range(len(listed)))
    texts = [t for _, t in listed]
    # What the edits leave, in document order (the API lists by the places, and numbers them; a paragraph under its
    # heading starts with it).
    expected = ["Refunds rule:", "requests about refunds go to", "Shipping rule:", "which answers within 4",
                "Holidays rule:", "Travel rule: requests about travel", "go to the travel desk", "Security rule:",
                "Training rule:", "Equipment rule:"]  # fmt: skip
    assert len(texts) == len(expected) and all(e in t for t, e in zip(texts, expected, strict=True)), texts
    assert "Payroll rule" in texts[2]

    # A search with neighbours: each paragraph's window holds its neighbours, stitched in their new order.
    ids = [str(row.pk) for row in paragraphs(document)]
    for index, text in enumerate(texts):
        results = [r for r in search(cast.viewer, text, around=1, top_n=8) if text in r["text"]]
        assert results, text
        for result in results:
            stitched = result["text"]
            present = [i for i, t in enumerate(texts) if t in stitched]
            assert present == list(range(present[0], present[-1] + 1)), (text, stitched)  # a run of the document
            places = [stitched.index(texts[i]) for i in present]
            assert places == sorted(places), (text, stitched)  # in document order
            if result["chunk_id"] == ids[index]:  # its own window: both neighbours (around 1) in it
                assert {max(0, index - 1), min(len(texts) - 1, index + 1)} <= set(present), (text, stitched)
    # Nothing of the places is left behind: one per row, numbered one after another.
    rows = Chunk.objects.filter(document=document)
    assert ChunkPosition.objects.filter(document=document).count() == rows.count()
    assert sorted(rows.values_list("position__ordinal", flat=True)) == list(range(rows.count()))
