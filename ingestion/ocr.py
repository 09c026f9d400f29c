"""OCR: images and scanned PDF pages read by Tesseract, in the languages a document asks for.

Tesseract is called as its command-line program rather than through pytesseract.
pytesseract is only a wrapper around the same program, and two of its habits get
in the way here: `get_languages()` is cached for the life of the process (a
language pack installed while the worker runs would go unnoticed), and it saves
images for Tesseract without their resolution. The program reads the image from
stdin and writes TSV to stdout, so no temporary file is ever written.

Languages, per document (`ingest_options`):
- `tesseract_langs` (e.g. ["mkd", "eng"]): exactly those;
- else `mineru_lang` (MinerU's language groups): the installed Tesseract packs of
  that group, plus English (MinerU itself is not built yet; the document's
  warnings say so, and name the Tesseract languages used instead);
- else the default: English and other Latin-script text — `eng` plus
  `script/Latin` when installed, otherwise plus up to three installed
  Latin-script language packs (each extra language slows Tesseract down and,
  past a few, makes it worse rather than better).

Blocks: one per paragraph as Tesseract's layout analysis finds them, page 1 for an
image (one page per frame of a multi-frame TIFF).
"""

from __future__ import annotations

import io
import logging
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infra.errors import InvalidIngestOptions

from .blocks import Block, ParseResult
from .budgets import Budgets, ocr_pages_skipped
from .errors import NothingReadable, ParserUnavailable

logger = logging.getLogger(__name__)

# The one apt line that adds Tesseract with the language data kbsite's users need
# (Macedonian, Serbian in both scripts, Hebrew; English comes with tesseract-ocr).
# Shown by `make run` when Tesseract is missing, and in the error of an OCR document.
TESSERACT_APT_PACKAGES = (
    "tesseract-ocr",
    "tesseract-ocr-mkd",
    "tesseract-ocr-srp",
    "tesseract-ocr-srp-latn",
    "tesseract-ocr-heb",
)
TESSERACT_APT_LINE = "sudo apt-get install -y " + " ".join(TESSERACT_APT_PACKAGES)

# The program's name; tests point it at one that does not exist.
TESSERACT_CMD = "tesseract"
# One page should never hold a worker for long: past this it is skipped with a warning.
PAGE_TIMEOUT_SECONDS = 300

MINERU_LANGS = (
    "ch", "ch_server", "cyrillic", "east_slavic", "korean", "el", "arabic", "devanagari", "th", "ta", "te", "ka",
)  # fmt: skip
# What each MinerU language group means in Tesseract packs, used while MinerU is not available.
MINERU_TO_TESSERACT = {
    "ch": ["chi_sim"],
    "ch_server": ["chi_sim", "chi_tra"],
    "cyrillic": ["rus", "ukr", "bel", "bul", "mkd", "srp"],
    "east_slavic": ["rus", "ukr", "bel"],
    "korean": ["kor"],
    "el": ["ell"],
    "arabic": ["ara", "fas", "urd"],
    "devanagari": ["hin", "mar", "nep", "san"],
    "th": ["tha"],
    "ta": ["tam"],
    "te": ["tel"],
    "ka": ["kat"],
}

# Tesseract's language codes (tessdata 4.x/5.x). `osd` is left out on purpose:
# it detects orientation and script, it reads no text.
_LANGUAGE_CODES = """
afr amh ara asm aze aze_cyrl bel ben bod bos bre bul cat ceb ces chi_sim chi_sim_vert chi_tra chi_tra_vert chr
cos cym dan deu div dzo ell eng enm epo est eus fao fas fil fin fra frk frm fry gla gle glg grc guj hat heb hin
hrv hun hye iku ind isl ita ita_old jav jpn jpn_vert kan kat kat_old kaz khm kir kmr kor kor_vert lao lat lav lit
ltz mal mar mkd mlt mon mri msa mya nep nld nor oci ori pan pol por pus que ron rus san sin slk slv snd spa
spa_old sqi srp srp_latn sun swa swe syr tam tat tel tgk tha tir ton tur uig ukr urd uzb uzb_cyrl vie yid yor
"""
# Script models ("script/Latin") and the suffix of their Debian package (tesseract-ocr-script-latn).
_SCRIPT_PACKAGES = {
    "Arabic": "arab", "Armenian": "armn", "Bengali": "beng", "Canadian_Aboriginal": "cans", "Cherokee": "cher",
    "Cyrillic": "cyrl", "Devanagari": "deva", "Ethiopic": "ethi", "Fraktur": "frak", "Georgian": "geor",
    "Greek": "grek", "Gujarati": "gujr", "Gurmukhi": "guru", "HanS": "hans", "HanS_vert": "hans-vert",
    "HanT": "hant", "HanT_vert": "hant-vert", "Hangul": "hang", "Hangul_vert": "hang-vert", "Hebrew": "hebr",
    "Japanese": "jpan", "Japanese_vert": "jpan-vert", "Kannada": "knda", "Khmer": "khmr", "Lao": "laoo",
    "Latin": "latn", "Malayalam": "mlym", "Myanmar": "mymr", "Oriya": "orya", "Sinhala": "sinh", "Syriac": "syrc",
    "Tamil": "taml", "Telugu": "telu", "Thaana": "thaa", "Thai": "thai", "Tibetan": "tibt", "Vietnamese": "viet",
}  # fmt: skip
KNOWN_TESSERACT_LANGS = frozenset([*_LANGUAGE_CODES.split(), *(f"script/{name}" for name in _SCRIPT_PACKAGES)])
_MAX_LANGS = 8

