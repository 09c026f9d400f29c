from __future__ import annotations

import itertools

import pytest

from ingestion import Block, ChunkingSettings, chunk_blocks, iter_chunk_blocks
from ingestion.chunking import StrategyNotBuilt


def para(text: str, section: list[str], page: int | None = 1) -> Block:
    return Block(text=text, kind="paragraph", page=page, section=section)


def heading(text: str, section: list[str], page: int | None = 1) -> Block:
    return Block(text=text, kind="heading", page=page, section=section)


def test_blocks_of_one_section_are_packed_and_the_heading_travels_with_its_body():
    blocks = [
        heading("Refunds", ["Refunds"]),
        para("One.", ["Refunds"]),
        para("Two.", ["Refunds"]),
    ]
    drafts = chunk_blocks(blocks, ChunkingSettings(size=100, overlap=10))
    assert [d.text for d in drafts] == ["Refunds\n\nOne.\n\nTwo."]
    assert drafts[0].section == ["Refunds"]


def test_a_chunk_never_crosses_a_page_or_section_boundary():
    blocks = [para("a", ["A"], 1), para("b", ["A"], 2), para("c", ["B"], 2)]
    drafts = chunk_blocks(blocks, ChunkingSettings(size=1000, overlap=0))
    assert [(d.text, d.page, d.section) for d in drafts] == [
        ("a", 1, ["A"]),
        ("b", 2, ["A"]),
        ("c", 2, ["B"]),
    ]


def test_a_parent_heading_with_no_body_of_its_own_is_carried_by_the_trail_not_a_chunk():
    blocks = [
        heading("Guide", ["Guide"]),
        heading("Setup", ["Guide", "Setup"]),
        para("Install it.", ["Guide", "Setup"]),
    ]
    drafts = chunk_blocks(blocks, ChunkingSettings())
    assert [(d.text, d.section) for d in drafts] == [("Setup\n\nInstall it.", ["Guide", "Setup"])]


def test_a_long_block_is_split_at_whitespace_with_overlap():
    words = [f"w{i:03d}" for i in range(100)]
    drafts = chunk_blocks([para(" ".join(words), [])], ChunkingSettings(size=100, overlap=20))
    assert len(drafts) > 1
    assert all(len(d.text) <= 100 for d in drafts)
    assert all(not d.text.startswith(" ") and not d.text.endswith(" ") for d in drafts)
    for before, after in itertools.pairwise(drafts):
        assert before.text.split()[-1] in after.text.split()[:5]  # the overlap repeats the tail
    covered = {w for d in drafts for w in d.text.split()}
    assert covered == set(words)


def test_an_unbuilt_strategy_is_refused_not_faked():
    with pytest.raises(StrategyNotBuilt, match=r"semantic.*not built yet"):
        chunk_blocks([para("x", [])], ChunkingSettings(strategy="semantic"))


def test_the_embedding_text_carries_the_trail_the_stored_text_does_not():
    (draft,) = chunk_blocks([para("Paid in five days.", ["Handbook", "Refunds"])], ChunkingSettings())
    assert draft.text == "Paid in five days."
    assert draft.embedding_text() == "Handbook › Refunds\n\nPaid in five days."


def test_a_heading_is_never_left_alone_when_its_body_is_long():
    body = " ".join(f"word{i:03d}" for i in range(150))  # ~1,200 characters
    blocks = [heading("A title of some length", ["A title of some length"]), para(body, ["A title of some length"])]
    drafts = chunk_blocks(blocks, ChunkingSettings(size=1000, overlap=100))
    assert drafts[0].text.startswith("A title of some length\n\nword000")
    assert all(len(d.text) <= 1000 for d in drafts)
    assert {w for d in drafts for w in d.text.split()} >= set(body.split())


@pytest.mark.parametrize("stream", [False, True])
def test_a_title_followed_directly_by_a_section_heading_leads_that_section_and_is_no_paragraph(stream):
    blocks = [
        heading("Procurement policy", ["Procurement policy"]),
        heading("1 Scope", ["1 Scope"]),
        para("This policy applies to every purchase.", ["1 Scope"]),
        heading("2 Payment", ["2 Payment"]),
        para("Invoices are paid within thirty days.", ["2 Payment"]),
    ]
    settings = ChunkingSettings(size=200, overlap=0)
    drafts = list(iter_chunk_blocks(blocks, settings)) if stream else chunk_blocks(blocks, settings)
    assert [(d.text, d.section) for d in drafts] == [
        ("Procurement policy\n\n1 Scope\n\nThis policy applies to every purchase.", ["1 Scope"]),
        ("2 Payment\n\nInvoices are paid within thirty days.", ["2 Payment"]),
    ]


@pytest.mark.parametrize("stream", [False, True])
def test_a_closing_heading_with_nothing_after_it_stays_a_paragraph(stream):
    blocks = [heading("Intro", ["Intro"]), para("Text.", ["Intro"]), heading("The end", ["The end"])]
    settings = ChunkingSettings(size=200, overlap=0)
    drafts = list(iter_chunk_blocks(blocks, settings)) if stream else chunk_blocks(blocks, settings)
    assert [d.text for d in drafts] == ["Intro\n\nText.", "The end"]


@pytest.mark.parametrize("strategy", ["structure", "fixed", "hierarchical"])
def test_a_paragraph_cut_from_the_block_before_it_says_it_continues_one_at_a_new_block_does_not(strategy):
    long = " ".join(f"w{i:03d}" for i in range(60))  # ~300 characters, cut at 100
    blocks = [heading("Refunds", ["Refunds"]), para(long, ["Refunds"]), para("Next block.", ["Refunds"])]
    drafts = [d for d in chunk_blocks(blocks, ChunkingSettings(strategy=strategy, size=100, overlap=20))]
    paragraphs = [d for d in drafts if d.kind == "paragraph"]
    inside = [d for d in paragraphs if d.continues]
    assert inside and all("w0" in d.text for d in inside)  # only pieces of the long block continue
    first_of_block = [d for d in paragraphs if not d.continues]
    assert first_of_block[0].text.startswith("Refunds")  # the first piece, with its heading
    assert any(d.text.endswith("Next block.") for d in paragraphs)
    assert not any(d.continues for d in drafts if d.kind == "parent")
