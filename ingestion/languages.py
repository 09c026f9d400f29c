"""Language labels, and the PostgreSQL text search configuration for each.

A label is an ISO 639-1 code, with one exception: Serbian, Croatian and Bosnian share the label `sh`
(Serbo-Croatian, ISO 639-1's code for the three standards together). They are one language for search:
the same words, the same endings, and PostgreSQL's `serbian` snowball stemmer reads both scripts. No
detector tells them apart reliably on a paragraph, and telling them apart would only split one keyword
index into three.

How a text is labelled (`label_language`), measured by bench/language_labels.py on tests/data/languages.json:

1. Mostly numbers (fewer letters than digits, or no letters): undetected, "" (shown as null).
2. Script rules settle what letters alone can settle: Hebrew letters → he; Cyrillic with ђ or ћ → sh;
   with ѓ, ќ or ѕ → mk; ј, љ, њ, џ → sh or mk, never bg or ru; щ, ъ, ю, я, й → bg or ru, never sh or mk;
   ы, э, ё → ru.
3. A short fragment (a heading such as "Член 1": under three words or _MIN_LETTERS letters) takes its
   document's language when that language is written in the fragment's script.
4. Otherwise lingua decides among the candidates the script left, restricted to the languages in play
   (LINGUA_LANGUAGES): high-accuracy models for these are loaded on first use; all of lingua's 75 would
   be 1.27 GB. Lingua is deterministic: the same text gets the same label every time.
"""

# ruff: noqa: RUF002  (the docstring names Cyrillic letters on purpose)
from __future__ import annotations

import threading
import unicodedata
from functools import lru_cache

from lingua import Language, LanguageDetector, LanguageDetectorBuilder

SH = "sh"

# Codes folded into one label (see above). An old label "sr"/"hr"/"bs" is read as "sh" everywhere.
MERGED = {"sr": SH, "hr": SH, "bs": SH}

# The languages lingua chooses from, by lingua's names: each costs ~25 MB of models once a text in its
# script needs them (bench/README.md). Ukrainian needs none: its own letters (і, ї, є, ґ) settle it.
LINGUA_LANGUAGES: dict[str, tuple[Language, ...]] = {
    "en": (Language.ENGLISH,),
    "de": (Language.GERMAN,),
    "fr": (Language.FRENCH,),
    "es": (Language.SPANISH,),
    "it": (Language.ITALIAN,),
    "sq": (Language.ALBANIAN,),
    SH: (Language.SERBIAN, Language.CROATIAN, Language.BOSNIAN),
    "mk": (Language.MACEDONIAN,),
    "bg": (Language.BULGARIAN,),
    "ru": (Language.RUSSIAN,),
    "he": (Language.HEBREW,),
}

# ISO 639-1 → snowball configurations shipped with PostgreSQL 18 (kb_ts_config in the database says the same).
# Hebrew has none: 'simple', and its keyword index adds each word without its glued prefixes and its points
# (migrations 0038-0040).
_TS_CONFIGS = {
    "ar": "arabic", "hy": "armenian", "eu": "basque", "ca": "catalan", "da": "danish", "nl": "dutch",
    "en": "english", "et": "estonian", "fi": "finnish", "fr": "french", "de": "german", "el": "greek",
    "hi": "hindi", "hu": "hungarian", "id": "indonesian", "ga": "irish", "it": "italian",
    "lt": "lithuanian", "ne": "nepali", "no": "norwegian", "pt": "portuguese", "ro": "romanian",
    "ru": "russian", "sr": "serbian", "sh": "serbian", "hr": "serbian", "bs": "serbian", "es": "spanish",
    "sv": "swedish", "ta": "tamil", "tr": "turkish", "yi": "yiddish",
}  # fmt: skip

# The labels an editor may give a document (relabel) or pin on a collection: those the labeller gives,
# those with a stemmer, and a few more written in Europe, each matched by whole words when it has no stemmer.
SUPPORTED_LANGUAGES: frozenset[str] = frozenset(
    {*LINGUA_LANGUAGES, *(code for code in _TS_CONFIGS if code not in MERGED), "uk", "sl", "pl", "cs", "sk"}
)

# Below this many letters (or three words) a text is a fragment: it takes its document's language.
_MIN_LETTERS = 12

_CYRILLIC = {SH, "mk", "bg", "ru", "uk"}
_SCRIPT_OF: dict[str, str] = {**dict.fromkeys(_CYRILLIC, "cyrillic"), "he": "hebrew"}
_LOCK = threading.Lock()


def normalise(code: str | None) -> str:
    """A stored or given label as kbsite writes it: lower case, region dropped, sr/hr/bs → sh."""
    base = (code or "").strip().lower().replace("_", "-").split("-")[0]
    return MERGED.get(base, base)


def language_label_variants(code: str) -> list[str]:
    """The stored labels one code stands for: "sh" → sh, sr, hr, bs (labels written before they merged)."""
    label = normalise(code)
    return [label, *(old for old, new in MERGED.items() if new == label)]