# Latin-script packs the default may add to English, in order of preference.
_LATIN_SCRIPT = ["srp_latn", "hrv", "bos", "slv", "deu", "fra", "spa", "ita", "por", "nld", "pol", "ces", "tur"]
_DEFAULT_EXTRAS = 3

# The admin's "Language of scanned text": a label and the Tesseract languages it means.
SCANNED_TEXT_LANGUAGES: dict[str, tuple[str, list[str]]] = {
    "": ("English and other Latin-script text (default)", []),
    "mkd": ("Macedonian (Cyrillic)", ["mkd", "eng"]),
    "srp": ("Serbian, Cyrillic", ["srp", "eng"]),
    "srp_latn": ("Serbian, Latin", ["srp_latn", "eng"]),
    "heb": ("Hebrew", ["heb", "eng"]),
}


def apt_package(code: str) -> str:
    """The Debian package holding one language's data: srp_latn → tesseract-ocr-srp-latn."""
    if code.startswith("script/"):
        return "tesseract-ocr-script-" + _SCRIPT_PACKAGES.get(code.removeprefix("script/"), code.lower())
    return "tesseract-ocr-" + code.replace("_", "-")


class OcrFailed(RuntimeError):
    """Tesseract ran and failed; the reason goes to the server log, the document says only that."""


# --- options ---------------------------------------------------------------------------------------------------


def validate_options(options: dict[str, Any]) -> dict[str, Any]:
    """Clean `mineru_lang` and `tesseract_langs`, or raise InvalidIngestOptions saying what to send instead.

    An empty value clears the option (back to the default languages).
    """
    cleaned: dict[str, Any] = {}
    if "mineru_lang" in options:
        value = options["mineru_lang"]
        if value in (None, ""):
            cleaned["mineru_lang"] = ""
        elif not isinstance(value, str) or value.strip() not in MINERU_LANGS:
            raise InvalidIngestOptions(f"mineru_lang {value!r} is not one of: {', '.join(MINERU_LANGS)}")
        else:
            cleaned["mineru_lang"] = value.strip()
    if "tesseract_langs" in options:
        cleaned["tesseract_langs"] = _clean_tesseract_langs(options["tesseract_langs"], InvalidIngestOptions)
    return cleaned


def _clean_tesseract_langs(value: Any, invalid: type[Exception]) -> list[str]:
    if value in (None, ""):
        return []
    if isinstance(value, str):  # "mkd+eng", as Tesseract itself writes it
        value = value.split("+")
    if not isinstance(value, list) or not all(isinstance(code, str) for code in value):
        raise invalid('tesseract_langs must be a list of Tesseract language codes, e.g. ["mkd", "eng"]')
    langs = list(dict.fromkeys(code.strip() for code in value if code.strip()))
    if len(langs) > _MAX_LANGS:
        raise invalid(f"tesseract_langs takes at most {_MAX_LANGS} languages (each one slows OCR down)")
    unknown = [code for code in langs if code not in KNOWN_TESSERACT_LANGS]
    if unknown:
        raise invalid(
            f"unknown Tesseract language code(s): {', '.join(unknown)}; Tesseract names languages with three "
            "letters (eng, mkd, srp, srp_latn, heb, deu, ...) or a script (script/Latin)"
        )
    installed = installed_languages()
    missing = [code for code in langs if installed is not None and code not in installed]
    if missing:
        raise invalid(
            f"Tesseract language data not installed on this server: {', '.join(missing)}; "
            f"an administrator can add it with: sudo apt-get install -y {' '.join(map(apt_package, missing))}"
        )
    return langs


