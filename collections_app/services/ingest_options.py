"""Per-document ingest options: validation, and changing them (which re-parses from the original).

Options by owner; each owner's module validates its own keys:
- OCR (ingestion/ocr.py): mineru_lang, tesseract_langs
- records (ingestion/records.py): table_mode, column_roles, records_path
- navigation hubs (ingestion/navigation_hubs.py): keep_navigation_readmes, an option of a whole import
  (a .zip upload, a folder source), not of one document: IMPORT_OPTIONS
Upload metadata (`metadata`) is stored as an ingest option but given as the upload's own `metadata` field: it is
checked against the collection's schema (services/metadata_schema.py), which an options check cannot see.
Reader labels are not an ingest option (they change who reads, not how the file is read): they live on the
document (`Document.labels`, services/labels.py) and change without re-parsing. `labels` here is refused, saying so.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import transaction
from django.utils import timezone

from collections_app.models import Document, DocumentStatus
from collections_app.services.documents import document_queue_ingest
from infra.errors import Conflict, InvalidIngestOptions
from infra.validation import json_problem
from ingestion import navigation_hubs, ocr, records

OptionsValidator = Callable[[dict[str, Any]], dict[str, Any]]

REPARSE_WARNING = (
    "changing these options re-parses the document from its stored original: manual chunk edits and "
    'per-block decisions on it will be lost. Send the same request with "confirm_reparse": true to go ahead.'
)


class ReparseNeedsConfirmation(Conflict):
    pass


class NoOriginalToReparse(Conflict):
    """The document came from a collection file: only its paragraphs were imported, there is no file to parse."""


def no_original_to_reparse(document: Document) -> str:
    return (
        f"{document.filename} was imported from a collection file and has no original to re-parse: only its "
        "paragraphs came with it. Upload the file itself to read it with other options."
    )


def ingest_options_validate(options: Any, *, scope: str = "document") -> dict[str, Any]:
    """Return the cleaned options or raise InvalidIngestOptions naming what is wrong.

    `scope` "document": options of one file; "import": options of a .zip upload or a folder source.
    """
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
    _check_scope(set(options), scope)
    cleaned: dict[str, Any] = {}
    for validate in {OPTION_OWNERS[key] for key in options}:
        cleaned.update(validate({key: value for key, value in options.items() if OPTION_OWNERS[key] is validate}))
    return cleaned


def _check_scope(keys: set[str], scope: str) -> None:
    if scope == "import" and keys - IMPORT_OPTIONS:
        raise InvalidIngestOptions(
            f"a .zip import or a folder source takes only {', '.join(sorted(IMPORT_OPTIONS))}; upload a file "
            f"on its own to set {', '.join(sorted(keys - IMPORT_OPTIONS))}"
        )
    if scope == "document" and keys & IMPORT_OPTIONS:
        raise InvalidIngestOptions(
            f"{', '.join(sorted(keys & IMPORT_OPTIONS))} applies to .zip imports and folder sources: "
            "a file uploaded on its own is always indexed"
        )


def labels_validate(options: dict[str, Any]) -> dict[str, Any]:
    raise InvalidIngestOptions(
        "labels are no longer an ingest option: send them as the upload's own `labels` field (a JSON list), "
        "or change them with PATCH .../documents/{id}/labels, which re-labels the paragraphs without re-parsing"
    )


def upload_metadata_refuse(options: dict[str, Any]) -> dict[str, Any]:
    raise InvalidIngestOptions(
        "metadata is not sent among ingest_options: send it as the upload's own `metadata` field (a JSON object), "
        "which is checked against the collection's metadata columns"
    )


# Each option → the function of the module that owns it, which cleans its options or says what to send.
OPTION_OWNERS: dict[str, OptionsValidator] = {
    "mineru_lang": ocr.validate_options,
    "tesseract_langs": ocr.validate_options,
    "table_mode": records.validate_options,
    "column_roles": records.validate_options,
    "records_path": records.validate_options,
    "labels": labels_validate,
    "metadata": upload_metadata_refuse,
    navigation_hubs.OPTION: navigation_hubs.validate_options,
}

# Options of a whole import (a .zip upload, a folder source): they decide which files become documents.
IMPORT_OPTIONS = frozenset({navigation_hubs.OPTION})


def document_options_update(*, document: Document, changes: dict[str, Any], confirm_reparse: bool) -> Document:
    """Change a document's ingest options; it is re-parsed from its stored original only once confirmed."""
    cleaned = ingest_options_validate(changes)
    if not document.has_original:
        raise NoOriginalToReparse(no_original_to_reparse(document))
    if not confirm_reparse:
        raise ReparseNeedsConfirmation(REPARSE_WARNING)
    with transaction.atomic():
        # Not its parser output: it is dropped unread (megabytes for a large document).
        document = Document.objects.select_for_update().defer("blocks").get(pk=document.pk)
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
