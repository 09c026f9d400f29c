"""The README's curl walk-through, run as written against a live server, twice in a row."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from accounts.issuing import api_key_create
from accounts.models import Role, Tenant
from collections_app.models import Chunk, Collection
from tests.margins import assert_clears, assert_leads, cosines

README = Path(__file__).resolve().parents[1] / "README.md"
PLACEHOLDER_KEY = "kb_paste_the_printed_key_here"
PLACEHOLDER_API = "http://127.0.0.1:8000/api"


def walkthrough_script() -> str:
    section = README.read_text().split("## Walk-through with curl", 1)[1]
    script = re.search(r"```sh\n(.*?)```", section, re.S)
    assert script is not None, "the README's walk-through has no sh block"
    return script.group(1)


@pytest.mark.django_db(transaction=True)
def test_the_readme_walkthrough_runs_twice_verbatim(live_server, tmp_path) -> None:
    script = walkthrough_script()
    # The only lines a reader edits: the key `make run` printed, and the address if not the default.
    assert PLACEHOLDER_KEY in script and PLACEHOLDER_API in script
    key = api_key_create(tenant=Tenant.objects.create(name="demo"), role=Role.EDITOR).secret
    script = script.replace(PLACEHOLDER_KEY, key).replace(PLACEHOLDER_API, f"{live_server.url}/api")

    answers = []
    for _ in range(2):
        run = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120
        )
        assert run.returncode == 0, run.stderr
        assert "Traceback" not in run.stderr
        answers.append(json.loads(run.stdout.strip().splitlines()[-1]))

    assert Collection.objects.filter(name="handbook").count() == 1
    bikes = Chunk.objects.get(text__contains="bikes")
    # The bicycle paragraph comes first: the question shares no keyword with either paragraph, and its cosine
    # leads the refund paragraph's; it is there at all because its score passes the floor.
    best, runner_up = cosines(Collection.objects.get(name="handbook"), "where do I secure my cycle?")[:2]
    assert "bikes" in best.text
    assert_leads(best.score, runner_up.score, what="the bicycle paragraph")
    for answer in answers:
        assert answer["results"][0]["chunk_id"] == str(bikes.pk)
        assert_clears(answer["results"][0]["score"], answer["floor"], what="the bicycle paragraph")
        assert answer["refused"] is None


def readme_block(heading: str, language: str, index: int = 0) -> str:
    section = README.read_text().split(heading, 1)[1].split("\n## ", 1)[0]
    return re.findall(rf"```{language}\n(.*?)```", section, re.S)[index]


@pytest.mark.django_db(transaction=True)
def test_the_readme_mcp_examples_are_valid_and_its_curl_searches_over_mcp(live_server, tmp_path) -> None:
    http_config, stdio_config = (json.loads(readme_block("## Agents over MCP", "json", i)) for i in (0, 1))
    assert http_config["mcpServers"]["kbsite"]["url"].endswith("/mcp")
    assert stdio_config["mcpServers"]["kbsite"]["args"][-1] == "mcp" and "KB_MCP_KEY" in str(stdio_config)

    key = api_key_create(tenant=Tenant.objects.create(name="demo"), role=Role.EDITOR).secret
    server = {
        PLACEHOLDER_KEY: key,
        PLACEHOLDER_API: f"{live_server.url}/api",
        "http://127.0.0.1:8000/mcp": f"{live_server.url}/mcp",
    }
    script = walkthrough_script() + readme_block("## Agents over MCP", "sh")
    for placeholder, value in server.items():
        assert placeholder in script
        script = script.replace(placeholder, value)
    run = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=180
    )

    assert run.returncode == 0, run.stderr
    tools, searched = (json.loads(line) for line in run.stdout.strip().splitlines()[-2:])
    assert {t["name"] for t in tools["result"]["tools"]} == {"search", "verify_citations", "collections"}
    answer = json.loads(searched["result"]["content"][0]["text"])
    assert "bikes" in answer["results"][0]["text"] and answer["results"][0]["badge"] in {"supported", "weak"}
