"""When a file's name may be a paragraph's title: only when it reads as words.

The breadcrumb (title, then the heading trail) is embedded with every paragraph of a document. A stem such as `p31`,
`12345`, `IMG_2034`, `scan-0001`, a hash or a date stamp tells the model nothing about the text, and in a short
paragraph it is a good part of what the model reads (measured in bench/eval_xlang.py: docs/DECISIONS.md).
"""

from __future__ import annotations

import re
from pathlib import PurePath

# Words cameras, scanners and exports write into file names: they say how a file was made, not what it holds.
NOISE_WORDS = frozenset(
    {
        "img", "image", "dsc", "dscn", "dcim", "pic", "photo", "scan", "scanned", "screenshot", "capture",
        "doc", "docx", "document", "file", "page", "pg", "p", "copy", "untitled", "unnamed", "new", "tmp",
        "temp", "export", "download", "upload", "final", "draft", "version", "v", "rev", "part", "no",
    }
)  # fmt: skip
_TOKEN = re.compile(r"[^\W_]+")  # letters and digits, split at anything else (spaces, _, -, ., brackets)
_LATIN_VOWELS = set("aeiouyäöüåæøéèêáàâíìîóòôúùûőűąęěůýǎ")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")  # "AnnualLeavePolicy" → "Annual Leave Policy"
# Letters-only hashes (hexadecimal digits a-f, long): "deadbeefcafe".
_HEX_LETTERS = re.compile(r"[a-f]{8,}")


def reads_as_words(stem: str) -> bool:
    """Does a file name's stem read as words? At least one word of three letters or more that is not a
    camera/scanner/export word (a token with a digit is none): "Annual leave policy", "Godišnji odmor 2024",
    "Q3 report", "Minutes 2024-05-01" do; "p31", "12345", "IMG_2034", "scan-0001", a hash, "2024-05-01_143022"
    do not."""
    return any(_is_word(token) for token in _TOKEN.findall(_CAMEL.sub(" ", stem)))


def title_from_filename(filename: str) -> str:
    """The file's name as a title ("Annual_leave-policy.docx" → "Annual leave policy"), "" when it is noise."""
    stem = PurePath(filename).stem if "." in filename else filename
    if not reads_as_words(stem):
        return ""
    # Separators between words read as spaces; a hyphen between digits (a date, a range) stays.
    spaced = re.sub(r"_+|(?<=[^\W\d_])-(?=[^\W\d_])", " ", _CAMEL.sub(" ", stem))
    return " ".join(spaced.split())


def _is_word(token: str) -> bool:
    if len(token) < 3 or not token.isalpha() or token.lower() in NOISE_WORDS:
        return False
    lower = token.lower()
    if _HEX_LETTERS.fullmatch(lower):
        return False
    if lower.isascii() or all("a" <= ch <= "z" or ch in _LATIN_VOWELS for ch in lower):
        return any(ch in _LATIN_VOWELS for ch in lower)  # "xkcd", "qwrtz" are not words
    return True  # Cyrillic, Hebrew, ...: letters in their own script
