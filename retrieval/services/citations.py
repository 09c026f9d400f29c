"""The citation check: is each paragraph an answer cites real, still served, shown to this caller, readable by
the search's reader, and does it hold the quoted words?

    checked = citations_verify(key=key, citations=[Citation(paragraph_id, quote)], search_id=..., reader=None)

Each fact stands on its own (never folded into one verdict):

- `exists`: a paragraph this key can reach (its collections; or one it was shown in the named search). Another
  tenant's id, a collection outside the key's scope, a parent section, a staged re-index's row and an invented
  id all answer alike: `exists: false` and nothing else known.
- `current`: still in the serving build; else `retired` says `replaced` (its document was rebuilt: a re-index,
  a rechunk, a new version, an edit) or `deleted` (with its document or collection), and when, or `hidden` (an editor
  hid it; when is in the document's edit history).
- `surfaced`: returned to this caller in that search (matched or stitched in as a neighbour); null without a
  search, or for a search recorded before surfaced paragraphs were kept.
- `readable`: readable now by the search's reader (or the `reader` named; none: only what needs no label).
- `quote`: `exact` (a substring of the paragraph), `normalised` (a substring once both are NFKC-normalised,
  case-folded and their whitespace collapsed) or `absent`, with `similarity`: how close the paragraph's most
  similar passage comes (1.0 for a match; RapidFuzz's partial ratio, 0-1). Checked only where `readable`:
  a quote tried against a paragraph the caller may not read would tell its words, so it answers null.

Text is never returned, and the record of a check (CitationCheck) keeps counts only.
"""

from __future__ import annotations

import re
import unicodedata
import uuid
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from django.db.models import F
from django.utils import timezone
from rapidfuzz import fuzz

from accounts.models import Agent, ApiKey, Reader
from collections_app.models import Chunk, ChunkKind, Document, RetiredParagraph
from collections_app.selectors import collections_for_key
from infra.errors import Invalid
from infra.validation import text_problem
from retrieval.models import CitationCheck, SearchEvent
from retrieval.selectors.search import registered_reader

MAX_CITATIONS = 100
MAX_QUOTE_CHARS = 4000
_SPACE = re.compile(r"\s+")


class UnknownSearch(Invalid):
    field = "search_id"


class InvalidCitations(Invalid):
    field = "citations"


@dataclass(frozen=True)
class Citation:
    paragraph_id: str
    quote: str | None = None


@dataclass(frozen=True)
class Retired:
    how: str  # replaced | deleted | hidden
    at: datetime | None  # None: a hidden paragraph (the edit history says when)


@dataclass(frozen=True)
class CitationFacts:
    paragraph_id: str
    exists: bool
    current: bool | None  # null: it does not exist (for this caller)
    retired: Retired | None
    surfaced: bool | None  # null: no search named (or one recorded before surfaced paragraphs were kept)
    readable: bool | None  # null: not current, so nobody reads it
    quote: str | None  # exact | normalised | absent; null: no quote given, or not readable
    similarity: float | None

    def to_json(self) -> dict[str, Any]:
        answer = asdict(self)
        answer["retired"] = (
            {"how": self.retired.how, "at": self.retired.at.isoformat() if self.retired.at else None}
            if self.retired
            else None
        )
        return answer


@dataclass(frozen=True)
class CitationsVerified:
    citations: list[CitationFacts]
    check: CitationCheck


