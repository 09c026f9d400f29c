"""How soon a records file over KB_MAX_ROWS is refused, and what it costs: counted from the file's event stream
(ingestion/record_count.py, issue 39) against loading it whole first (what ran before).

The files (written into a temporary directory): a JSON array of N small records (--records, default 1,000,000),
the same as YAML and as XML (records_path "issues.issue"). For each, in a forked child so that one's memory does
not count in the next: the seconds to refuse it with the default budget (100,000 rows), and the child's peak
resident memory; then the same for loading it whole (json.loads, yaml.CSafeLoader, defusedxml) before counting.

Run from the project root:  .venv/bin/python bench/record_budget.py [--records 1000000]

Measured 2026-12-07 on the shared 2-core VM (other test runs going), 1,000,000 records (peak MB: the child's
resident memory):
    format     MB | streamed: s  peak MB refused | loaded whole: s  peak MB
    json     66.8 |        1.09       18    True |            8.37      608
    yaml     57.8 |        6.08       18    True |          349.34     4543
    xml      56.8 |        1.64       25    True |            7.54      494
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ingestion.record_count import records_over

LIMIT = 100_000


def write_files(directory: Path, records: int) -> dict[str, tuple[Path, str]]:
    rows = [{"id": n, "title": f"Issue {n}", "owner": {"name": "Ada"}} for n in range(records)]
    json_path = directory / "issues.json"
    json_path.write_text(json.dumps(rows))
    yaml_path = directory / "issues.yaml"
    with yaml_path.open("w") as out:
        for row in rows:
            out.write(f"- id: {row['id']}\n  title: {row['title']}\n  owner:\n    name: Ada\n")
    xml_path = directory / "issues.xml"
    with xml_path.open("w") as out:
        out.write("<tracker><issues>")
        for row in rows:
            out.write(f"<issue><id>{row['id']}</id><title>{row['title']}</title></issue>")
        out.write("</issues></tracker>")
    return {".json": (json_path, ""), ".yaml": (yaml_path, ""), ".xml": (xml_path, "issues.issue")}


def load_whole(path: Path, ext: str) -> int:
    if ext == ".json":
        return len(json.loads(path.read_bytes()))
    if ext == ".yaml":
        import yaml

        return len(yaml.load(path.read_bytes(), Loader=yaml.CSafeLoader))
    from defusedxml import ElementTree

    return len(ElementTree.fromstring(path.read_bytes()).find("issues"))


def in_child(run) -> tuple[float, float, object]:  # type: ignore[no-untyped-def]
    """(seconds, peak resident MB of the child, what `run` returned), run in a forked child."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        started = time.perf_counter()
        value = run()
        seconds = time.perf_counter() - started
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        os.write(write, json.dumps([seconds, peak, value]).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as answer:
        seconds, peak, value = json.loads(answer.read())
    os.waitpid(pid, 0)
    return seconds, peak, value


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_000_000)
    args = parser.parse_args()
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    with tempfile.TemporaryDirectory() as directory:
        files = write_files(Path(directory), args.records)
        print(f"{args.records:,} records a file, limit {LIMIT:,}; the parent's resident memory {baseline:.0f} MB")
        streamed = f"{'streamed: s':>11} {'peak MB':>8} {'refused':>7}"
        print(f"{'format':6} {'MB':>6} | {streamed} | {'loaded whole: s':>15} {'peak MB':>8}")
        for ext, (path, records_path) in files.items():
            size = path.stat().st_size / 1e6
            s_stream, peak_stream, refused = in_child(lambda: records_over(path, ext, records_path, LIMIT))  # noqa: B023
            s_whole, peak_whole, _ = in_child(lambda: load_whole(path, ext))  # noqa: B023
            print(
                f"{ext[1:]:6} {size:6.1f} | {s_stream:11.2f} {peak_stream:8.0f} {refused!s:>7} | "
                f"{s_whole:15.2f} {peak_whole:8.0f}"
            )


if __name__ == "__main__":
    main()
