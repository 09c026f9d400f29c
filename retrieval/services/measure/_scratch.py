"""The scratch store: designs indexed where no search, key or person of any tenant can reach them.

A measure's store is a tenant of its own, named SCRATCH_PREFIX + the measure's id. Tenancy is the boundary
every search already enforces (a key reads its own tenant only, whatever collection it names): no key nor
member belongs to a scratch tenant, so nothing built there is ever seen by a search, and nothing of the
measured collection is written (its documents are copied, as rows pointing at the same stored originals and
holding the same parser output; chunks, builds, keyword statistics and postings are the copy's own).

Each design is one collection in that tenant, built by the re-index's own steps (document_stage, then
collection_cutover) from the stored parser output: exactly what a re-index of the real collection would build.
Each paragraph whose embedding text is one of the measured collection's rows (same model) takes that row's vector
(services/documents/_reuse.py): a design that cuts as the collection does embeds nothing; `Design` says how many
windows were embedded and how many reused.
The store is removed at the end of the run, on failure, on cancel, and — when the worker died — by the sweep the
cluster's recovery round runs (its lease, a session advisory lock, went with the worker's process).
"""

from __future__ import annotations

import hashlib
import logging
import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.conf import settings as django_settings
from django.db import transaction
from django.utils import timezone

from accounts.models import Tenant
from collections_app.models import Chunk, Collection, Document, DocumentStatus, RetiredParagraph
from collections_app.services.reindex import collection_cutover, document_stage
from infra.locks import session_lock, session_lock_held
from retrieval.models import MEASURE_IN_FLIGHT, Measure, MeasureStatus

from ._variants import BUILD_FIELDS

logger = logging.getLogger(__name__)

SCRATCH_PREFIX = "measure scratch "
# Not copied to a design: its identity, its place in a tenant, and what ties it to the outside world.
_NOT_COPIED = {"id", "tenant", "name", "folder_source", "folder_source_options", "active_generation",
               "reindex_generation", "reindex_done", "reindex_total", "reindex_error", "reindex_embedded",
               "reindex_reused", "active_alias",
               "golden_gate", "created_at", "updated_at"}  # fmt: skip


def _lease_key(measure_id: Any) -> str:
    return f"kbsite-measure:{measure_id}"


@contextmanager
def measure_lease(*, measure_id: Any) -> Iterator[bool]:
    """Hold the measure's lease while the block runs (a session advisory lock on a connection of its own, which
    the server drops when the worker's process dies); yields False if a live worker holds it."""
    with session_lock(_lease_key(measure_id), application_name=f"kbsite-measure pid={os.getpid()}") as taken:
        yield taken


def measure_lease_held(*, measure_id: Any) -> bool:
    return session_lock_held(_lease_key(measure_id))


def scratch_open(*, measure: Measure) -> Tenant:
    """The measure's scratch store (made once; a rerun of the task finds it and starts it empty)."""
    scratch_remove(name=SCRATCH_PREFIX + str(measure.pk))
    tenant = Tenant.objects.create(name=SCRATCH_PREFIX + str(measure.pk))
    Measure.objects.filter(pk=measure.pk).update(scratch_tenant=tenant.pk)
    return tenant


def scratch_remove(*, name: str | None = None, tenant_id: Any = None) -> bool:
    """Remove a scratch store and everything in it, its retired-paragraph rows included; True if there was one.
    Chunks first, in one statement per table, so a store of many thousand rows goes without Django collecting each
    row."""
    found = Tenant.objects.filter(pk=tenant_id) if tenant_id else Tenant.objects.filter(name=name)
    tenant = found.filter(name__startswith=SCRATCH_PREFIX).first()
    if tenant is None:
        return False
    with transaction.atomic():
        Chunk.objects.filter(tenant=tenant).update(parent=None)
        Chunk.objects.filter(tenant=tenant)._raw_delete(Chunk.objects.db)
        Collection.objects.filter(tenant=tenant).delete()  # documents, builds, keyword statistics cascade
        # The delete trigger remembered every design's paragraphs as retired: nobody can cite a scratch paragraph.
        RetiredParagraph.objects.filter(tenant_id=tenant.pk).delete()
        tenant.delete()
    return True


def corpus_of(collection: Collection) -> dict[str, Any]:
    """What a measure indexes: the documents read without error, by content (a digest two runs compare)."""
    hashes = sorted(_measured(collection).values_list("content_hash", flat=True))
    return {"documents": len(hashes), "digest": hashlib.sha256("\n".join(hashes).encode()).hexdigest()[:16]}


def _measured(collection: Collection) -> Any:
    return Document.objects.filter(collection=collection, status=DocumentStatus.DONE)


@dataclass(frozen=True)
class Design:
    """One design built in the scratch store: its collection, each copied document's original, and how many
    windows (paragraphs sent to the model) were embedded and how many took a stored vector."""

    collection: Collection
    originals: dict[str, str]
    embedded: int
    reused: int
    # The measured collection itself (design_as_built): read, never written nor removed.
    own: bool = False


