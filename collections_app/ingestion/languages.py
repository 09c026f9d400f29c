"""Language labels (langdetect) and the PostgreSQL text search configuration for each."""

from __future__ import annotations

from langdetect import DetectorFactory, LangDetectException, detect_langs

# langdetect is randomised; a fixed seed makes the same text get the same label.
DetectorFactory.seed = 0

# ISO 639-1 → snowball configurations shipped with PostgreSQL 18.
_TS_CONFIGS = {
    "ar": "arabic", "hy": "armenian", "eu": "basque", "ca": "catalan", "da": "danish", "nl": "dutch",
    "en": "english", "et": "estonian", "fi": "finnish", "fr": "french", "de": "german", "el": "greek",
    "hi": "hindi", "hu": "hungarian", "id": "indonesian", "ga": "irish", "it": "italian",
    "lt": "lithuanian", "ne": "nepali", "no": "norwegian", "pt": "portuguese", "ro": "romanian",
    "ru": "russian", "sr": "serbian", "es": "spanish", "sv": "swedish", "ta": "tamil", "tr": "turkish",
    "yi": "yiddish",
}  # fmt: skip

# Below this many letters langdetect guesses; the caller falls back to the document's language.
_MIN_LETTERS = 20


def detect_language(text: str, default: str = "") -> str:
    if sum(ch.isalpha() for ch in text) < _MIN_LETTERS:
        return default
    try:
        best = detect_langs(text)[0]
    except LangDetectException:
        return default
    return best.lang if best.prob >= 0.6 else default


def text_search_config(language: str) -> str:
    return _TS_CONFIGS.get(language.split("-")[0], "simple")
