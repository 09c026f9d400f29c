"""Language labelling: accuracy and speed per language on the project's own multilingual fixture set.

    .venv/bin/python bench/language_labels.py            # every detector, each in a process of its own
    .venv/bin/python bench/language_labels.py --only kbsite

The fixture set is tests/data/languages.json: labour-law and leave-policy fragments (3-8 words) and full
sentences in en, de, sr (Latin and Cyrillic), hr, bs, mk, bg, he, ru. A label is right when it is the one
kbsite gives (sr, hr and bs are all `sh`). Each detector runs in a fresh process, so its load time and the
memory it adds (RSS after labelling everything, minus RSS before loading it) are its own.

Detectors compared:
- kbsite: ingestion.languages.label_language (script rules, then lingua restricted to the
  languages in play, high-accuracy models loaded on first use) — what ingestion uses;
- lingua-low: the same rules with lingua's low-accuracy mode (trigrams only);
- rules+py3langid: the same rules, then py3langid's ranking among the candidates;
- lingua, py3langid, langdetect: each alone, restricted to the fixture's languages where it can be.
No database is needed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "data" / "languages.json"
DETECTORS = ["kbsite", "lingua-low", "rules+py3langid", "lingua", "py3langid", "langdetect"]
IN_PLAY = ["en", "de", "sr", "hr", "bs", "mk", "bg", "he", "ru"]


def _expected(lang: str) -> str:
    from ingestion.languages import normalise

    return normalise(lang)


def _build(name: str) -> Callable[[str], str]:
    """Load one detector; returns text → label."""
    from ingestion import languages as kb

    if name == "kbsite":
        return kb.label_language
    if name == "lingua-low":
        from lingua import LanguageDetectorBuilder

        low: dict[tuple[str, ...], object] = {}

        def lingua_low(text: str) -> str:
            candidates = kb.script_candidates(text)
            if candidates is not None and len(candidates) == 1:
                return next(iter(candidates))
            labels = tuple(sorted(candidates or kb.LINGUA_LANGUAGES))
            if labels not in low:
                langs = [lang for label in labels for lang in kb.LINGUA_LANGUAGES.get(label, ())]
                low[labels] = LanguageDetectorBuilder.from_languages(*langs).with_low_accuracy_mode().build()
            found = low[labels].detect_language_of(text)  # type: ignore[attr-defined]
            return kb.normalise(found.iso_code_639_1.name) if found else ""

        return lingua_low
    if name in ("rules+py3langid", "py3langid"):
        from py3langid.langid import _load_identifier

        identifier = _load_identifier(norm_probs=True)
        identifier.set_languages([*IN_PLAY, *(code for code in kb.LINGUA_LANGUAGES if code != kb.SH)])
        if name == "py3langid":
            identifier.set_languages(IN_PLAY)
            return lambda text: kb.normalise(identifier.classify(text)[0])

        def rules_langid(text: str) -> str:
            candidates = kb.script_candidates(text)
            for code, _ in identifier.rank(text):
                if candidates is None or kb.normalise(code) in candidates:
                    return kb.normalise(code)
            return ""

        return rules_langid
    if name == "lingua":
        from lingua import Language, LanguageDetectorBuilder

        names = ["ENGLISH", "GERMAN", "SERBIAN", "CROATIAN", "BOSNIAN", "MACEDONIAN", "BULGARIAN", "HEBREW", "RUSSIAN"]
        detector = LanguageDetectorBuilder.from_languages(*(getattr(Language, n) for n in names)).build()

        def lingua_alone(text: str) -> str:
            found = detector.detect_language_of(text)
            return kb.normalise(found.iso_code_639_1.name) if found else ""

        return lingua_alone
    if name == "langdetect":
        from langdetect import DetectorFactory, LangDetectException, detect

        DetectorFactory.seed = 0

        def langdetect_alone(text: str) -> str:
            try:
                return kb.normalise(detect(text))
            except LangDetectException:
                return ""

        return langdetect_alone
    raise SystemExit(f"unknown detector {name!r}; choose from {', '.join(DETECTORS)}")


def measure(name: str) -> dict[str, object]:
    """Run in a process of its own: load, label every sample (twice: the second pass is the steady speed)."""
    import psutil

    sys.path.insert(0, str(ROOT))
    samples = json.loads(FIXTURES.read_text())["samples"]
    process = psutil.Process()
    rss_before = process.memory_info().rss
    started = time.perf_counter()
    label = _build(name)
    load_s = time.perf_counter() - started
    started = time.perf_counter()
    first = [label(s["text"]) for s in samples]  # models loaded lazily are loaded here
    first_pass_s = time.perf_counter() - started
    started = time.perf_counter()
    second = [label(s["text"]) for s in samples]
    per_text_ms = (time.perf_counter() - started) / len(samples) * 1000
    by_lang: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    by_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    wrong = []
    for sample, got in zip(samples, first, strict=True):
        right = got == _expected(sample["lang"])
        for table, key in ((by_lang, sample["lang"]), (by_kind, sample["kind"])):
            table[key][0] += right
            table[key][1] += 1
        if not right:
            wrong.append(f"{sample['lang']} → {got or '∅'}: {sample['text'][:60]}")
    return {
        "name": name,
        "accuracy": sum(r for r, _ in by_lang.values()) / len(samples),
        "by_lang": dict(by_lang),
        "by_kind": dict(by_kind),
        "deterministic": first == second,
        "load_s": load_s,
        "first_pass_s": first_pass_s,
        "per_text_ms": per_text_ms,
        "rss_mb": (process.memory_info().rss - rss_before) / 1e6,
        "wrong": wrong,
        "samples": len(samples),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=DETECTORS, help="one detector")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--wrong", action="store_true", help="list every sample labelled wrong")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child)))
        return
    print(f"fixtures: {FIXTURES.relative_to(ROOT)}; cpus {os.cpu_count()}, load average {os.getloadavg()[0]:.2f}")
    results = []
    for name in [args.only] if args.only else DETECTORS:
        out = subprocess.run([sys.executable, __file__, "--child", name], capture_output=True, text=True, cwd=ROOT)
        if out.returncode:
            raise SystemExit(f"{name} failed:\n{out.stderr[-2000:]}")
        results.append(json.loads(out.stdout.strip().splitlines()[-1]))
    langs = list(results[0]["by_lang"])
    print(f"\n{'detector':<16}" + "".join(f"{lang:>8}" for lang in langs) + f"{'frag':>7}{'sent':>7}{'all':>7}")
    for r in results:
        cells = "".join(f"{_share(r['by_lang'][lang]):>8}" for lang in langs)
        kinds = f"{_share(r['by_kind']['fragment']):>7}{_share(r['by_kind']['sentence']):>7}"
        print(f"{r['name']:<16}{cells}{kinds}{r['accuracy']:>7.3f}")
    print(f"\n{'detector':<16}{'load s':>8}{'1st pass s':>11}{'ms/text':>9}{'RSS MB':>8}  deterministic")
    for r in results:
        print(
            f"{r['name']:<16}{r['load_s']:>8.2f}{r['first_pass_s']:>11.2f}{r['per_text_ms']:>9.3f}"
            f"{r['rss_mb']:>8.0f}  {'yes' if r['deterministic'] else 'NO'}"
        )
    for r in results:
        if r["wrong"] and (args.wrong or r["name"] == "kbsite"):
            print(f"\n{r['name']}: {len(r['wrong'])} of {r['samples']} wrong")
            for line in r["wrong"]:
                print(f"  {line}")


def _share(pair: list[int]) -> str:
    right, total = pair
    return f"{right / total:.2f}" if total else "-"


if __name__ == "__main__":
    main()
