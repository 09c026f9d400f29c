"""Languages of documents and collections: relabelling a document, a collection's measured and pinned languages.

- `document_language_set`: an editor corrects a document's language. The document and every paragraph it
  has (in every generation) take the new label in one transaction, and each paragraph's keyword index is
  rebuilt under that language's text search configuration there and then (the BM25 statistics follow
  through their triggers). Nothing is parsed or embedded again.
- The editor's language is a per-document override (`Document.language_pinned`): every build of the
  document (ingestion, re-upload, re-chunk, re-index) labels the document and *every* paragraph with it
  (`document_language_for_publish`), a section in another language included. Detection still runs and its
  labels are kept beside (`language_detected`), so `document_language_unpin` returns to them at once.
- `collection_language_shares`: the measured split of a collection's searchable paragraphs by language.
- `collection_languages`: what the collection's languages are: the pinned list when one is pinned, else
  those making up at least LANGUAGE_SHARE_FLOOR of its paragraphs, at most MAX_MEASURED_LANGUAGES, most
  frequent first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import connection, transaction
from django.db.models import JSONField
from django.db.models.expressions import RawSQL
from django.utils import timezone

from collections_app.exceptions import Conflict, Invalid
from collections_app.ingestion.languages import SUPPORTED_LANGUAGES, normalise
from collections_app.models import Chunk, Collection, Document, DocumentStatus
from collections_app.sql import keyword_vector

LANGUAGE_SHARE_FLOOR = 0.05
MAX_MEASURED_LANGUAGES = 4


class InvalidLanguage(Invalid):
    field = "language"


class DocumentBeingRead(Conflict):
    pass


def language_code(value: Any, *, field: str = "language") -> str:
    """A language code an editor gave, as kbsite stores it (sr, hr, bs → sh); refused unless supported."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidLanguage(f"{field} must be a language code such as {_examples()}", field=field)
    code = normalise(value)
    if code not in SUPPORTED_LANGUAGES:
        raise InvalidLanguage(
            f"{field}: {value[:20]!r} is not a supported language code; "
            f"use one of {', '.join(sorted(SUPPORTED_LANGUAGES))}",
            field=field,
        )
    return code


def language_codes(values: Any, *, field: str = "languages") -> list[str]:
    """A pinned list: each code checked and normalised, duplicates dropped, order kept."""
    if not isinstance(values, list):
        raise InvalidLanguage(f"{field} must be a list of language codes such as [{_examples()}], or null", field=field)
    codes: list[str] = []
    for value in values:
        code = language_code(value, field=field)
        if code not in codes:
            codes.append(code)
    return codes


def _examples() -> str:
    return '"en", "de", "sh", "mk"'


def document_language_set(*, document: Document, language: Any) -> Document:
    """Pin a document's language (null: unpin, see document_language_unpin): the document and all its
    paragraphs take it at once, their keyword indexes follow in the same transaction, and every later build
    of the document keeps it."""
    if language is None:
        return document_language_unpin(document=document).document
    code = language_code(language)
    with transaction.atomic():
        locked = _lock_for_relabel(document)
        Document.objects.filter(pk=locked.pk).update(language=code, language_pinned=code, updated_at=timezone.now())
        _relabel_rows(locked, "%(code)s", {"code": code})
    document.refresh_from_db()
    return document


@dataclass
class LanguageUnpinned:
    document: Document
    relabelled: bool  # False: the detected labels were not kept (built before they were); the next build
    note: str


def document_language_unpin(*, document: Document) -> LanguageUnpinned:
    """Return a document to detected languages: the pin goes and, when the labels detection gave are kept on
    the document and every row, they come back at once (keyword index included). Rows built before they were
    kept keep their labels until the document is next built (re-chunk, re-index, re-ingest)."""
    with transaction.atomic():
        locked = _lock_for_relabel(document)
        unknown = Chunk.objects.filter(document=locked, language_detected__isnull=True).exists()
        if locked.language_detected is None or unknown:
            Document.objects.filter(pk=locked.pk).update(language_pinned="", updated_at=timezone.now())
            relabelled = False
        else:
            Document.objects.filter(pk=locked.pk).update(
                language=locked.language_detected, language_pinned="", updated_at=timezone.now()
            )
            _relabel_rows(locked, "language_detected", {})
            relabelled = True
    document.refresh_from_db()
    if relabelled:
        note = "the document and its paragraphs have their detected languages again"
    else:
        note = (
            "the pin is removed, but the languages detected for this document were not kept (it was built "
            "before they were): its paragraphs keep their current labels until the document is next built "
            "(re-chunk, re-index or re-ingest), which detects them again"
        )
    return LanguageUnpinned(document=document, relabelled=relabelled, note=note)


