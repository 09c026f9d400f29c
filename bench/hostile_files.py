"""Hostile small files end within their budgets while another tenant's small upload is read in under a minute.

What runs: `manage.py serve` (what `make run` runs: gunicorn and the django-q2 cluster, two workers) on a var/ of
its own (a fresh embedded PostgreSQL, migrated first), on 127.0.0.1, with the default budgets (set KB_MAX_PAGES
and the others in the environment to try other values). Two tenants, each with an editor key and a collection.

The files (written once into --files, default /tmp/kbbench-hostile):
- atlas.pdf: 10,000 near-blank pages (a short line drawn on each, so each looks like a scan to OCR), ~3 MB;
- sheet.xlsx: 1,048,576 rows (Excel's most) of two short columns, ~14 MB;
- heading.md: one heading of 1,000,000 characters, then a few paragraphs, ~1.1 MB (--markdowns 2 uploads two
  such files, different, so that a second large document waits for the lane).

What is measured: the hostile tenant uploads them all at once; 5 s later the neighbour tenant uploads a small
Markdown note. For every document: seconds from its upload to `done` or `error`, its status, its error or
warnings; the neighbour's seconds to `done`; the peak resident memory of the cluster's processes (sampled every
0.25 s: the workers and the parsers' child processes), and the parser's own peak per document from the
cluster's log ("parsed in ... (parser peak memory N MB)").

Run from the project root:  .venv/bin/python bench/hostile_files.py [--markdowns 2] [--timeout 3600]
Exit status 1 if a file did not end within --timeout, or the neighbour's note took a minute or more.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import psutil
from search_load import Api, free_port, prepare_platform, wait_until_serving

ROOT = Path(__file__).resolve().parent.parent
WORDS = "the parcel refund warehouse customer returns within days goods unused box paid card".split()  # noqa: SIM905
NOTE = b"# Opening hours\n\nThe shop is open from nine to five on weekdays, and until noon on Saturdays.\n"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=Path, default=Path(tempfile.gettempdir()) / "kbbench-hostile")
    parser.add_argument("--markdowns", type=int, default=1, help="hostile Markdown files uploaded (default 1)")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds every document has to end (3600)")
    return parser.parse_args()


# --- the files ------------------------------------------------------------------------------------------------


def atlas_pdf(path: Path, pages: int = 10_000) -> None:
    from fpdf import FPDF

    pdf = FPDF(unit="pt", format="A4")
    pdf.set_compression(True)
    for _ in range(pages):
        pdf.add_page()
        pdf.line(72, 72, 80, 72)  # near-blank: no text, one short line (a scanner's speck)
    pdf.output(str(path))


def sheet_xlsx(path: Path, rows: int = 1_048_576) -> None:
    import xlsxwriter

    workbook = xlsxwriter.Workbook(str(path), {"constant_memory": True})
    sheet = workbook.add_worksheet("Readings")
    sheet.write_row(0, 0, ["id", "reading"])
    for row in range(1, rows):
        sheet.write_number(row, 0, row)
        sheet.write_number(row, 1, row % 977)
    workbook.close()


def heading_md(path: Path, seed: int, chars: int = 1_000_000) -> None:
    rng = random.Random(seed)
    heading = " ".join(rng.choice(WORDS) for _ in range(chars // 5 + 1))[:chars].strip()
    body = "\n\n".join(" ".join(rng.choice(WORDS) for _ in range(60)) for _ in range(200))
    path.write_text(f"# {heading}\n\n{body}\n")


def hostile_files(directory: Path, markdowns: int) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    files = [directory / "atlas.pdf", directory / "sheet.xlsx"] + [
        directory / f"heading-{n}.md" for n in range(1, markdowns + 1)
    ]
    for file in files:
        if file.exists():
            continue
        started = time.monotonic()
        draft = file.with_name(f".{file.name}")
        if file.suffix == ".pdf":
            atlas_pdf(draft)
        elif file.suffix == ".xlsx":
            sheet_xlsx(draft)
        else:
            heading_md(draft, seed=int(file.stem.rsplit("-", 1)[1]))
        draft.rename(file)
        print(f"wrote {file.name} in {time.monotonic() - started:.0f} s", flush=True)
    return files


# --- memory -------------------------------------------------------------------------------------------------------


class MemoryWatch(threading.Thread):
    """Peak resident memory of every process under the cluster, sampled every 0.25 s."""

    def __init__(self, supervisor: int) -> None:
        super().__init__(daemon=True)
        self.supervisor = supervisor
        self.peak: dict[int, tuple[int, str]] = {}  # pid -> (bytes, role)
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.wait(0.25):
            try:
                cluster = next(
                    p for p in psutil.Process(self.supervisor).children() if "run_cluster" in " ".join(p.cmdline())
                )
                processes = cluster.children(recursive=True)
            except (psutil.Error, StopIteration):
                continue
            for process in processes:
                try:
                    rss = process.memory_info().rss
                    role = "parser child" if process.parent().parent().pid != cluster.pid else "cluster process"
                except psutil.Error:
                    continue
                if rss > self.peak.get(process.pid, (0, ""))[0]:
                    self.peak[process.pid] = (rss, role)


# --- the run ------------------------------------------------------------------------------------------------------


def main() -> int:
    args = parse_args()
    files = hostile_files(args.files, args.markdowns)
    for file in files:
        print(f"{file.name}: {file.stat().st_size / 1e6:.1f} MB", flush=True)
    var_dir = Path(tempfile.mkdtemp(prefix="kbbench-hostile-"))
    port = free_port()
    env = prepare_platform(var_dir, port)
    python = str(ROOT / ".venv" / "bin" / "python")
    from django.conf import settings

    from accounts.issuing import api_key_create
    from accounts.keys import tenant_get_or_create
    from accounts.models import Role

    keys = {
        name: api_key_create(tenant=tenant_get_or_create(name=name), role=Role.EDITOR, name="bench editor").secret
        for name in ("hostile", "neighbour")
    }
    log = var_dir / "serve.log"
    with open(log, "ab") as out:
        platform = subprocess.Popen(
            [python, "manage.py", "serve"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    memory = MemoryWatch(platform.pid)
    try:
        wait_until_serving(port, platform, log)
        memory.start()
        apis = {name: Api(port, key) for name, key in keys.items()}
        collections = {}
        for name, api in apis.items():
            status, answer = api.json("POST", "/api/manage/collections", {"name": f"{name} documents"})
            assert status == 201, (status, answer)
            collections[name] = str(answer["id"])

        hostile, started = {}, {}
        for file in files:
            started[file.name] = time.monotonic()
            hostile[file.name] = apis["hostile"].upload(collections["hostile"], file.name, file.read_bytes())
        time.sleep(5)
        started["note.md"] = time.monotonic()
        note = apis["neighbour"].upload(collections["neighbour"], "note.md", NOTE)

        ended: dict[str, float] = {}
        answers: dict[str, dict] = {}
        watched = {**{name: ("hostile", d) for name, d in hostile.items()}, "note.md": ("neighbour", note)}
        deadline = time.monotonic() + args.timeout
        while len(ended) < len(watched) and time.monotonic() < deadline:
            for name, (tenant, document) in watched.items():
                if name in ended:
                    continue
                answer = apis[tenant].document(collections[tenant], document)
                if answer.get("status") in ("done", "error"):
                    ended[name], answers[name] = time.monotonic(), answer
            time.sleep(0.5)
        for name, (tenant, document) in watched.items():
            answers.setdefault(name, apis[tenant].document(collections[tenant], document))
    finally:
        memory.stopping.set()
        os.killpg(platform.pid, 15)
        platform.wait(timeout=120)

    parsed = re.findall(r"document (\S+) parsed in ([\d.]+) s \(parser peak memory (\d+) MB\)", log.read_text())
    by_document = {document: (seconds, peak) for document, seconds, peak in parsed}
    print(f"\ncores: {os.cpu_count()}; load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(
        f"budgets: pages {settings.KB_MAX_PAGES:,}, OCR pages {settings.KB_MAX_OCR_PAGES:,}, rows "
        f"{settings.KB_MAX_ROWS:,}, block {settings.KB_MAX_BLOCK_CHARS:,} chars, parser {settings.KB_PARSE_MEMORY_MB:,}"
        f" MB / {settings.KB_PARSE_SECONDS:,} s; large-document lanes {settings.KB_LARGE_DOCUMENT_LANES}"
    )
    for name, (_, document) in watched.items():
        answer = answers[name]
        took = f"{ended[name] - started[name]:.1f} s" if name in ended else f"not ended after {args.timeout:.0f} s"
        parse = by_document.get(document)
        parser = f"; parsed in {parse[0]} s, parser peak {parse[1]} MB" if parse else ""
        print(f"{name}: {answer.get('status')} after {took}{parser}")
        if answer.get("error"):
            print(f"    error: {answer['error']}")
        for warning in answer.get("warnings") or []:
            print(f"    warning: {warning[:200]}")
        if answer.get("status") == "done":
            print(f"    paragraphs: {answer.get('chunk_count')}")
    workers = sorted(memory.peak.values(), reverse=True)
    if workers:
        biggest = ", ".join(f"{rss / 2**20:.0f} MB ({role})" for rss, role in workers[:4])
        print(f"peak resident memory of the cluster's processes, largest first: {biggest}")
    neighbour_ok = "note.md" in ended and ended["note.md"] - started["note.md"] < 60
    return 0 if len(ended) == len(watched) and neighbour_ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
