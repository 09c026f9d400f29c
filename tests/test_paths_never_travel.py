"""Contract 6: a server path never appears in an API answer, a build record, a warning or an error."""

from __future__ import annotations

import json

from django.conf import settings

from collections_app.models import Build, Document
from retrieval.models import SearchEvent
from tests.files.documents import HANDBOOK, html_bytes


def test_no_answer_or_record_contains_the_storage_root(cast, collection, upload):
    good = upload(cast.editor, collection, "handbook.html", html_bytes(HANDBOOK)).json()
    bad = upload(cast.editor, collection, "broken.pdf", b"%PDF-1.7\n garbage that is no PDF").json()
    base = f"/api/manage/collections/{collection.pk}"
    answers = [
        cast.viewer.get("/api/manage/collections").content,
        cast.viewer.get(base).content,
        cast.viewer.get(f"{base}/documents").content,
        cast.viewer.get(f"{base}/documents/{good['document_id']}").content,
        cast.viewer.get(f"{base}/documents/{bad['document_id']}").content,
        cast.viewer.get(f"{base}/builds").content,
        cast.viewer.post("/api/search", {"query": "refunds"}, format="json").content,
    ]
    records = [
        json.dumps(list(Build.objects.values("built_from", "refused", "warnings", "method")), default=str),
        json.dumps(list(Document.objects.values("error", "warnings", "source_uri", "metadata")), default=str),
        json.dumps(list(SearchEvent.objects.values("stages", "collections")), default=str),
    ]
    storage_root = str(settings.MEDIA_ROOT)
    for text in [a.decode() for a in answers] + records:
        assert storage_root not in text
        assert str(settings.BASE_DIR) not in text
        assert "/tmp/" not in text
    assert Document.objects.get(pk=bad["document_id"]).status == "error"