def design_as_built(*, source: Collection, settings: dict[str, Any]) -> Design | None:
    """The measured collection itself as the design of `settings`, when they cut and embed as it did and every
    readable document was built with them (none stale, no re-index waiting, the model it answers with): a rebuild
    would make the same paragraphs with the same vectors, so a variant that changes only what a search reads
    (floor, window, weight) is asked on the collection as it is. A million paragraphs re-staged document by
    document took hours to change nothing. None: build one."""
    if not django_settings.KB_EMBED_REUSE or any(getattr(source, name) != settings[name] for name in BUILD_FIELDS):
        return None  # reuse turned off: every design built and embedded afresh
    if source.reindex_generation is not None or source.served_alias != settings["embedding_alias"]:
        return None
    if _measured(source).filter(stale=True).exists():
        return None
    view = Collection.objects.get(pk=source.pk)  # a copy of the row, so the variant's settings stay in memory
    paragraphs = view.chunks.paragraphs().filter(generation=view.active_generation).count()
    return Design(view, {}, embedded=0, reused=paragraphs, own=True)


def design_build(
    *,
    source: Collection,
    scratch: Tenant,
    settings: dict[str, Any],
    check: Callable[[], None] = lambda: None,
    on_document: Callable[[int, int], None] | None = None,
) -> Design:
    """Index `source`'s stored parser output with `settings` as one design in the scratch store (`originals`:
    copy's document id -> the source's). `check` runs between documents (a cancel). The source itself when it
    already is that design (design_as_built)."""
    as_built = design_as_built(source=source, settings=settings)
    if as_built is not None:
        return as_built
    fields = {
        f.attname: getattr(source, f.attname) for f in Collection._meta.concrete_fields if f.name not in _NOT_COPIED
    }
    fields.update({name: value for name, value in settings.items() if name in fields})
    design = Collection.objects.create(
        tenant=scratch, name=f"design {uuid.uuid4().hex[:12]}", reindex_generation=1, active_generation=0, **fields
    )
    originals = _documents_copy(source=source, design=design)
    total = len(originals)
    for done, copy_id in enumerate(originals, start=1):
        check()
        document = Document.objects.select_related("collection").get(pk=copy_id)
        document_stage(document=document, generation=1, vectors_from=Document.objects.get(pk=originals[copy_id]))
        if on_document is not None:
            on_document(done, total)
    collection_cutover(collection=design, generation=1)
    design.refresh_from_db()
    return Design(design, originals, embedded=design.reindex_embedded, reused=design.reindex_reused)


def _documents_copy(*, source: Collection, design: Collection) -> dict[str, str]:
    """Copy the source's readable documents into the design (parser output, labels, pinned language, the same
    stored original), one at a time so one document's parser output is in memory at once."""
    copies: dict[str, str] = {}
    by_original: dict[str, str] = {}
    for document_id in _measured(source).order_by("created_at", "id").values_list("pk", flat=True):
        document = Document.objects.get(pk=document_id)
        original = str(document.pk)
        document.pk = uuid.uuid4()
        document._state.adding = True
        document.tenant_id = design.tenant_id
        document.collection_id = design.pk
        document.parent_id = by_original.get(str(document.parent_id)) if document.parent_id else None
        document.chunk_count = 0
        document.stale = False
        document.save()
        by_original[original] = str(document.pk)
        copies[str(document.pk)] = original
    return copies


def measures_sweep() -> int:
    """The recovery round's sweep: every scratch store whose measure is not running under a live lease is
    removed, and a measure left `running` or `queued`-and-started by a dead worker is marked failed. Returns how
    many stores went."""
    removed = 0
    for running in Measure.objects.filter(status=MeasureStatus.RUNNING).values_list("pk", flat=True):
        if not measure_lease_held(measure_id=running):
            _failed(running)
    for tenant_id, name in Tenant.objects.filter(name__startswith=SCRATCH_PREFIX).values_list("pk", "name"):
        owner = name[len(SCRATCH_PREFIX) :]
        try:
            uuid.UUID(owner)
        except ValueError:
            continue
        # Only a store a measure made: a tenant someone merely named so ("measure scratch <any uuid>") is a real one.
        if not Measure.objects.filter(pk=owner).exists():
            continue
        if measure_lease_held(measure_id=owner):
            continue  # a live worker is measuring in it
        _failed(owner)
        if scratch_remove(tenant_id=tenant_id):
            logger.info("removed the scratch store of measure %s (its worker is gone)", owner)
            removed += 1
    return removed


def _failed(measure_id: Any) -> None:
    Measure.objects.filter(pk=measure_id, status__in=MEASURE_IN_FLIGHT).update(
        status=MeasureStatus.FAILED, error="the worker running this measure stopped; run it again",
        finished_at=timezone.now(), scratch_tenant=None,
    )  # fmt: skip
