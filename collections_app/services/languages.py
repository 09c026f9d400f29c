"""Languages of documents and collections: relabelling a document, a collection's measured and pinned languages.

- `document_language_set`: an editor corrects a document's language. The document and every paragraph it
  has (in every generation) take the new label in one transaction, and each paragraph's keyword index is
  rebuilt under that language's text search configuration there and then (the BM25 statistics follow
  through their triggers). Nothing is parsed or embedded again.
- `collection_language_shares`: the measured split of a collection's searchable paragraphs by language.
- `collection_languages`: what the collection's languages are: the pinned list when one is pinned, else
  those making up at least LANGUAGE_SHARE_FLOOR of its paragraphs, at most MAX_MEASURED_LANGUAGES, most
  frequent first.
"""

from __future__ import annotations

from typing import Any

from django.db import connection, transaction
from django.db.models import JSONField
from django.db.models.expressions import RawSQL
from django.utils import timezone

from collections_app.exceptions import Conflict, Invalid
from collections_app.ingestion.languages import SUPPORTED_LANGUAGES, normalise
from collections_app.models import Chunk, Collection, Document, DocumentStatus

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
    """Relabel a document and all its paragraphs; their keyword indexes follow in the same transaction."""
    code = language_code(language)
    table = Chunk._meta.db_table
    with transaction.atomic():
        locked = Document.objects.select_for_update().get(pk=document.pk)
        if locked.status in (DocumentStatus.QUEUED, DocumentStatus.PARSING):
            # Its build would write the labels it detected over this one when it publishes.
            raise DocumentBeingRead(
                f"{locked.filename} is being read ({locked.status}); set its language once it is done"
            )
        Document.objects.filter(pk=locked.pk).update(language=code, updated_at=timezone.now())
        with connection.cursor() as cursor:
            # Rows without a keyword index (parents, a re-index's staged rows) keep none: the cutover fills
            # those in from the language set here.
            cursor.execute(
                f"""
                UPDATE {table} SET language = %(code)s,
                    search_vector = CASE WHEN search_vector IS NULL THEN NULL
                        ELSE to_tsvector(kb_ts_config(%(code)s), text) || to_tsvector('simple', text) END
                WHERE document_id = %(document)s
                """,
                {"code": code, "document": locked.pk},
            )
    document.refresh_from_db()
    return document


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
