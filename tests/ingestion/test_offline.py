"""Ingestion and search work with no network at all (only the local database socket)."""

from __future__ import annotations

import socket

import pytest

from collections_app.models import Document
from tests.files.documents import HANDBOOK, docx_bytes, html_bytes


@pytest.fixture
def no_network(monkeypatch):
    real_connect = socket.socket.connect
    attempts: list[object] = []

    def guarded(sock, address):
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            attempts.append(address)
            raise OSError(f"network blocked by test: {address}")
        return real_connect(sock, address)  # unix socket of the embedded PostgreSQL

    monkeypatch.setattr(socket.socket, "connect", guarded)
    return attempts


@pytest.mark.parametrize(
    ("filename", "content"),
    [
        ("handbook.docx", docx_bytes(HANDBOOK)),
        ("handbook.html", html_bytes(HANDBOOK)),
        (
            "notes.md",
            b"# Notes\n\nThe staff meeting moves to Thursday afternoons from next month.\n",
        ),
        (
            "notes.txt",
            b"NOTES\n\nThe staff meeting moves to Thursday afternoons from next month onwards.\n",
        ),
    ],
)
def test_ingestion_and_search_work_with_the_network_blocked(cast, collection, upload, no_network, filename, content):
    response = upload(cast.editor, collection, filename, content)

    document = Document.objects.get(pk=response.json()["document_id"])
    assert document.status == "done", document.error
    assert cast.viewer.post("/api/search", {"query": "meeting day"}, format="json").status_code == 200
    assert no_network == []
