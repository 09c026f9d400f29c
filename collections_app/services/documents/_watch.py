"""Whether an ingestion's document still exists, asked between its steps and batches.

Deleting a document (or its collection) removes its row; the worker reading it learns of it here, within a
second or two: while its parser runs in a child process (killed, ingestion/bounded.py), between the paragraphs
it labels, between its embedding batches, and when it locks the document to publish. It then stops without a
word: nothing published, its staging files closed (they are nameless and vanish), no `error`, no build record.
"""

from __future__ import annotations

import time

from collections_app.models import Document


class DocumentGone(Exception):
    """The document was deleted while it was read: its ingestion stops and leaves no trace."""


# How often an ingestion asks (one indexed look-up a second is nothing next to parsing or embedding).
ASK_EVERY = 1.0


class Watch:
    """Asks the database whether the document is still there, at most every ASK_EVERY seconds."""

    def __init__(self, document_id: str) -> None:
        self._document_id = document_id
        self._every = ASK_EVERY
        self._asked = time.monotonic()  # the task has just read the row
        self._gone = False

    def still_wanted(self, *, now: bool = False) -> bool:
        if not self._gone and (now or time.monotonic() - self._asked >= self._every):
            self._asked = time.monotonic()
            self._gone = not Document.objects.filter(pk=self._document_id).exists()
        return not self._gone

    def check(self) -> None:
        if not self.still_wanted():
            raise DocumentGone(f"document {self._document_id} was deleted while it was read")
