"""Re-indexing from any chunk strategy to any other, through the path the admin and the API use (a PATCH of the
strategy, then the re-index task with its publish by COPY and its cutover): afterwards the collection holds what a
fresh build with the new strategy holds, paragraph for paragraph (parents included), and a search answers from it.

One collection per strategy is built fresh from the same two documents (a Markdown handbook with nested headings
that closes on a lone heading, and a two-page PDF, so `page` cuts otherwise than `structure`). One of them is then
re-indexed along a walk that takes every (from, to) pair of the four once, each state compared with the fresh build
of its strategy. A pair that fails is collected, not raised, so one run names every failing pair.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import pytest

from collections_app.models import BUILT_CHUNK_STRATEGIES, Chunk, ChunkStrategy, Collection, Document
from collections_app.services.collections import collection_create
from tests.files.documents import pdf_bytes
from tests.files.sections import body

pytestmark = pytest.mark.slow

STRATEGIES = [s for s in ChunkStrategy.values if s in BUILT_CHUNK_STRATEGIES]


def _handbook_markdown() -> bytes:
    sections = [(1, "Staff handbook", body(21, 40)), (2, "1 Refunds", body(22, 240)), (3, "Exceptions", body(23, 90)),
                (2, "2 Tenders", body(24, 200)), (3, "Opening a tender", body(25, 60)), (2, "3 Delivery", body(26, 30)),
                (2, "4 Contacts", "")]  # fmt: skip
    # It closes on a heading with no body: a paragraph (and, hierarchical, a parent) whose text is its own section.
    return "\n\n".join(f"{'#' * level} {heading}\n\n{text}".strip() for level, heading, text in sections).encode()


def _two_pages() -> bytes:
    return pdf_bytes([[("Warehouse", body(31, 90)), ("Parcels", body(32, 40))], [("Packaging", body(33, 120))]])


def _built(cast, upload, strategy: str) -> Collection:
    collection = collection_create(
        tenant=cast.tenant, name=f"built {strategy}", chunk_strategy=strategy, chunk_size=300, chunk_overlap=40,
        min_score=0,
    )  # fmt: skip
    for filename, content in (("handbook.md", _handbook_markdown()), ("warehouse.pdf", _two_pages())):
        reply = upload(cast.editor, collection, filename, content)
        assert reply.status_code == 202, reply.json()
        assert Document.objects.get(pk=reply.json()["document_id"]).status == "done"
    return collection


def _paragraphs(collection: Collection) -> dict[str, list[tuple[Any, ...]]]:
    """Each document's rows as a reader's build holds them: kind, text, section, page, and its parent's ordinal."""
    rows = Chunk.objects.filter(collection=collection, generation=collection.active_generation)
    found: dict[str, list[tuple[Any, ...]]] = {}
    for row in rows.select_related("document", "parent").order_by("document__filename", "position__ordinal"):
        parent = None if row.parent is None else row.parent.ordinal
        found.setdefault(row.document.filename, []).append(
            (row.ordinal, row.kind, row.text, list(row.section), row.page, parent)
        )
    return found


def _reindex_to(cast, collection: Collection, strategy: str, django_capture_on_commit_callbacks) -> dict[str, Any]:
    url = f"/api/manage/collections/{collection.pk}"
    changed = cast.editor.patch(url, {"chunk_strategy": strategy}, format="json")
    assert changed.status_code == 200, changed.json()
    with django_capture_on_commit_callbacks(execute=True):
        started = cast.editor.post(f"{url}/reindex")
    assert started.status_code == 202, started.json()
    return cast.viewer.get(url).json()


def _answers(cast, collection: Collection) -> list[str]:
    reply = cast.viewer.post(
        "/api/search", {"query": "when do refunds arrive", "collections": [collection.name]}, format="json"
    )
    assert reply.status_code == 200, reply.json()
    return [r["chunk_id"] for r in reply.json()["results"]]


# One walk through every (from, to) pair of the four strategies, each once (an Eulerian circuit, same-strategy
# re-indexes included): 16 re-indexes of one collection instead of a collection built per pair.
WALK = ["structure", "structure", "fixed", "structure", "hierarchical", "structure", "page", "fixed", "fixed",
        "hierarchical", "fixed", "page", "hierarchical", "hierarchical", "page", "page", "structure"]  # fmt: skip


def test_a_collection_reindexes_from_every_strategy_to_every_other_as_a_fresh_build_would(
    cast, upload, django_capture_on_commit_callbacks
):
    assert set(pairwise(WALK)) == {(s, t) for s in STRATEGIES for t in STRATEGIES}
    collections = {strategy: _built(cast, upload, strategy) for strategy in STRATEGIES}
    fresh = {strategy: _paragraphs(collection) for strategy, collection in collections.items()}
    assert len({repr(rows) for rows in fresh.values()}) == len(STRATEGIES)  # four strategies, four different cuts

    walked = collections[WALK[0]]
    failures: list[str] = []
    for source, target in pairwise(WALK):
        state = _reindex_to(cast, walked, target, django_capture_on_commit_callbacks)
        if state["reindex"] is not None or state["stale_documents"]:
            # Still answering from `source`'s build: the next pair starts from it (and is named after the walk).
            failures.append(f"{source} -> {target}: {state['reindex']}, {state['stale_documents']} stale")
            continue
        walked.refresh_from_db()
        if (difference := _first_difference(_paragraphs(walked), fresh[target])) is not None:
            failures.append(f"{source} -> {target}: unlike a fresh {target} build, {difference}")
        live = {str(pk) for pk in Chunk.objects.filter(collection=walked).values_list("pk", flat=True)}
        answered = _answers(cast, walked)
        if not answered or not set(answered) <= live:
            failures.append(f"{source} -> {target}: the search answered {answered}, not from its paragraphs")

    assert not failures, "\n".join(failures)


def _first_difference(got: dict[str, list[tuple[Any, ...]]], fresh: dict[str, list[tuple[Any, ...]]]) -> str | None:
    for filename in sorted(set(got) | set(fresh)):
        mine, theirs = got.get(filename, []), fresh.get(filename, [])
        for row, expected in zip(mine, theirs, strict=False):
            if row != expected:
                return f"{filename} has {row} where a fresh build has {expected}"
        if len(mine) != len(theirs):
            return f"{filename} has {len(mine)} rows where a fresh build has {len(theirs)}"
    return None
