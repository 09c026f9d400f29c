"""A file's name joins every paragraph's breadcrumb only when it reads as words, and the build says which title."""

from __future__ import annotations

import numpy as np

from collections_app.models import Build, Chunk, Document
from embedding import get_embedder
from ingestion import ChunkDraft

TEXT = b"Visitors sign in at reception and wear their badge visibly until they leave the building."


def _stored_vector(document: Document) -> np.ndarray:
    chunk = Chunk.objects.get(document=document)
    return np.asarray(chunk.embedding, dtype=np.float64)


def _cosine(a, b) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


def test_a_noisy_file_name_is_no_title_and_the_build_says_so(cast, collection, upload) -> None:
    assert upload(cast.editor, collection, "IMG_2034.txt", TEXT).status_code == 202
    document = Document.objects.get(collection=collection)

    build = Build.objects.get(document=document)
    assert build.method["title"] is None and build.method["title_from"] == "none"
    # The paragraph was embedded alone: "IMG_2034" is not in what the model read.
    embedder = get_embedder(collection.embedding_alias)
    alone, noisy = embedder.embed_passages(
        [
            ChunkDraft(TEXT.decode(), [], None).embedding_text(),
            ChunkDraft(TEXT.decode(), [], None).embedding_text("IMG_2034"),
        ]
    )
    stored = _stored_vector(document)
    assert _cosine(stored, alone) > 0.9999
    assert _cosine(stored, noisy) < 0.999


def test_a_file_name_that_reads_as_words_is_the_title(cast, collection, upload) -> None:
    assert upload(cast.editor, collection, "Visitor_policy.txt", TEXT).status_code == 202
    document = Document.objects.get(collection=collection)

    build = Build.objects.get(document=document)
    assert build.method["title"] == "Visitor policy" and build.method["title_from"] == "file name"
    titled = get_embedder(collection.embedding_alias).embed_passages(
        [ChunkDraft(TEXT.decode(), [], None).embedding_text("Visitor policy")]
    )[0]
    assert _cosine(_stored_vector(document), titled) > 0.9999
