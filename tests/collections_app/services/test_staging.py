"""The staging files give back exactly the paragraphs put in: the same text, section, kind and parent, whatever
repeats inside one paragraph (a heading that is its own paragraph, a parent section's kind)."""

from __future__ import annotations

from collections_app.services.documents import Staging
from ingestion import ChunkingSettings, chunk_blocks
from ingestion.blocks import Block
from tests.files.sections import body


def _blocks() -> list[Block]:
    # A body under its heading, then a heading that closes the document: its paragraph's text is its section.
    return [
        Block(text="Returns", kind="heading", section=["Returns"]),
        Block(text=body(1, 185), kind="paragraph", section=["Returns"], language="en"),
        Block(text="Tenders", kind="heading", section=["Tenders"]),
    ]


def test_staged_paragraphs_come_back_as_they_went_in() -> None:
    for strategy in ("hierarchical", "structure", "fixed", "page"):
        drafts = chunk_blocks(_blocks(), ChunkingSettings(strategy=strategy, size=120, overlap=20))
        with Staging() as staging:
            staging.add_all(drafts)
            staging.add_all(drafts)  # a second window appended, as a streamed document adds them
            back = list(staging.drafts())
        assert [d.kind for d in back] == [d.kind for d in drafts + drafts], strategy  # a NULL kind fails the COPY
        changed = [(put, got) for put, got in zip(drafts + drafts, back, strict=True) if put != got]
        assert not changed, f"{strategy}: {changed[0][0]} came back as {changed[0][1]}"
