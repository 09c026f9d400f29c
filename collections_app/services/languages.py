"""Languages of documents and collections: relabelling a document, a collection's measured and pinned languages.

- `document_language_set`: an editor corrects a document's language. The document and every paragraph it
  has (in every generation) take the new label in one transaction, and each paragraph's keyword index is
  rebuilt under that language's text search configuration there and then (the BM25 statistics follow
  through their triggers). Nothing is parsed or embedded again.
- The editor's language is a per-document override (`Document.language_pinned`): every build of the
  document (ingestion, re-upload, re-chunk, re-index) labels the document and *every* paragraph with it
  (`document_language_for_publish`), a section in another language included. Detection still runs and its
  labels are kept beside (`language_detected`), so `document_language_unpin` returns to them at once.

A collection's measured and pinned languages are reads: collections_app/selectors/languages.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from collections_app.models import Chunk, Document, DocumentStatus
from collections_app.sql import keyword_vector
from infra.errors import Conflict, Invalid
from ingestion.languages import SUPPORTED_LANGUAGES, normalise


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
