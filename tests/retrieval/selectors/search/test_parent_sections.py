"""parent_return (auto / parent / child) and `expand` on a hierarchical collection: settings read by the next
search, nothing re-indexed; sections are put together from readable paragraphs only; citations name the child."""

from __future__ import annotations

import pytest

from collections_app.models import Chunk, Collection
from retrieval.selectors.search import stitch
from tests.files.documents import html_bytes
from tests.files.sections import SECTIONS

QUESTION = "goods unused complete original packaging"


@pytest.fixture
def hierarchical(cast, collection, upload) -> Collection:
    reply = cast.editor.patch(
        f"/api/manage/collections/{collection.pk}",
        {"chunk_strategy": "hierarchical", "chunk_size": 200, "chunk_overlap": 20, "min_score": 0},
        format="json",
    )
    assert reply.status_code == 200, reply.json()
    upload(cast.editor, collection, "handbook.html", html_bytes(SECTIONS))
    return collection


def ask(cast, **extra):
    reply = cast.viewer.post(
        "/api/search", {"query": QUESTION, "collections": ["handbook"], "around": 0, "top_n": 1, **extra}, format="json"
    )
    assert reply.status_code == 200, reply.json()
    (result,) = reply.json()["results"]
    return result


def set_return(collection: Collection, mode: str, threshold: float = 0.5) -> None:
    Collection.objects.filter(pk=collection.pk).update(parent_return=mode, merge_threshold=threshold)


def section_of(chunk_id: str) -> list[Chunk]:
    child = Chunk.objects.get(pk=chunk_id)
    assert child.kind == "paragraph" and child.parent_id is not None
    return list(Chunk.objects.filter(parent_id=child.parent_id).order_by("position__ordinal"))


def test_child_returns_the_passage_parent_the_section_citing_the_child(cast, hierarchical):
    set_return(hierarchical, "child")
    child = ask(cast)
    siblings = section_of(child["chunk_id"])
    assert len(siblings) >= 2 and child["passages"] == 1

    set_return(hierarchical, "parent")
    section = ask(cast)
    assert section["chunk_id"] == child["chunk_id"]  # the citation is the matched child
    assert section["text"] == stitch(siblings).text  # each child once, the overlap of its cut printed once
    assert section["passages"] == len(siblings) and section["score"] == child["score"]


def test_auto_merges_once_enough_of_the_section_matched(cast, hierarchical):
    set_return(hierarchical, "auto", threshold=1.0)  # one match of several children is not enough
    assert ask(cast)["passages"] == 1
    set_return(hierarchical, "auto", threshold=0.01)
    merged = ask(cast)
    assert merged["passages"] == len(section_of(merged["chunk_id"])) > 1


def test_expand_asks_for_the_section_whatever_the_setting(cast, hierarchical):
    set_return(hierarchical, "child")
    expanded = ask(cast, expand=True)
    assert expanded["passages"] == len(section_of(expanded["chunk_id"])) > 1


def test_a_section_breaks_around_a_paragraph_the_search_may_not_read(cast, hierarchical):
    set_return(hierarchical, "parent")
    hit = ask(cast)["chunk_id"]
    siblings = section_of(hit)
    matched = Chunk.objects.get(pk=hit)
    ordinal, language = matched.ordinal, matched.language
    hidden = next(c for c in siblings if abs(c.ordinal - ordinal) == 1)
    # A paragraph the search's filter does not pass is read like one the reader may not read: never stitched.
    Chunk.objects.filter(pk=hidden.pk).update(language="xx")

    section = ask(cast, filters={"language": language})
    assert section["chunk_id"] == hit
    assert hidden.text not in section["text"]
    passing = {c.ordinal: c for c in Chunk.objects.filter(parent_id=matched.parent_id, language=language)}
    run = [ordinal]
    while run[0] - 1 in passing:
        run.insert(0, run[0] - 1)
    while run[-1] + 1 in passing:
        run.append(run[-1] + 1)
    assert hidden.ordinal not in run
    # Only the unbroken run holding the match: what lies beyond the hidden paragraph is not closed over.
    assert section["text"] == stitch([passing[o] for o in run]).text