def text_search_config(language: str) -> str:
    return _TS_CONFIGS.get(normalise(language), "simple")


def script_of(text: str) -> str:
    """The script most letters are written in: latin, cyrillic, hebrew or other ("" without letters)."""
    counts: dict[str, int] = {}
    for ch in text:
        if ch.isalpha():
            name = unicodedata.name(ch, "")
            script = name.split(" ")[0].lower() if name else "other"
            script = script if script in ("latin", "cyrillic", "hebrew") else "other"
            counts[script] = counts.get(script, 0) + 1
    return max(counts, key=lambda s: (counts[s], s)) if counts else ""


def script_candidates(text: str) -> frozenset[str] | None:
    """What the letters alone allow (step 2 above); None when they say nothing."""
    script = script_of(text)
    if script == "hebrew":
        return frozenset({"he"})
    if script != "cyrillic":
        return None
    letters = set(text.lower())
    if letters & set("ђћ"):
        return frozenset({SH})
    if letters & set("ѓќѕ"):
        return frozenset({"mk"})
    sh_mk = bool(letters & set("јљњџ"))
    if letters & set("ыэё") and not sh_mk:
        return frozenset({"ru"})
    if letters & set("іїєґ") and not sh_mk:
        return frozenset({"uk"})
    bg_ru = bool(letters & set("щъюяй"))
    if sh_mk and not bg_ru:
        return frozenset({SH, "mk"})
    if bg_ru and not sh_mk:
        return frozenset({"bg", "ru", "uk"})
    return frozenset(_CYRILLIC)


def is_mostly_numeric(text: str) -> bool:
    letters = sum(ch.isalpha() for ch in text)
    return letters == 0 or letters < sum(ch.isdigit() for ch in text)


def label_language(text: str, default: str = "") -> str:
    """The label of one text; `default` is its document's language, taken by a short fragment."""
    if is_mostly_numeric(text):
        return ""
    candidates = script_candidates(text)
    if candidates is not None and len(candidates) == 1:
        return next(iter(candidates))
    default = normalise(default)
    if default and _is_fragment(text) and _SCRIPT_OF.get(default, "latin") == script_of(text):
        return default
    return _detect(text, candidates)


def document_language(sample: str) -> str:
    """A document's main language, from a sample of its text ("" when it is mostly numbers)."""
    return label_language(sample)


# The name ingestion and search have always called.
detect_language = label_language


def _is_fragment(text: str) -> bool:
    words = [w for w in text.split() if any(ch.isalpha() for ch in w)]
    return len(words) < 3 or sum(ch.isalpha() for ch in text) < _MIN_LETTERS


def _detect(text: str, candidates: frozenset[str] | None) -> str:
    allowed = tuple(sorted(candidates)) if candidates else tuple(sorted(LINGUA_LANGUAGES))
    found = detector(allowed).detect_language_of(text)
    if found is None:
        return ""
    return normalise(found.iso_code_639_1.name)


@lru_cache(maxsize=32)
def detector(labels: tuple[str, ...]) -> LanguageDetector:
    """A lingua detector choosing among `labels`. Lingua keeps each language's models once, shared by
    every detector, loaded on first need (not preloaded: a process that never meets Cyrillic never loads it)."""
    with _LOCK:
        languages = [lang for label in labels for lang in LINGUA_LANGUAGES.get(label, ())]
        if len(languages) < 2:  # lingua needs two; a lone candidate would have been returned before
            languages = [lang for group in LINGUA_LANGUAGES.values() for lang in group]
        return LanguageDetectorBuilder.from_languages(*languages).build()


# Names people read, where the ISO 639 register's own name is not one ("Modern Greek (1453-)").
_NAMES = {SH: "Serbo-Croatian (sr/hr/bs)", "el": "Greek", "ne": "Nepali", "no": "Norwegian"}


def language_name(code: str | None) -> str:
    """The one name of a language label for people, in every admin page and API answer that names one:
    "mk" → "Macedonian", "sh" (and sr, hr, bs) → "Serbo-Croatian (sr/hr/bs)", "el" → "Greek",
    "" or None → "undetected". The ISO 639 register's name otherwise, without its qualifiers in brackets
    ("Nepali (macrolanguage)"); an unknown code is shown as itself."""
    import iso639

    if not code:
        return "undetected"
    label = normalise(code)
    if label in _NAMES:
        return _NAMES[label]
    try:
        name = str(iso639.Language.from_part1(label).name)
    except Exception:  # an unknown code is shown as itself
        return label
    return name.split(" (")[0].removeprefix("Modern ")


def language_shown(code: str | None) -> str:
    """A label with its name, for lists and choices: "Greek (el)", "Serbo-Croatian (sr/hr/bs)" (its code is in its
    name), "undetected"."""
    if not code:
        return language_name(code)
    name, label = language_name(code), normalise(code)
    return name if label == SH or name == label else f"{name} ({label})"
