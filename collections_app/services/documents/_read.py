"""Reading a document: its stored parser output, the parser (and its attachments), or, for a large text file,
the decision to read it as a stream (_chunk.py)."""

from __future__ import annotations

from io import BytesIO
from pathlib import Path

from django.conf import settings

from collections_app.ingestion import UnsupportedFile, extension_of, parse_document
from collections_app.ingestion.blocks import Attachment, Block
from collections_app.ingestion.formats import family_of
from collections_app.models import Document
from collections_app.services.documents._upload import FileTooLarge, document_create
from collections_app.services.labels import LabelsDiffer
from collections_app.services.metadata_schema import document_records_declare

# Text files above KB_STREAM_TEXT_ABOVE bytes are read and chunked as a stream instead of through unstructured
# (which holds the whole file and its elements in memory). Below it, unstructured's title detection is worth its cost.
_STREAMED_EXTENSIONS = (".txt", ".md")


def document_streams(document: Document) -> bool:
    """Whether this document is read as a stream (large .txt/.md), with bounded memory."""
    return extension_of(document.filename) in _STREAMED_EXTENSIONS and document.size > settings.KB_STREAM_TEXT_ABOVE


def document_blocks(document: Document) -> list[Block]:
    # Parser output is kept so that re-chunking never re-parses.
    if document.blocks is not None:
        return [Block.from_json(b) for b in document.blocks]
    result = parse_document(Path(document.file.path), document.filename, document.ingest_options)
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