def citations_verify(
    *,
    key: ApiKey,
    citations: list[Citation],
    search_id: str | None = None,
    reader: str | None = None,
    on_behalf_of: Agent | None = None,
) -> CitationsVerified:
    """The facts of each citation, in the order given, and the check's record (counts only)."""
    if not citations or len(citations) > MAX_CITATIONS:
        raise InvalidCitations(f"send between 1 and {MAX_CITATIONS} citations")
    for citation in citations:
        if citation.quote is not None and (problem := text_problem(citation.quote)):
            raise InvalidCitations(f"a quote {problem}")
        if citation.quote is not None and len(citation.quote) > MAX_QUOTE_CHARS:
            raise InvalidCitations(f"a quote is at most {MAX_QUOTE_CHARS} characters")
    event = _search_of(key, search_id)
    if event is not None and reader is not None:
        raise Invalid("a named search is checked as its own reader: leave `reader` out", field="reader")
    labels = _labels(event.reader if event is not None else registered_reader(key=key, name=reader))
    surfaced = set(event.paragraphs) if event is not None and event.paragraphs is not None else None
    ids = [_uuid(c.paragraph_id) for c in citations]
    wanted = {i for i in ids if i is not None}
    reachable = collections_for_key(key).values_list("pk", flat=True)
    live = {
        str(c.pk): c
        # Hidden paragraphs included: an editor's hide takes them out of the serving build, reported as such.
        for c in Chunk.objects.live()
        .filter(kind=ChunkKind.PARAGRAPH, tenant_id=key.tenant_id, pk__in=wanted)
        .only("id", "text", "collection_id", "hidden")
    }
    retired = {
        str(r.paragraph_id): r
        for r in RetiredParagraph.objects.filter(tenant_id=key.tenant_id, paragraph_id__in=wanted)
    }
    # A paragraph of a document in the trash reads as deleted, since when it was trashed (a restore makes it
    # current again): nobody reads it, as if its rows were gone.
    trashed_rows: list[tuple[uuid.UUID, uuid.UUID, uuid.UUID, datetime | None]] = list(
        Chunk.objects.filter(kind=ChunkKind.PARAGRAPH, tenant_id=key.tenant_id, pk__in=wanted)
        .filter(generation=F("collection__active_generation"), document__in=Document.all_objects.trashed().values("pk"))
        .values_list("pk", "collection_id", "document_id", "document__trashed_at")
    )
    for pk, of_collection, of_document, trashed_at in trashed_rows:
        retired[str(pk)] = RetiredParagraph(
            paragraph_id=pk, tenant_id=key.tenant_id, collection_id=of_collection, document_id=of_document,
            retired_at=trashed_at or timezone.now(),
        )  # fmt: skip
    in_scope = {str(pk) for pk in reachable.filter(pk__in={c.collection_id for c in live.values()} |
                                                   {r.collection_id for r in retired.values()})}  # fmt: skip
    readable = set(
        str(pk)
        for pk in Chunk.objects.live().paragraphs().readable_by(labels).filter(
            pk__in=[pk for pk, c in live.items() if str(c.collection_id) in in_scope]
        ).values_list("pk", flat=True)
    )  # fmt: skip
    documents_left = set(
        str(pk)
        for pk in Document.objects.filter(pk__in={r.document_id for r in retired.values()}).values_list("pk", flat=True)
    )
    facts = []
    for citation, pid in zip(citations, ids, strict=True):
        shown = surfaced is not None and pid in surfaced
        row, gone = (live.get(pid), retired.get(pid)) if pid else (None, None)
        collection_id = str(row.collection_id) if row else str(gone.collection_id) if gone else ""
        exists = (row is not None or gone is not None) and (collection_id in in_scope or shown)
        if not exists:
            facts.append(CitationFacts(citation.paragraph_id, False, None, None, _surfaced(surfaced, shown), None,
                                       None, None))  # fmt: skip
            continue
        how = None
        if row is None and gone is not None:
            how = Retired("replaced" if str(gone.document_id) in documents_left else "deleted", gone.retired_at)
        elif row is not None and row.hidden:
            how, row = Retired("hidden", None), None  # an editor hid it: nobody reads it, as if retired
        can_read = pid in readable if row is not None else None
        quote, similarity = (
            quote_match(citation.quote, row.text) if row is not None and can_read and citation.quote else (None, None)
        )
        facts.append(
            CitationFacts(citation.paragraph_id, True, row is not None, how, _surfaced(surfaced, shown), can_read,
                          quote, similarity)
        )  # fmt: skip
    check = _record(key=key, event=event, facts=facts, on_behalf_of=on_behalf_of, surfaced_known=surfaced is not None)
    return CitationsVerified(facts, check)


def quote_match(quote: str, text: str) -> tuple[str, float]:
    """exact, normalised or absent, and how similar the paragraph's closest passage is (0-1)."""
    if quote in text:
        return "exact", 1.0
    wanted, held = normalised(quote), normalised(text)
    if wanted and wanted in held:
        return "normalised", 1.0
    return "absent", round(fuzz.partial_ratio(wanted, held) / 100, 4)


def normalised(text: str) -> str:
    """Unicode-normalised (NFKC), case-folded, whitespace collapsed: two renderings of one text compare equal."""
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def _search_of(key: ApiKey, search_id: str | None) -> SearchEvent | None:
    """The named search, if this caller made it: the same key, or another key of the same agent. Any other
    search (another key's, another tenant's, none) answers alike."""
    if search_id is None:
        return None
    pk = _uuid(search_id)
    found = None
    if pk is not None:
        searches = SearchEvent.objects.filter(tenant_id=key.tenant_id, pk=pk).select_related("reader")
        by = {"agent_id": key.agent_id} if key.agent_id is not None else {"api_key": key}
        found = searches.filter(**by).first()
    if found is None:
        raise UnknownSearch("no search with this id was made with this key: send the search_id its answer gave")
    return found


def _labels(reader: Reader | None) -> list[str]:
    return list(reader.labels) if reader is not None else []


def _surfaced(surfaced: set[str] | None, shown: bool) -> bool | None:
    return None if surfaced is None else shown


def _uuid(value: str) -> str | None:
    try:
        return str(uuid.UUID(str(value)))
    except ValueError:
        return None


def _record(
    *,
    key: ApiKey,
    event: SearchEvent | None,
    facts: list[CitationFacts],
    on_behalf_of: Agent | None,
    surfaced_known: bool,
) -> CitationCheck:
    counts: dict[str, int | None] = {
        "exists": sum(f.exists for f in facts),
        "current": sum(bool(f.current) for f in facts),
        "replaced": sum(bool(f.retired and f.retired.how == "replaced") for f in facts),
        "deleted": sum(bool(f.retired and f.retired.how == "deleted") for f in facts),
        "surfaced": sum(bool(f.surfaced) for f in facts) if surfaced_known else None,
        "readable": sum(bool(f.readable) for f in facts),
        **{f"quote_{kind}": sum(f.quote == kind for f in facts) for kind in ("exact", "normalised", "absent")},
    }
    return CitationCheck.objects.create(
        tenant_id=key.tenant_id,
        search=event,
        api_key=key,
        agent_id=key.agent_id,
        on_behalf_of=on_behalf_of,
        citations=len(facts),
        counts=counts,
    )
