"""A search that runs while paragraphs are edited sees the document before an edit or after it, never a mix:
each edit is one transaction, and a search reads one snapshot (neighbours' ordinals included)."""

from __future__ import annotations

import threading

from django.db import connection

from accounts.issuing import api_key_create
from collections_app.models import ParagraphEdit
from tests.collections_app.paragraphs.conftest import HANDBOOK, base, paragraph, uploaded
from tests.files.documents import docx_bytes

QUESTION = "parcels warehouse refunds salaries"


def whole_document(client) -> str:
    """The stitched results (around 1, every paragraph a hit with the floor off): the document as it reads, with
    how many paragraphs each result stitched and matched (a split's halves read as one, rejoined with a space)."""
    answer = client.post("/api/search", {"query": QUESTION, "around": 1, "top_n": 8}, format="json")
    assert answer.status_code == 200, answer.content
    return "\n---\n".join(
        f"{r['text']} ({r['passages']} paragraphs, {len(r['matches'])} matched)" for r in answer.json()["results"]
    )


def one_cycle(cast, document) -> None:
    """Edit, split (ordinals move), revert the split (they move back), revert the edit: back where it started."""
    shipping = paragraph(document, "Parcels leave")
    url = f"{base(document)}/paragraphs"
    assert (
        cast.editor.patch(f"{url}/{shipping.pk}", {"text": "Parcels leave at noon."}, format="json").status_code == 200
    )
    refunds = paragraph(document, "Refunds are paid")
    at = refunds.text.index("to the card")
    assert cast.editor.post(f"{url}/{refunds.pk}/split", {"at": at}, format="json").status_code == 200
    for edit in ParagraphEdit.objects.filter(document=document, status="applied").order_by("-created_at")[:2]:
        assert cast.editor.post(f"{base(document)}/paragraph-edits/{edit.pk}/revert").status_code == 200


def test_a_search_in_a_loop_during_edits_sees_old_or_new_never_a_mix(
    transactional_db, cast, searchable, upload, settings
):
    settings.KB_THROTTLE_SEARCH = "100000/minute"
    document = uploaded(cast, searchable, upload, "handbook.docx", docx_bytes(HANDBOOK))
    # Every state the cycle passes through, read while nothing else runs.
    states = {whole_document(cast.viewer)}
    shipping = paragraph(document, "Parcels leave")
    cast.editor.patch(f"{base(document)}/paragraphs/{shipping.pk}", {"text": "Parcels leave at noon."}, format="json")
    states.add(whole_document(cast.viewer))
    refunds = paragraph(document, "Refunds are paid")
    split = {"at": refunds.text.index("to the card")}
    cast.editor.post(f"{base(document)}/paragraphs/{refunds.pk}/split", split, format="json")
    states.add(whole_document(cast.viewer))
    for edit in ParagraphEdit.objects.filter(document=document, status="applied").order_by("-created_at")[:2]:
        cast.editor.post(f"{base(document)}/paragraph-edits/{edit.pk}/revert")
        states.add(whole_document(cast.viewer))
    assert len(states) == 3  # original, edited, edited and split (the reverts come back to the first two)

    seen: list[str] = []
    done = threading.Event()
    secret = api_key_create(tenant=cast.tenant, role="viewer").secret  # a key of its own: its own rate

    def search_in_a_loop() -> None:
        client = cast.client_for(secret)
        try:
            while not done.is_set():
                seen.append(whole_document(client))
        finally:
            connection.close()  # each thread has its own connection

    searcher = threading.Thread(target=search_in_a_loop)
    searcher.start()
    try:
        for _ in range(4):
            one_cycle(cast, document)
    finally:
        done.set()
        searcher.join(timeout=60)

    assert len(seen) >= 10
    mixed = [text for text in seen if text not in states]
    assert mixed == []
    assert len(set(seen)) >= 2  # the searches did overlap the edits
