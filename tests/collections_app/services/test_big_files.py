"""Large text files: read as a stream, progress visible while embedding, old paragraphs kept until the new set."""

from __future__ import annotations

import io
from pathlib import Path
from unittest import mock

import pytest

from collections_app.models import Chunk, Document
from collections_app.services.documents import document_create, document_ingest
from embedding import get_embedder
from ingestion import Block, ChunkingSettings, chunk_blocks, iter_chunk_blocks, iter_text_blocks

EMBEDDER = "collections_app.services.documents._embed.get_embedder"  # where ingestion asks for its model
RETURNS = "Goods can be sent back within thirty days of purchase if they are unused and in their box."
DELIVERY = "Parcels leave the warehouse every weekday morning and arrive within two working days."


def handbook_md(sections: int) -> bytes:
    parts = ["# Handbook\n"]
    for n in range(sections):
        parts.append(f"## Returns {n}\n\n{RETURNS} Case {n}.\n\n## Delivery {n}\n\n{DELIVERY} Route {n}.\n")
    return "\n".join(parts).encode()


@pytest.fixture
def streamed(settings):
    """Text files over 1 KB are read as a stream (the default threshold is megabytes)."""
    settings.KB_STREAM_TEXT_ABOVE = 1000
    return settings


def test_a_large_markdown_file_is_read_as_a_stream_with_its_heading_trail(cast, collection, upload, streamed):
    response = upload(cast.editor, collection, "handbook.md", handbook_md(8))

    assert response.status_code == 202
    document = Document.objects.get(pk=response.json()["document_id"])
    assert document.status == "done", document.error
    assert document.progress == 100
    assert document.language == "en"
    assert "large text file read as a stream" in document.warnings[0]
    refunds = Chunk.objects.get(document=document, text__contains="Case 7.")
    assert refunds.section == ["Handbook", "Returns 7"]
    assert refunds.text.startswith("Returns 7")  # the heading travels with its body, as for any file
    assert Chunk.objects.get(document=document, text__contains="Route 5.").section == ["Handbook", "Delivery 5"]
    assert Chunk.objects.filter(document=document).count() == 16


def test_a_large_text_file_without_line_breaks_becomes_paragraphs_within_the_chunk_size(
    cast, collection, upload, streamed
):
    text = " ".join(f"{RETURNS} Case {n}." for n in range(120))  # 12 KB on one line

    response = upload(cast.editor, collection, "one-line.txt", text.encode())

    document = Document.objects.get(pk=response.json()["document_id"])
    assert document.status == "done", document.error
    chunks = list(Chunk.objects.filter(document=document))
    assert len(chunks) >= 12
    assert all(len(c.text) <= collection.chunk_size for c in chunks)
    assert Chunk.objects.filter(document=document, text__contains="Case 119.").exists()


def test_progress_moves_and_is_visible_while_a_large_document_is_embedded(cast, collection, streamed, settings):
    settings.KB_EMBED_BATCH = 4
    held = document_create(collection=collection, filename="handbook.md", content=io.BytesIO(handbook_md(8)))
    seen: list[tuple[str, int]] = []
    real = get_embedder(collection.embedding_alias)

    class Watching:
        def __getattr__(self, name: str):
            return getattr(real, name)  # everything but embedding is the real model's

        def embed_passages(self, texts: list[str]) -> list[list[float]]:
            document = Document.objects.get(pk=held.document.pk)
            seen.append((document.status, document.progress))
            return real.embed_passages(texts)

    with mock.patch(EMBEDDER, return_value=Watching()):
        document_ingest(document_id=str(held.document.pk))

    assert len(seen) == 4  # 16 paragraphs in batches of 4
    assert {status for status, _ in seen} == {"parsing"}
    progress = [p for _, p in seen]
    assert progress[0] == 10 and progress == sorted(set(progress)) and progress[-1] < 95
    assert Document.objects.get(pk=held.document.pk).progress == 100


def test_a_failed_rebuild_leaves_the_old_paragraphs_as_they_were(cast, collection, streamed, settings):
    settings.KB_EMBED_BATCH = 4
    held = document_create(collection=collection, filename="handbook.md", content=io.BytesIO(handbook_md(8)))
    document_ingest(document_id=str(held.document.pk))
    before = list(Chunk.objects.filter(document=held.document).values_list("pk", "text"))
    real = get_embedder(collection.embedding_alias)
    calls = []

    class FailingHalfWay:
        def __getattr__(self, name: str):
            return getattr(real, name)

        def embed_passages(self, texts: list[str]) -> list[list[float]]:
            calls.append(len(texts))
            # While the new set is embedded, readers still see the old paragraphs, all of them.
            assert list(Chunk.objects.filter(document=held.document).values_list("pk", "text")) == before
            if len(calls) == 3:
                raise RuntimeError("the model server went away")
            return real.embed_passages(texts)

    with mock.patch(EMBEDDER, return_value=FailingHalfWay()):
        document_ingest(document_id=str(held.document.pk))

    assert len(calls) == 3
    assert list(Chunk.objects.filter(document=held.document).values_list("pk", "text")) == before
    document = Document.objects.get(pk=held.document.pk)
    assert document.status == "error"
    assert "handbook.md could not be read (RuntimeError)" in document.error


def test_streamed_chunking_gives_the_same_paragraphs_as_chunking_the_whole_list(tmp_path):
    path = tmp_path / "handbook.md"
    path.write_bytes(handbook_md(30) + ("\n\n" + " ".join([DELIVERY] * 40)).encode())
    method = ChunkingSettings(size=300, overlap=60)

    blocks = list(iter_text_blocks(path, ".md"))

    assert list(iter_chunk_blocks(iter(blocks), method)) == chunk_blocks(blocks, method)


def test_a_heading_with_its_body_beneath_is_not_a_paragraph_of_its_own_when_streamed():
    blocks = [
        Block(text="Handbook", kind="heading", section=["Handbook"]),
        Block(text="Returns", kind="heading", section=["Handbook", "Returns"]),
        Block(text=RETURNS, kind="paragraph", section=["Handbook", "Returns"]),
        Block(text="Closing words", kind="heading", section=["Closing words"]),
    ]

    drafts = list(iter_chunk_blocks(iter(blocks), ChunkingSettings()))

    assert [d.text for d in drafts] == [f"Returns\n\n{RETURNS}", "Closing words"]
    assert drafts == chunk_blocks(blocks, ChunkingSettings())


def test_a_large_text_file_in_windows_1252_is_read_with_its_accents(tmp_path):
    path = Path(tmp_path / "notes.txt")
    path.write_bytes("Café crème: the menu is served à la carte.\n\nSecond paragraph.\n".encode("cp1252"))

    assert [b.text for b in iter_text_blocks(path, ".txt")] == [
        "Café crème: the menu is served à la carte.",
        "Second paragraph.",
    ]


def test_a_large_document_goes_to_the_large_queue_when_one_is_set_up(cast, collection, settings):
    settings.KB_LARGE_DOCUMENT_QUEUE = "kbsite-large"
    settings.KB_LARGE_DOCUMENT_BYTES = 1000
    queued = []

    with mock.patch("django_q.tasks.async_task", side_effect=lambda *a, **kw: queued.append(kw.get("cluster"))):
        for name, content in [("small.md", b"# Small\n\nA short note."), ("big.md", handbook_md(8))]:
            with mock.patch("django.db.transaction.on_commit", side_effect=lambda f: f()):
                document_create(collection=collection, filename=name, content=io.BytesIO(content))

    assert queued == [None, "kbsite-large"]
