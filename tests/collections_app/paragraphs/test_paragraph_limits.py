"""What an editor's operation may make keeps the limits of what an import accepts, so whatever exports imports again
(issue 39, item 8)."""

from __future__ import annotations

from collections_app.models import Chunk, ParagraphEdit
from collections_app.services.documents import merged_text
from collections_app.validation import MAX_PARAGRAPH_CHARS

from .conftest import base, paragraph, paragraphs


def test_a_merge_past_the_import_limit_is_a_400_and_changes_nothing(cast, handbook) -> None:
    # Two neighbours each within the limit (an import accepts them), together past it.
    first, second = paragraph(handbook, "Refunds"), paragraph(handbook, "Parcels")
    half = MAX_PARAGRAPH_CHARS // 2 + 10
    Chunk.objects.filter(pk=first.pk).update(text=("Refunds are paid back. " * 5000)[:half])
    Chunk.objects.filter(pk=second.pk).update(text=("Parcels leave daily. " * 5000)[:half])
    before = [(p.pk, p.text) for p in paragraphs(handbook)]
    texts = dict(before)
    merged = len(merged_text(texts[first.pk], texts[second.pk], continues=second.continues))

    url = f"{base(handbook)}/paragraphs/{first.pk}/merge-next"
    answer = cast.editor.post(url, {"across_sections": True}, format="json")

    assert answer.status_code == 400, answer.status_code
    assert answer.json() == {
        "detail": f"the merged paragraph would hold {merged:,} characters: a paragraph holds at most "
        f"{MAX_PARAGRAPH_CHARS:,} (split one of the two first)"
    }
    assert [(p.pk, p.text) for p in paragraphs(handbook)] == before
    assert not ParagraphEdit.objects.filter(document=handbook).exists()
