"""Reader labels of documents in per-reader collections: checking them, changing them, counting what is unlabelled.

A document's labels live on the document (`Document.labels`) and are copied onto every paragraph it has, so
the visibility predicate (retrieval/selectors/search/_visibility.py) reads them from the row it matches. Changing them
rewrites that one column of the document's rows, in one transaction with the document: no parser, no model.
Every build publishes the document's labels as they stand at its commit, so a rechunk or a re-index keeps them.

An unlabelled paragraph of a per-reader collection is readable by every reader — the dangerous direction —
so builds count them (`unlabelled_paragraphs`) and record a warning, and the admin shows the count.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.db import transaction
from django.utils import timezone

from accounts.models import Role
from collections_app.models import Chunk, Collection, Document
from collections_app.services.reader_access import labels_widen, reader_access_check
from infra.errors import Conflict, Invalid
from infra.validation import name_problem

# The column each label is stored in (Document.labels, Chunk.labels and Reader.labels are all this wide).
MAX_LABEL_CHARS = Document._meta.get_field("labels").base_field.max_length or 100
# More labels than anybody manages by hand on one document; a bound so a request cannot grow every row at will.
MAX_LABELS = 50


class InvalidLabels(Invalid):
    field = "labels"


class LabelsDiffer(Conflict):
    """An upload of content already held names other labels than the document has."""

    field = "labels"


def labels_clean(labels: Any) -> list[str]:
    """The labels as stored: stripped, each once, sorted. Refused with a message naming the label at fault.

    The same rules as a reader's labels (accounts/readers.py), so any label a document carries can be held.
    """
    if not isinstance(labels, list) or not all(isinstance(label, str) for label in labels):
        raise InvalidLabels('labels must be a JSON list of label names, e.g. ["hr", "finance"]')
    for label in labels:
        problem = name_problem(label, max_chars=MAX_LABEL_CHARS)
        if problem:
            raise InvalidLabels(f"label {label[:40]!r} {problem}")
    cleaned = sorted({label.strip() for label in labels})
    if len(cleaned) > MAX_LABELS:
        raise InvalidLabels(f"a document carries at most {MAX_LABELS} labels ({len(cleaned)} given)")
    return cleaned


def collection_labels_check(*, collection: Collection, labels: list[str]) -> None:
    """Labels restrict paragraphs only in a per-reader collection: elsewhere they would promise a protection
    no search gives, so they are refused (clearing them, `[]`, is always allowed)."""
    if labels and not collection.per_reader:
        raise InvalidLabels(
            f"collection {collection.name!r} is not per-reader: every key that may search it reads every "
            "paragraph, so labels would restrict nothing. Set per_reader on the collection first."
        )


def document_labels_set(*, document: Document, labels: Any, role: Role | None = None) -> Document:
    """Give the document, its attachments (an email's), and at once every paragraph they have, in every
    generation, these reader labels.

    One transaction; nothing is parsed or embedded again. The document row is locked, as ingestion's
    publish locks it before reading the labels it writes, so a build finishing meanwhile either publishes
    the new labels or has its rows relabelled here — never the old labels after this returns.
    """
    cleaned = labels_clean(labels)
    collection_labels_check(collection=document.collection, labels=cleaned)
    # Widening who reads it is the tenant admins' decision (services/reader_access.py); `role` None: the server.
    reader_access_check(role=role, labels_widened=labels_widen(document.labels, cleaned))
    with transaction.atomic():
        # An email's attachments are read with the message: they follow its labels.
        family = _with_attachments(document)
        list(Document.objects.select_for_update().filter(pk__in=family).order_by("pk").values_list("pk", flat=True))
        Document.objects.filter(pk__in=family).update(labels=cleaned, updated_at=timezone.now())
        Chunk.objects.filter(document__in=family).exclude(labels=cleaned).update(labels=cleaned)
    document.refresh_from_db()
    return document


def _with_attachments(document: Document) -> list[uuid.UUID]:
    family: list[uuid.UUID] = [document.pk]
    level = [document.pk]
    while level:
        level = list(Document.objects.filter(parent__in=level).values_list("pk", flat=True))
        family += level
    return family


def document_labels_for_publish(document: Document) -> list[str]:
    """The labels a build writes onto the document's rows: read under a lock inside the build's transaction,
    so a relabel committed while the document was being embedded is not overwritten by the labels it started with.
    """
    return list(Document.objects.select_for_update().values_list("labels", flat=True).get(pk=document.pk))


def unlabelled_paragraphs(*, collection: Collection, document: Document | None = None) -> int:
    """Paragraphs searches of the collection (or of one of its documents) read today that carry no label:
    readable by every reader of a per-reader collection. The live count: a re-index's staged rows wait."""
    rows = Chunk.objects.filter(collection=collection).live().paragraphs().unlabelled()
    return (rows.filter(document=document) if document is not None else rows).count()


def unlabelled_warning(count: int) -> str:
    """A build's warning (and the admin's words) for paragraphs every reader may read."""
    if count == 1:
        return "1 paragraph readable by every reader (it carries no reader label)"
    return f"{count} paragraphs readable by every reader (they carry no reader label)"
