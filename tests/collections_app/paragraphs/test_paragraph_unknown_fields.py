"""A paragraph edit with a field the API does not take is a 400 naming it, and nothing changes (attack on
issue 39, finding 8/9): a typo such as `hiden` must not be an edit that silently did less than asked."""

from __future__ import annotations

import pytest

from collections_app.models import ParagraphEdit
from tests.collections_app.paragraphs.conftest import base, paragraph

BODIES = [
    ("patch", "", {"text": "Refunds: 5 days.", "hiden": True}, "hiden"),
    ("post", "/split", {"at": 3, "x": 2}, "x"),
    ("post", "/merge-next", {"unknown": 1}, "unknown"),
]


@pytest.mark.parametrize(("method", "tail", "body", "unknown"), BODIES)
def test_an_unknown_field_in_a_paragraph_edit_is_a_400_naming_it(cast, handbook, method, tail, body, unknown):
    refunds = paragraph(handbook, "Refunds are paid")
    url = f"{base(handbook)}/paragraphs/{refunds.pk}{tail}"

    answer = getattr(cast.editor, method)(url, body, format="json")

    assert answer.status_code == 400, answer.content
    assert unknown in answer.json() and "accepted fields" in str(answer.json()[unknown])
    assert not ParagraphEdit.objects.exists()


@pytest.mark.parametrize(
    ("tail", "body"), [("/labels", {"labels": ["hr"], "x": 1}), ("/language", {"language": "de", "x": 1})]
)
def test_an_unknown_field_in_a_document_labels_or_language_change_is_a_400(cast, handbook, tail, body):
    answer = cast.editor.patch(f"{base(handbook)}{tail}", body, format="json")

    assert answer.status_code == 400, answer.content
    assert "x" in answer.json() and "accepted fields" in str(answer.json()["x"])
    handbook.refresh_from_db()
    assert handbook.labels == [] and handbook.language != "de"
