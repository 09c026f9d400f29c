"""django-q2 tasks: take primitive ids, call one service, safe to run twice."""

from collections_app.services.documents import document_ingest


def ingest_document(document_id: str) -> None:
    document_ingest(document_id=document_id)
