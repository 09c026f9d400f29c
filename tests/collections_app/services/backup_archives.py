"""Helpers for restore tests: an installation with something to lose, and hostile copies of its backup archive."""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.files.documents import html_bytes

BIKES = "Bicycles are locked in the yard rack behind building C; the key hangs at the front desk."
PARKING = "Staff cars are parked in the underground garage on level minus two, badge required."


def handbook_html(body: str) -> bytes:
    return html_bytes([(1, "Handbook", ""), (2, "Where things go", body)])


def search_texts(client: Any, query: str) -> list[str]:
    """What an agent reads for `query` through the public API: the answering paragraphs' text."""
    reply = client.post("/api/search", {"query": query}, format="json")
    assert reply.status_code == 200, reply.content
    return [result["text"] for result in reply.json()["results"]]


def rewritten(
    archive: Path,
    out: Path,
    *,
    manifest: Callable[[dict[str, Any]], Any] | None = None,
    content: Callable[[str, bytes], bytes] | None = None,
    extra: list[tuple[tarfile.TarInfo, bytes]] = (),  # type: ignore[assignment]
) -> Path:
    """A copy of `archive` with its manifest edited, members' bytes changed and members added (each as given)."""
    with tarfile.open(archive) as source, tarfile.open(out, "w") as target:
        for member in source.getmembers():
            handle = source.extractfile(member)
            data = handle.read() if handle is not None else b""
            if member.name == "manifest.json" and manifest is not None:
                data = json.dumps(manifest(json.loads(data))).encode()
            elif content is not None:
                data = content(member.name, data)
            member.size = len(data)
            target.addfile(member, io.BytesIO(data))
        for info, data in extra:
            info.size = len(data) if info.isfile() else 0
            target.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return out


def file_member(name: str) -> tarfile.TarInfo:
    return tarfile.TarInfo(name)


def with_original(manifest: dict[str, Any], name: str, data: bytes) -> dict[str, Any]:
    """The manifest, listing one more original with the right size and checksum (a careful forger)."""
    import hashlib

    manifest["files"][name] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    return manifest
