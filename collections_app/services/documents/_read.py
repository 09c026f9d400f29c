"""Reading a document: its stored parser output, its extent and the parser (and its attachments), within the
document budgets; or, for a large text file, the decision to read it as a stream (_chunk.py).

The extent (pages, rows) and the parse each run in a child process bounded by KB_PARSE_MEMORY_MB and
KB_PARSE_SECONDS (ingestion/bounded.py), killed within a second or two when the document is deleted (_watch.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from io import BytesIO
from pathlib import Path
from typing import TypeVar

from django.conf import settings

from collections_app.models import Document
from collections_app.services.documents._upload import FileTooLarge, document_create
from collections_app.services.documents._watch import DocumentGone, Watch
from collections_app.services.labels import LabelsDiffer
from collections_app.services.metadata_schema import document_records_declare
from ingestion import (
    Budgets,
    Extent,
    NoLongerWanted,
    OutOfMemory,
    OutOfTime,
    UnsupportedFile,
    check_extent,
    document_extent_bounded,
    extension_of,
    memory_over,
    parse_document_bounded,
    seconds_over,
)
from ingestion.blocks import Attachment, Block
from ingestion.formats import family_of

logger = logging.getLogger(__name__)
_T = TypeVar("_T")

# Text files above KB_STREAM_TEXT_ABOVE bytes are read and chunked as a stream instead of through unstructured
# (which holds the whole file and its elements in memory). Below it, unstructured's title detection is worth its cost.
_STREAMED_EXTENSIONS = (".txt", ".md")


def document_streams(document: Document) -> bool:
    """Whether this document is read as a stream (large .txt/.md), with bounded memory."""
    return extension_of(document.filename) in _STREAMED_EXTENSIONS and document.size > settings.KB_STREAM_TEXT_ABOVE


def document_budgets() -> Budgets:
    """What one document may cost a worker, as the settings say (ingestion/budgets.py)."""
    return Budgets(
        pages=settings.KB_MAX_PAGES,
        ocr_pages=settings.KB_MAX_OCR_PAGES,
        rows=settings.KB_MAX_ROWS,
        block_chars=settings.KB_MAX_BLOCK_CHARS,
        memory_mb=settings.KB_PARSE_MEMORY_MB,
        seconds=settings.KB_PARSE_SECONDS,
    )


class OriginalMissing(Exception):
    """The document's original is not in the storage folder this worker sees (KB_STORAGE_DIR)."""


def document_original_check(document: Document) -> None:
    """Refuse, naming the setting, when the original is not where this worker looks for it.

    On one machine that never happens; with workers on other machines it does whenever KB_STORAGE_DIR is not one
    shared filesystem mounted at the same place on each (docs/SCALING.md). The message says that, never the path.
    """
    if not document.file.name or not document.file.storage.exists(document.file.name):
        raise OriginalMissing(
            f"the original of {document.filename} is not in the storage folder this worker reads (KB_STORAGE_DIR); "
            "with workers on more than one machine it must be a shared filesystem, mounted at the same place on "
            "each; upload the file again once it is"
        )


def document_stored_blocks(document: Document) -> list[Block] | None:
    # Parser output is kept so that re-chunking never re-parses.
    if document.blocks is None:
        return None
    return [Block.from_json(b) for b in document.blocks]


def document_extent(document: Document, watch: Watch) -> Extent:
    """The document's pages and rows as its file states them; refused (OverBudget) when over the budgets."""
    budgets = document_budgets()
    extent = _bounded(
        budgets,
        lambda: document_extent_bounded(
            Path(document.file.path), document.filename, budgets,
            keep_going=watch.still_wanted, directory=settings.KB_STAGING_DIR or None,
        ),
    )  # fmt: skip
    check_extent(extent, budgets)
    return extent


def document_parse(document: Document, watch: Watch) -> list[Block]:
    """Parse the document in a bounded child process; store its blocks, warnings, metadata and attachments."""
    budgets = document_budgets()
    outcome = _bounded(
        budgets,
        lambda: parse_document_bounded(
            Path(document.file.path), document.filename, document.ingest_options, budgets,
            keep_going=watch.still_wanted, directory=settings.KB_STAGING_DIR or None,
        ),
    )  # fmt: skip
    logger.info(
        "document %s parsed in %.1f s (parser peak memory %d MB)", document.pk, outcome.seconds, outcome.peak_mb
    )
    watch.check()
    result = outcome.value
    if result.columns is not None:
        # Records (spreadsheets, JSON/YAML arrays): declare the metadata columns in the collection's schema,
        # drop values that do not fit it (warned by row and column), and store the column roles on the
        # document so they can be edited. See services/metadata_schema.py.
        result.warnings += document_records_declare(document=document, result=result)
    warnings = [*result.warnings, *document_attachments_create(parent=document, attachments=result.attachments)]
    document.warnings, document.metadata = warnings, result.metadata
    Document.objects.filter(pk=document.pk).update(
        blocks=[b.to_json() for b in result.blocks], warnings=warnings, metadata=result.metadata, progress=10
    )
    return result.blocks


def _bounded(budgets: Budgets, run: Callable[[], _T]) -> _T:
    """The child process's ends, as the ingestion says them: a budget's message, or the document gone."""
    try:
        return run()
    except OutOfTime:
        raise seconds_over(budgets) from None
    except OutOfMemory:
        raise memory_over(budgets) from None
    except NoLongerWanted:
        raise DocumentGone("the document was deleted while it was parsed") from None


def document_attachments_create(*, parent: Document, attachments: list[Attachment]) -> list[str]:
    """Each attachment becomes a document of its own, linked to its message. Returns warnings for the parent."""
    warnings = []
    for attachment in attachments:
        if family_of(attachment.filename) == "archive":
            warnings.append(f"attachment {attachment.filename} skipped: a zip attached to a message is not unpacked")
            continue
        try:
            document_create(
                collection=parent.collection,
                filename=attachment.filename,
                content=BytesIO(attachment.content),
                source_uri=f"{parent.source_uri}#attachment={attachment.filename}",
                uploaded_by=parent.uploaded_by,
                parent=parent,
                # Whoever may not read the message may not read what came with it.
                labels=list(parent.labels) or None,
            )
        except (UnsupportedFile, FileTooLarge) as exc:
            warnings.append(f"attachment {attachment.filename} skipped: {exc}")
        except LabelsDiffer:
            warnings.append(
                f"attachment {attachment.filename} is already held with other reader labels; "
                "they were left as they are (change them on that document)"
            )
    return warnings
