"""Versions: a changed file uploaded under a document's name (or source) becomes the document's next version.

The document keeps its id. Its row takes the new file at once (hash, name, size, stored original) and goes
through the same ingestion as any upload, while the paragraphs of the version before keep answering: a publish
replaces a document's paragraphs in one transaction (_publish.py), and that transaction also marks the new
version `current` and the one before `retired` (`document_version_publish`). A version that cannot be read ends
in `error` with its reason, and the version before goes on answering (`document_version_fail`). A folder sync
makes versions the same way (services/folder_sources/_sync.py).

Every version's original is kept (`DocumentVersion.file` names the file the document held when that version was
uploaded) until the document is deleted, when all of them go after the commit (_delete.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from django.utils import timezone

from collections_app.models import Document, DocumentVersion, VersionStatus
from infra.errors import Conflict


class VersionConflict(Conflict):
    """A new version cannot be made now (one is being read), or which document it is of is ambiguous."""


def document_version_first(*, document: Document) -> DocumentVersion:
    """Version 1 of a document just uploaded: being read."""
    return _version_record(document, number=1)


def document_version_next(*, document: Document) -> DocumentVersion:
    """The next version of a locked document whose row has just taken the new file: being read."""
    latest = DocumentVersion.objects.filter(document=document).order_by("-number").values_list("number", flat=True)
    return _version_record(document, number=(latest.first() or 0) + 1)


def _version_record(document: Document, *, number: int) -> DocumentVersion:
    return DocumentVersion.objects.create(
        tenant_id=document.tenant_id,
        document=document,
        number=number,
        filename=document.filename,
        content_hash=document.content_hash,
        size=document.size,
        file=document.file.name,
        uploaded_by=document.uploaded_by,
    )


def document_version_of(*, collection_id: uuid.UUID, filename: str, source_uri: str) -> Document | None:
    """The document an upload is a new version of, locked: the top-level document with its source (when one is
    given), else with its name (a folder source's documents are the sync's, never matched by name). None: a new
    document. Refused (VersionConflict) when it is being read, or when two documents answer to it (uploaded
    before versions existed): which one is meant is the editor's call."""
    found = _same_source(collection_id, filename, source_uri)
    if not found:
        return None
    document = Document.objects.select_for_update().defer("blocks").get(pk=found[0])
    document_version_check(document=document)
    return document


def document_version_problem(*, collection_id: uuid.UUID, filename: str, source_uri: str) -> str | None:
    """Why an upload cannot be a new version now (a form says it beside the file), or None. Reads, locks nothing."""
    try:
        found = _same_source(collection_id, filename, source_uri)
        if found:
            document_version_check(document=Document.objects.defer("blocks").get(pk=found[0]))
    except VersionConflict as exc:
        return str(exc)
    return None


def _same_source(collection_id: uuid.UUID, filename: str, source_uri: str) -> list[uuid.UUID]:
    documents = Document.objects.filter(collection_id=collection_id, parent=None)
    if source_uri:
        same = documents.filter(source_uri=source_uri)
    else:
        same = documents.filter(filename=filename).exclude(source_uri__startswith="folder://")
    found = list(same.order_by("-created_at").values_list("pk", flat=True)[:5])
    if len(found) > 1:
        ids = ", ".join(str(pk) for pk in found)
        raise VersionConflict(
            f"{len(found)} documents of this collection are {filename} ({ids}): delete the one(s) you no longer "
            'want (DELETE .../documents/{id}), or send "replace": false to keep this file as a document of its own'
        )
    return found


def document_version_check(*, document: Document) -> None:
    """A new version waits until the one being read is done (or failed): one version is read at a time."""
    if document.status in ("parsing", "queued"):
        raise VersionConflict(
            f"{document.filename} (document {document.pk}) is being read ({document.status}); upload the new "
            'version once it is done or has failed, or send "replace": false to keep it as a document of its own'
        )


def document_version_publish(*, document: Document) -> int:
    """In the publish's transaction: the version just built answers from now on, the one before is retired.

    The version is found by the content the ingestion read (`document.content_hash` as the task loaded it), so
    a re-ingest or a rechunk of the version answering changes nothing here. Returns its number (0: a document
    held before versions were recorded)."""
    version = (
        DocumentVersion.objects.filter(document=document, content_hash=document.content_hash)
        .order_by("-number")
        .first()
    )
    if version is None:
        return document.version
    if version.status != VersionStatus.CURRENT:
        now = timezone.now()
        DocumentVersion.objects.filter(document=document, status=VersionStatus.CURRENT).update(
            status=VersionStatus.RETIRED, retired_at=now
        )
        DocumentVersion.objects.filter(pk=version.pk).update(
            status=VersionStatus.CURRENT, published_at=now, retired_at=None, error=""
        )
    Document.objects.filter(pk=document.pk).update(version=version.number)
    document.version = version.number
    return version.number


def document_version_fail(*, document: Document, reason: str) -> str:
    """The version being read could not be: it says why; returns the document's error, which says which version
    goes on answering when one does."""
    version = (
        DocumentVersion.objects.filter(document=document, content_hash=document.content_hash)
        .exclude(status=VersionStatus.CURRENT)
        .order_by("-number")
        .first()
    )
    if version is None:
        return reason  # the version answering was read again and failed: its paragraphs stay, as before
    DocumentVersion.objects.filter(pk=version.pk).update(status=VersionStatus.ERROR, error=reason)
    answering = Document.objects.filter(pk=document.pk).values_list("version", flat=True).first()
    if answering:
        return f"version {version.number}: {reason} (version {answering} still answers)"
    return reason


def stored_files_of(
    documents: Iterable[Document] | None = None, *, collection_id: uuid.UUID | None = None
) -> list[str]:
    """The stored originals of documents (every version's) or of a whole collection, each name once."""
    if collection_id is not None:
        rows = Document.objects.filter(collection_id=collection_id)
        versions = DocumentVersion.objects.filter(document__collection_id=collection_id)
    else:
        ids = [d.pk for d in documents or ()]
        rows = Document.objects.filter(pk__in=ids)
        versions = DocumentVersion.objects.filter(document_id__in=ids)
    names = [*rows.values_list("file", flat=True), *versions.values_list("file", flat=True)]
    return sorted({name for name in names if name})
