"""Which golden questions refer to a document: what deleting it would take from their answers (issue 41, finding 6).

A question refers to a document when it names it (`documents`), names one of its paragraphs (`paragraphs`), or has a
marker found in its paragraphs' text (markers are compared as the judging compares them: case and runs of
whitespace ignored). collections_app asks through its hooks (registered in RetrievalConfig.ready): it never imports
retrieval.
"""

from __future__ import annotations

from collections import defaultdict

from django.db.models import Q

from collections_app.models import Chunk, ChunkKind, Collection
from retrieval.models import GoldenQuestion

from ._judging import normalized


def golden_questions_referring(collection: Collection, document_ids: list[str]) -> dict[str, list[dict[str, str]]]:
    """Per document id, the golden questions of `collection` whose answer it holds: [{"id", "question"}]."""
    paragraphs: dict[str, str] = {}
    texts: dict[str, list[str]] = defaultdict(list)
    rows = Chunk.objects.filter(collection=collection, document_id__in=document_ids, kind=ChunkKind.PARAGRAPH)
    for pk, document_id, text in rows.values_list("pk", "document_id", "text").iterator():
        paragraphs[str(pk)] = str(document_id)
        texts[str(document_id)].append(text)
    joined = {document: normalized("\n".join(parts)) for document, parts in texts.items()}
    wanted = {str(d) for d in document_ids}

    found: dict[str, list[dict[str, str]]] = defaultdict(list)
    candidates = GoldenQuestion.objects.filter(collection=collection, control=False).filter(
        Q(documents__overlap=list(wanted)) | Q(paragraphs__overlap=list(paragraphs)) | ~Q(markers=[])
    )
    for golden in candidates.order_by("created_at", "id").only("pk", "question", "documents", "paragraphs", "markers"):
        named = {str(d) for d in golden.documents} & wanted
        named |= {paragraphs[str(p)] for p in golden.paragraphs if str(p) in paragraphs}
        markers = [normalized(m) for m in golden.markers if normalized(m)]
        named |= {d for d, text in joined.items() if any(m in text for m in markers)}
        for document in sorted(named):
            found[document].append({"id": str(golden.pk), "question": golden.question})
    return dict(found)
