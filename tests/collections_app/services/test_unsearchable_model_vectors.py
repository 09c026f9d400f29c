"""A vector with no length never enters the store from a model's answer either: an upload goes to `error`
saying so, an edit is refused with a 503 and leaves the paragraph as it was.

The model is an OpenAI-compatible endpoint (tests/standins.py, real local HTTP) that answers zeros for any text
holding the word "blank", as a failing server can; every other text gets a vector of its own.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from collections_app.models import Chunk, Document
from collections_app.services.collections import collection_create
from embedding import UnsearchableVector
from embedding._model import EmbeddingModel
from embedding._providers import OpenAIEmbeddingProvider
from tests.files.documents import html_bytes
from tests.standins import Request, serve

SECTIONS = [
    (1, "Office", ""),
    (2, "Parking", "Staff cars must be left in the underground garage beneath building B."),
    (2, "Bicycles", "Cyclists can lock their bikes in the covered rack next to the main entrance."),
]


def vectors(request: Request) -> list[list[float]]:
    return [
        [0.0, 0.0, 0.0] if "blank" in text else [float(len(text)), float(i + 1), 1.0]
        for i, text in enumerate(request.body["input"])
    ]


@pytest.fixture
def remote(settings) -> Iterator[str]:
    with serve(embeddings=vectors) as server:
        settings.KB_EMBED_URL, settings.KB_EMBED_MODEL, settings.KB_EMBED_DIMS = server.url, "stand-in-embedder", 3
        yield "remote"


def test_the_endpoint_answering_zeros_is_refused_naming_the_passage(remote, settings) -> None:
    provider = OpenAIEmbeddingProvider(EmbeddingModel("remote", "openai", "m", 3, 0.0), url=settings.KB_EMBED_URL)

    with pytest.raises(UnsearchableVector, match=r"no length .* \(passage 2 of 2\)"):
        provider.embed_passages(["a garage", "a blank line"])


def test_an_upload_whose_vector_has_no_length_is_an_error_saying_so(cast, remote, upload) -> None:
    collection = collection_create(tenant=cast.tenant, name="remote-office", embedding_alias=remote)
    blank = [*SECTIONS, (2, "Notes", "This page is intentionally left blank for later notes.")]

    answer = upload(cast.editor, collection, "office.html", html_bytes(blank))

    assert answer.status_code == 202, answer.content
    document = Document.objects.get(pk=answer.json()["document_id"])
    assert document.status == "error" and "no length" in document.error, (document.status, document.error)
    assert not Chunk.objects.filter(document=document).exists()


def test_an_edit_whose_vector_has_no_length_is_a_503_and_changes_nothing(cast, remote, upload) -> None:
    collection = collection_create(tenant=cast.tenant, name="remote-office", embedding_alias=remote)
    answer = upload(cast.editor, collection, "office.html", html_bytes(SECTIONS))
    document = Document.objects.get(pk=answer.json()["document_id"])
    assert document.status == "done", document.error
    bikes = Chunk.objects.get(document=document, text__contains="bikes")
    url = f"/api/manage/collections/{collection.pk}/documents/{document.pk}/paragraphs/{bikes.pk}"

    edit = cast.editor.patch(url, {"text": "Left blank until the new rack is built."}, format="json")

    assert edit.status_code == 503, edit.content
    assert "no length" in edit.json()["detail"]
    bikes.refresh_from_db()
    assert "covered rack" in bikes.text and bikes.edited is False