def document_language_for_publish(document: Document) -> str:
    """The pinned language a build writes onto the document's rows ("" = each row its detected label): read
    under a lock inside the build's transaction, before it removes the rows it replaces, so a pin committed
    while the document was being embedded is honoured — and a pin committed after waits for the build and
    relabels the rows it wrote."""
    return str(Document.objects.select_for_update().values_list("language_pinned", flat=True).get(pk=document.pk))


def _lock_for_relabel(document: Document) -> Document:
    locked = Document.objects.select_for_update().get(pk=document.pk)
    if locked.status in (DocumentStatus.QUEUED, DocumentStatus.PARSING):
        # Refused for clarity of what the editor sees; its build would honour a pin anyway.
        raise DocumentBeingRead(f"{locked.filename} is being read ({locked.status}); set its language once it is done")
    return locked


def _relabel_rows(document: Document, label_sql: str, params: dict[str, Any]) -> None:
    """Every row of the document (every generation) takes `label_sql`; rows already so labelled are left as
    they are (an unchanged row is not rewritten, nor re-indexed). Rows without a keyword index (parents, a
    re-index's staged rows) keep none: the cutover fills those in from the label set here."""
    table = Chunk._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            UPDATE {table} SET language = {label_sql},
                search_vector = CASE WHEN search_vector IS NULL THEN NULL
                    ELSE {keyword_vector(label_sql)} END
            WHERE document_id = %(document)s AND language IS DISTINCT FROM {label_sql}
            """,
            {**params, "document": document.pk},
        )


# Paragraphs of the generation searches read, per language label ("" = undetected), as a JSON object.
_COUNTS_SQL = f"""
    SELECT coalesce(jsonb_object_agg(g.language, g.n), '{{}}'::jsonb) FROM (
        SELECT c.language, count(*) AS n FROM {Chunk._meta.db_table} c
        WHERE c.collection_id = {Collection._meta.db_table}.id
          AND c.generation = {Collection._meta.db_table}.active_generation AND c.kind = 'paragraph'
        GROUP BY c.language
    ) g
"""


def language_counts() -> RawSQL:
    """An annotation for a queryset of collections: each one's paragraph counts per language, in its own query."""
    return RawSQL(_COUNTS_SQL, [], output_field=JSONField())


def collection_language_counts(collection: Collection) -> dict[str, int]:
    annotated = getattr(collection, "language_counts", None)
    if annotated is not None:
        return dict(annotated)
    row = Collection.objects.filter(pk=collection.pk).annotate(counts=language_counts()).values_list("counts").first()
    return dict(row[0] or {}) if row is not None else {}


def collection_language_shares(collection: Collection) -> list[dict[str, Any]]:
    """The measured split, most frequent first: [{"language", "paragraphs", "share"}]; undetected paragraphs
    count in the whole but are no language (`language` null)."""
    counts = collection_language_counts(collection)
    total = sum(counts.values())
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return [{"language": normalise(code) or None, "paragraphs": n, "share": round(n / total, 4)} for code, n in ranked]


def measured_languages(shares: list[dict[str, Any]]) -> list[str]:
    """Languages making up at least LANGUAGE_SHARE_FLOOR of the paragraphs, at most MAX_MEASURED_LANGUAGES."""
    merged: dict[str, float] = {}
    for entry in shares:  # an old "sr" and a new "sh" are one language
        if entry["language"]:
            merged[entry["language"]] = merged.get(entry["language"], 0.0) + entry["share"]
    ranked = sorted(merged.items(), key=lambda item: (-item[1], item[0]))
    return [code for code, share in ranked if share >= LANGUAGE_SHARE_FLOOR][:MAX_MEASURED_LANGUAGES]


def collection_languages(collection: Collection, shares: list[dict[str, Any]] | None = None) -> list[str]:
    """The collection's languages: pinned when pinned (even ones it does not contain yet), else measured."""
    if collection.languages is not None:
        return list(collection.languages)
    return measured_languages(collection_language_shares(collection) if shares is None else shares)
