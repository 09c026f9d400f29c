"""The staging files: a document's new paragraphs and vectors on disk, between reading and publishing."""

from __future__ import annotations

import pickle
import tempfile
from array import array
from collections.abc import Iterable, Iterator

from django.conf import settings

from embedding import searchable_vectors
from ingestion import ChunkDraft


class Staging:
    """A document's new paragraphs and their vectors, waiting on disk until they are published.

    Two nameless temporary files (O_TMPFILE where the system has it): they vanish when closed or when the
    process dies, even by kill -9, so staging never leaves anything behind. Paragraphs are pickled one after
    the other; vectors are float32 (what pgvector stores), one batch appended at a time.
    """

    def __init__(self) -> None:
        directory = settings.KB_STAGING_DIR or None  # "": the system's temporary directory
        self._drafts = tempfile.TemporaryFile(dir=directory)  # noqa: SIM115 - closed by __exit__
        self._vectors = tempfile.TemporaryFile(dir=directory)  # noqa: SIM115 - closed by __exit__
        self.count = 0
        self.vectors_count = 0
        self.dims = 0

    def __enter__(self) -> Staging:
        return self

    def __exit__(self, *exc: object) -> None:
        self._drafts.close()
        self._vectors.close()

    def add_all(self, drafts: Iterable[ChunkDraft]) -> None:
        self._drafts.seek(0, 2)
        for draft in drafts:
            pickle.dump(draft, self._drafts, protocol=pickle.HIGHEST_PROTOCOL)
            self.count += 1

    def drafts(self) -> Iterator[ChunkDraft]:
        self._drafts.seek(0)
        # Not a file anybody else can write: the pickles are our own, written just above. One load per pickle,
        # each with a memo of its own: each was dumped by a pickler of its own, whose back-references count from
        # its first object. One unpickler for all of them kept its memo from one load to the next, and a value
        # repeated inside a paragraph (a heading that is its own paragraph, a parent's kind "parent") came back
        # as an object of the first paragraph: a section holding another paragraph's text, a kind of NULL.
        for _ in range(self.count):
            yield pickle.load(self._drafts)

    def add_vectors(self, vectors: list[list[float]]) -> None:
        if vectors and not self.dims:
            self.dims = len(vectors[0])
        packed = array("f")
        for vector in vectors:
            if len(vector) != self.dims:
                raise ValueError(f"the model answered vectors of {len(vector)} and {self.dims} dimensions")
            packed.extend(vector)
        searchable_vectors(vectors)  # every model's answer, before a row can hold it (a NaN would fail a search)
        self._vectors.seek(0, 2)
        packed.tofile(self._vectors)
        self.vectors_count += len(vectors)

    def vectors(self, batch: int = 256) -> Iterator[list[float]]:
        self._vectors.seek(0)
        left = self.vectors_count
        while left:
            packed = array("f")
            packed.fromfile(self._vectors, min(batch, left) * self.dims)
            for start in range(0, len(packed), self.dims):
                yield packed[start : start + self.dims].tolist()
            left -= len(packed) // self.dims
