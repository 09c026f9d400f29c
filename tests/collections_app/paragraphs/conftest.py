"""Real documents (a Word file and a PDF) in a collection searched with the floor off, and helpers to edit their
paragraphs through the API and to count what the embedding model is asked to embed."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from collections_app.models import Chunk, Collection, Document
from embedding import get_embedder
from tests.files.documents import docx_bytes, pdf_bytes

HANDBOOK = [
    (0, "Staff handbook", ""),
    (1, "Refunds", "Refunds are paid back within five working days to the card used for the purchase."),
    (1, "Shipping", "Parcels leave the warehouse every morning and reach most addresses in two days."),
    (1, "Payroll", "Salaries are paid on the last working day of each month by bank transfer."),
]
MANUAL = [
    [
        (
            "Returns",
            "Goods may be returned within thirty days if unused and in their original packaging. "
            "Opened software cannot be returned once its seal is broken.",
        )
    ],
    [("Warranty", "Every appliance carries a two year warranty covering defects in materials and workmanship.")],
]


def base(document: Document) -> str:
    return f"/api/manage/collections/{document.collection_id}/documents/{document.pk}"


def paragraphs(document: Document) -> list[Chunk]:
    """The document's live paragraphs in order, hidden ones included."""
    return list(Chunk.objects.filter(document=document).editable().order_by("position__ordinal"))


def paragraph(document: Document, contains: str) -> Chunk:
    return Chunk.objects.filter(document=document).editable().get(text__contains=contains)


def search(client, query: str, **extra) -> list[dict]:
    answer = client.post("/api/search", {"query": query, "around": 0, "top_n": 8, **extra}, format="json")
    assert answer.status_code == 200, answer.content
    return answer.json()["results"]


def texts(results: list[dict]) -> str:
    return "\n".join(r["text"] for r in results)


def uploaded(cast, collection: Collection, upload, name: str, data: bytes) -> Document:
    answer = upload(cast.editor, collection, name, data)
    assert answer.status_code == 202, answer.content
    document = Document.objects.get(pk=answer.json()["document_id"])
    assert document.status == "done", document.error
    return document


@pytest.fixture
def searchable(cast, collection) -> Collection:
    # The floor off: every readable paragraph is a candidate, so what an edit changes is what comes back.
    answer = cast.editor.patch(f"/api/manage/collections/{collection.pk}", {"min_score": 0}, format="json")
    assert answer.status_code == 200, answer.content
    return collection


@pytest.fixture
def handbook(cast, searchable, upload) -> Document:
    return uploaded(cast, searchable, upload, "handbook.docx", docx_bytes(HANDBOOK))


@pytest.fixture
def manual(cast, searchable, upload) -> Document:
    return uploaded(cast, searchable, upload, "manual.pdf", pdf_bytes(MANUAL))


@dataclass
class EmbedSpy:
    texts: list[str] = field(default_factory=list)


@pytest.fixture
def embedded(monkeypatch, collection) -> EmbedSpy:
    """Every passage the embedding model is asked to embed from now on (the real model still embeds it)."""
    spy = EmbedSpy()
    kind = type(get_embedder(collection.embedding_alias))
    original = kind.embed_passages

    def counting(self, texts, *args, **kwargs):
        spy.texts.extend(texts)
        return original(self, texts, *args, **kwargs)

    monkeypatch.setattr(kind, "embed_passages", counting)
    return spy