# --- which languages ---------------------------------------------------------------------------------------------


@dataclass
class OcrPlan:
    """The Tesseract languages one document is read with, and what its editor should know about them."""

    langs: list[str]
    warnings: list[str] = field(default_factory=list)

    @property
    def lang_arg(self) -> str:
        return "+".join(self.langs)


def tesseract_available() -> bool:
    return shutil.which(TESSERACT_CMD) is not None


def installed_languages() -> set[str] | None:
    """Tesseract's installed languages, or None when Tesseract itself is missing. Asked each time: packs come and go."""
    program = shutil.which(TESSERACT_CMD)
    if program is None:
        return None
    try:
        listing = subprocess.run([program, "--list-langs"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    # The first line names the data directory (a server path): only the codes after it are kept.
    lines = (listing.stdout or listing.stderr).splitlines()[1:]
    return {line.strip() for line in lines if line.strip() in KNOWN_TESSERACT_LANGS}


def ocr_plan(options: dict[str, Any]) -> OcrPlan:
    """Decide the languages; raise ParserUnavailable (naming the apt line) when Tesseract or a language is missing."""
    installed = installed_languages()
    if installed is None:
        raise ParserUnavailable(
            f"Tesseract OCR is not installed on this server, so scanned text cannot be read; "
            f"an administrator can add it with: {TESSERACT_APT_LINE}"
        )
    warnings: list[str] = []
    mineru_lang = options.get("mineru_lang") or ""
    if options.get("tesseract_langs"):
        langs = list(options["tesseract_langs"])
        missing = [code for code in langs if code not in installed]
        if missing:
            raise ParserUnavailable(
                f"Tesseract language data not installed on this server: {', '.join(missing)}; "
                f"an administrator can add it with: sudo apt-get install -y {' '.join(map(apt_package, missing))}"
            )
    elif mineru_lang:
        wanted = MINERU_TO_TESSERACT[mineru_lang]
        langs = [code for code in wanted if code in installed]
        if langs:
            langs += [code for code in ("eng",) if code in installed]
        else:
            langs = default_languages(installed)
            warnings.append(
                f"no Tesseract language data for MinerU's {mineru_lang} group is installed "
                f"(apt packages {' '.join(map(apt_package, wanted))}); read with the default languages"
            )
    else:
        langs = default_languages(installed)
    if not langs:
        raise ParserUnavailable(f"Tesseract has no English data on this server; add it with: {TESSERACT_APT_LINE}")
    if mineru_lang:
        warnings.insert(0, _mineru_unavailable(mineru_lang, langs))
    return OcrPlan(langs=list(dict.fromkeys(langs)), warnings=warnings)


def default_languages(installed: set[str]) -> list[str]:
    """English and other Latin-script text: eng plus script/Latin, else plus up to three Latin-script packs."""
    langs = ["eng"] if "eng" in installed else []
    if "script/Latin" in installed:
        return [*langs, "script/Latin"]
    return [*langs, *[code for code in _LATIN_SCRIPT if code in installed][:_DEFAULT_EXTRAS]]


def _mineru_unavailable(mineru_lang: str, langs: list[str]) -> str:
    from django.conf import settings

    if settings.KB_MINERU_URL:
        reason = "a MinerU service is configured, but this version of kbsite has no MinerU client"
    else:
        reason = "no MinerU service is configured (KB_MINERU_URL)"
    return (
        f"the primary OCR (MinerU, {mineru_lang}) was not available: {reason}; "
        f"the scanned text was read with Tesseract ({'+'.join(langs)}) instead"
    )


# --- reading -----------------------------------------------------------------------------------------------------


def parse_image(path: Path, ext: str, options: dict[str, Any], budgets: Budgets | None = None) -> ParseResult:
    """An image's text; a multi-frame TIFF's frames are pages, at most the OCR budget of them (budgets.py)."""
    from PIL import Image, ImageSequence, UnidentifiedImageError

    try:
        image = Image.open(path)
        image.load()
    except (UnidentifiedImageError, OSError) as exc:
        raise NothingReadable("no text could be read: the image is empty, truncated or damaged") from exc
    blocks: list[Block] = []
    with image:
        plan = ocr_plan(options)
        warnings = list(plan.warnings)
        # A multi-frame TIFF is a scanned document: one page per frame. Other formats' extra
        # frames (an animated GIF) are not pages: only the first is read.
        frames: Iterator[Any] = ImageSequence.Iterator(image) if ext in {".tif", ".tiff"} else iter([image])
        for page, frame in enumerate(frames, start=1):
            if budgets is not None and page > budgets.ocr_pages:
                last = getattr(image, "n_frames", page)
                warnings.append(ocr_pages_skipped(f"{page}-{last}" if last > page else str(page), budgets))
                break
            try:
                paragraphs = ocr_page(frame, plan)
            except subprocess.TimeoutExpired:
                warnings.append(f"page {page} could not be read within {PAGE_TIMEOUT_SECONDS} s and was skipped")
                continue
            blocks.extend(Block(text, "paragraph", page) for text in paragraphs)
    return ParseResult(blocks=blocks, warnings=warnings)


def ocr_page(image: Any, plan: OcrPlan, dpi: int | None = None) -> list[str]:
    """Read one page image (PIL) with Tesseract; its paragraphs, in reading order."""
    program = shutil.which(TESSERACT_CMD)
    if program is None:
        raise ParserUnavailable(f"Tesseract OCR is not installed on this server; add it with: {TESSERACT_APT_LINE}")
    if dpi is None and image.info.get("dpi"):
        # Kept (the PNG handed to Tesseract would lose it), unless it is nonsense: then Tesseract estimates.
        stated = round(float(image.info["dpi"][0]))
        dpi = stated if 70 <= stated <= 1200 else None
    png = io.BytesIO()
    _flatten(image).save(png, format="PNG", **({"dpi": (dpi, dpi)} if dpi else {}))
    command = [program, "stdin", "stdout", "-l", plan.lang_arg, "--psm", "3"]
    if dpi:
        command += ["--dpi", str(dpi)]
    done = subprocess.run(
        [*command, "tsv"], input=png.getvalue(), capture_output=True, timeout=PAGE_TIMEOUT_SECONDS, check=False
    )
    if done.returncode != 0:
        # Tesseract's own message names its data directory: it goes to the server log, never to the user.
        logger.warning("tesseract failed: %s", done.stderr.decode("utf-8", errors="replace")[-2000:])
        raise OcrFailed(f"Tesseract stopped with exit status {done.returncode}")
    return paragraphs_from_tsv(done.stdout.decode("utf-8", errors="replace"))


def paragraphs_from_tsv(tsv: str) -> list[str]:
    """Words grouped into lines and paragraphs by Tesseract's own block/paragraph/line numbers."""
    paragraphs: dict[tuple[int, int, int], dict[int, list[str]]] = {}
    for row in tsv.splitlines()[1:]:
        cells = row.split("\t")
        if len(cells) < 12 or cells[0] != "5" or not cells[11].strip():
            continue  # only word rows (level 5) carry text
        page, block, par, line = (int(cells[i]) for i in (1, 2, 3, 4))
        paragraphs.setdefault((page, block, par), {}).setdefault(line, []).append(cells[11].strip())
    texts = []
    for lines in paragraphs.values():
        text = ""
        for words in lines.values():
            joined = " ".join(words)
            # A word hyphenated across lines is joined again ("непо-" + "знат" → "непознат").
            if text.endswith("-") and len(text) > 1 and text[-2].isalpha() and joined[:1].islower():
                text = text[:-1] + joined
            else:
                text = f"{text} {joined}" if text else joined
        texts.append(text)
    return texts


def _flatten(image: Any) -> Any:
    """Grey on white: transparency over white (a transparent PNG would otherwise read as black)."""
    from PIL import Image

    if image.mode in {"RGBA", "LA", "P", "PA"}:
        rgba = image.convert("RGBA")
        background = Image.new("RGBA", rgba.size, "white")
        image = Image.alpha_composite(background, rgba)
    return image.convert("L")


# --- `make run` and CI ---------------------------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    """`python -m ingestion.ocr [--apt-packages]`: report on Tesseract (never fails).

    --apt-packages prints the apt packages that install Tesseract with kbsite's language data (.ci/run).
    """
    if "--apt-packages" in argv:
        print(" ".join(TESSERACT_APT_PACKAGES))
        return 0
    installed = installed_languages()
    if installed is None:
        print("Tesseract OCR is not installed: images and scanned PDFs will end in error until it is.")
        print(f"Add it with: {TESSERACT_APT_LINE}")
        return 0
    missing = [code for code in ("eng", "mkd", "srp", "srp_latn", "heb") if code not in installed]
    print(f"Tesseract OCR languages: {' '.join(sorted(installed))}")
    if missing:
        print(f"Language data missing: {' '.join(missing)}; add it with: {TESSERACT_APT_LINE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
