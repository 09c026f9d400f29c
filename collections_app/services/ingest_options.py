"""Per-document ingest options: validation, and changing them (which re-parses from the original).

Options by owner; each owner's module validates its own keys:
- OCR (ingestion/ocr.py): mineru_lang, tesseract_langs
- records (ingestion/records.py): table_mode, column_roles, records_path
- common: labels (reader labels given to every paragraph of the document)
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from django.db import transaction
from django.utils import timezone

from collections_app.exceptions import Conflict, Invalid
from collections_app.models import Chunk, Document, DocumentStatus
from collections_app.validation import json_problem

OPTION_OWNERS = {
    "mineru_lang": "collections_app.ingestion.ocr",
    "tesseract_langs": "collections_app.ingestion.ocr",
    "table_mode": "collections_app.ingestion.records",
    "column_roles": "collections_app.ingestion.records",
    "records_path": "collections_app.ingestion.records",
    "labels": __name__,
}

REPARSE_WARNING = (
    "changing these options re-parses the document from its stored original: manual chunk edits and "
    'per-block decisions on it will be lost. Send the same request with "confirm_reparse": true to go ahead.'
)


# Labels are stored on every paragraph, in a column this wide.
MAX_LABEL_CHARS = Chunk._meta.get_field("labels").base_field.max_length or 100


class InvalidIngestOptions(Invalid):
    field = "ingest_options"


class ReparseNeedsConfirmation(Conflict):
    pass


def ingest_options_validate(options: Any) -> dict[str, Any]:
    """Return the cleaned options or raise InvalidIngestOptions naming what is wrong."""
    if options in (None, ""):
        return {}
    if not isinstance(options, dict):
        raise InvalidIngestOptions("ingest_options must be a JSON object")
    found = json_problem(options)
    if found:
        raise InvalidIngestOptions(f"ingest_options.{found[0]} {found[1]}")
    unknown = sorted(set(options) - set(OPTION_OWNERS))
    if unknown:
        raise InvalidIngestOptions(
            f"unknown ingest option(s): {', '.join(unknown)}; known: {', '.join(sorted(OPTION_OWNERS))}"
        )
    cleaned: dict[str, Any] = {}
    for owner in sorted({OPTION_OWNERS[key] for key in options}):
        mine = {key: value for key, value in options.items() if OPTION_OWNERS[key] == owner}
        cleaned.update(import_module(owner).validate_options(mine))
    return cleaned


def validate_options(options: dict[str, Any]) -> dict[str, Any]:
    labels = options.get("labels", [])
    if not isinstance(labels, list) or not all(isinstance(x, str) and x.strip() for x in labels):
        raise InvalidIngestOptions("labels must be a list of label names")
    if any(len(x.strip()) > MAX_LABEL_CHARS for x in labels):
        raise InvalidIngestOptions(f"labels: a label has at most {MAX_LABEL_CHARS} characters")
    return {"labels": sorted({x.strip() for x in labels})}


def document_options_update(*, document: Document, changes: dict[str, Any], confirm_reparse: bool) -> Document:
    """Change a document's ingest options; it is re-parsed from its stored original only once confirmed."""
    cleaned = ingest_options_validate(changes)
    if not confirm_reparse:
        raise ReparseNeedsConfirmation(REPARSE_WARNING)
    from collections_app.services.documents import document_queue_ingest

    with transaction.atomic():
        document = Document.objects.select_for_update().get(pk=document.pk)
        current = document.ingest_options
        if "column_roles" in cleaned:
            # Roles are edited column by column: a change names only the columns whose role it changes.
            cleaned["column_roles"] = {**current.get("column_roles", {}), **cleaned["column_roles"]}
        document.ingest_options = {**current, **cleaned}
        # Dropping the parser output makes the next ingestion parse the original again;
        # the current paragraphs stay searchable until the new set replaces them.
        document.blocks = None
        document.status, document.progress, document.error = DocumentStatus.PARSING, 0, ""
        document.updated_at = timezone.now()
        document.save(update_fields=["ingest_options", "blocks", "status", "progress", "error", "updated_at"])
        document_queue_ingest(document=document)
    return document
