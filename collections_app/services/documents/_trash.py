"""The trash (issue 41): a deleted document goes to its collection's trash, restorable whole for KB_TRASH_DAYS.

Trashing writes three columns of the document (and of its attachments) and nothing else: its paragraphs, their
keyword postings, its paragraph edits, labels, versions and stored originals all stay, so a restore is one UPDATE
and the document answers again at its commit exactly as it did (its edits included). What makes it invisible is
the predicate every read applies: `Document.objects` (LiveDocumentManager) leaves it out of every list, count and
form; `ChunkQuerySet.live()` and the search stages' VISIBLE_SQL leave its paragraphs out of search, windows, the
corpus map, exports and evaluations.

Purging is the real deletion (_delete.py: document_delete): on an editor's word (one document, or "Empty trash"),
and for every document trashed more than KB_TRASH_DAYS ago by the cluster's recovery round (hourly) and by
`storage_cleanup`.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from collections_app.hooks import document_references
from collections_app.models import Document
from collections_app.services.documents._delete import document_delete
from infra.errors import Conflict, DomainError

# Who trashed a document that vanished from its folder source (no person, no key).
FOLDER_SYNC = "folder sync"


class NotInTrash(DomainError):
    meaning = "not_found"


class RestoreConflict(Conflict):
    """The same file was uploaded again while the document was in the trash: two documents of one content."""


@dataclass(frozen=True)
class Trashed:
    """What a deletion did: the document is in the trash until `restore_until` (None: kept until emptied), and the
    golden questions that refer to it (or its attachments) as [{"id", "question"}]."""

    document: Document
    restore_until: dt.datetime | None
    golden_questions: list[dict[str, str]] = field(default_factory=list)


def trash_days() -> int:
    return int(settings.KB_TRASH_DAYS)


def restore_until(trashed_at: dt.datetime | None) -> dt.datetime | None:
    """Until when a document trashed at `trashed_at` may be restored (None: not trashed, or kept until emptied)."""
    days = trash_days()
    return trashed_at + dt.timedelta(days=days) if trashed_at is not None and days > 0 else None


def document_golden_references(*, documents: list[Document]) -> dict[str, list[dict[str, str]]]:
    """Per document id, the golden questions referring to it or to one of its attachments (deduplicated)."""
    found: dict[str, list[dict[str, str]]] = {}
    for document in documents:
        family = [str(document.pk), *(str(a.pk) for a in _family_of(document)[1:])]
        if not document.collection_id:
            continue
        references = document_references(document.collection, family)
        seen: dict[str, dict[str, str]] = {}
        for member in family:
            for golden in references.get(member, []):
                seen.setdefault(golden["id"], golden)
        if seen:
            found[str(document.pk)] = list(seen.values())
    return found


def document_trash(*, document: Document, by: str, user: Any = None) -> Trashed:
    """Move a document (and its attachments) to its collection's trash: gone from every read at the commit.

    `by` says who in words (a username, "key <name>", FOLDER_SYNC), `user` is the staff member (None otherwise).
    Trashing a document already in the trash changes nothing."""
    references = document_golden_references(documents=[document]).get(str(document.pk), [])
    with transaction.atomic():
        # Locked as a deletion or a publish locks it: a publish under way finishes first; one coming after finds
        # the document gone (Document.objects no longer holds it) and publishes nothing.
        locked = Document.all_objects.select_for_update().filter(pk=document.pk).first()
        if locked is None:
            raise NotInTrash("the document no longer exists")
        if locked.trashed_at is None:
            now = timezone.now()
            family = [d.pk for d in _family_of(locked)]
            Document.all_objects.filter(pk__in=family).update(
                trashed_at=now, trashed_by=user if getattr(user, "pk", None) else None, trashed_by_name=by[:200],
                updated_at=now,
            )  # fmt: skip
            locked.trashed_at = now
    return Trashed(document=locked, restore_until=restore_until(locked.trashed_at), golden_questions=references)


def document_restore(*, document: Document) -> Document:
    """Bring a trashed document back whole (paragraphs, edits, labels, versions, attachments): it answers again at
    the commit, and golden questions that refer to it count it again.

    Refused (RestoreConflict) while the collection holds a live document of the same content: the same file was
    uploaded again after the deletion; delete that one first, or leave this one in the trash."""
    with transaction.atomic():
        locked = Document.all_objects.select_for_update().filter(pk=document.pk).first()
        if locked is None or locked.trashed_at is None:
            raise NotInTrash(f"{document.filename} is not in the trash")
        family = _family_of(locked)
        for member in family:
            same = Document.objects.filter(collection_id=member.collection_id, content_hash=member.content_hash)
            held = same.exclude(pk=member.pk).first()
            if held is not None:
                raise RestoreConflict(
                    f"{member.filename} cannot be restored: the collection holds the same file again as "
                    f"{held.filename} (document {held.pk}); delete that one first, or leave this one in the trash"
                )
        Document.all_objects.filter(pk__in=[m.pk for m in family]).update(
            trashed_at=None, trashed_by=None, trashed_by_name="", updated_at=timezone.now()
        )
    return Document.objects.get(pk=locked.pk)


def document_purge(*, document: Document) -> None:
    """Delete a trashed document for good now: its rows, paragraphs, versions, attachments and stored originals."""
    locked = Document.all_objects.filter(pk=document.pk).first()
    if locked is None or locked.trashed_at is None:
        raise NotInTrash(f"{document.filename} is not in the trash")
    document_delete(document=locked)


def trash_empty(*, collection_id: Any) -> int:
    """Purge every document in a collection's trash now ("Empty trash"). How many went."""
    return _purge(Document.all_objects.trashed().filter(collection_id=collection_id))


def trash_purge_expired(*, now: dt.datetime | None = None) -> int:
    """Purge every document trashed more than KB_TRASH_DAYS ago (0: never by age). How many went."""
    days = trash_days()
    if days <= 0:
        return 0
    cutoff = (now or timezone.now()) - dt.timedelta(days=days)
    return _purge(Document.all_objects.trashed().filter(trashed_at__lt=cutoff))


def _purge(documents: Any) -> int:
    removed = 0
    # Ids first; an attachment goes with its document, so each is looked for again before it is deleted.
    for pk in list(documents.order_by("trashed_at", "pk").values_list("pk", flat=True)):
        document = Document.all_objects.filter(pk=pk, trashed_at__isnull=False).first()
        if document is not None:
            document_delete(document=document)
            removed += 1
    return removed


def _family_of(document: Document) -> list[Document]:
    """The document and its attachments, every level (trashed or not)."""
    found = [document]
    level = list(Document.all_objects.filter(parent=document))
    while level:
        found += level
        level = list(Document.all_objects.filter(parent__in=level))
    return found
