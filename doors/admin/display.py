"""Stored values shown for people: status badges, sizes, JSON as key/value rows and tables."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.contrib.admin.views.main import ChangeList
from django.template.defaultfilters import filesizeformat
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from ingestion.languages import language_shown

if TYPE_CHECKING:
    from django.contrib.admin.filters import _ListFilterChoices  # the stubs' name for one choice


def status_badge(status: str) -> SafeString:
    """A coloured badge that also says the status in words (colour alone tells nothing to some readers)."""
    return format_html('<span class="kb-badge kb-badge-{}">{}</span>', status, status)


class LanguageFilter(admin.AllValuesFieldListFilter):
    """A list filter on a language label that names each language ("Greek (el)", "Serbo-Croatian (sr/hr/bs)",
    "undetected"), not its bare code."""

    def choices(self, changelist: ChangeList) -> Iterator[_ListFilterChoices]:
        codes = {str(code) for code in self.lookup_choices if code is not None}
        for choice in super().choices(changelist):
            if choice.get("display") in codes:
                choice = {**choice, "display": language_shown(str(choice["display"]))}
            yield choice


def readable_size(size: int | None) -> str:
    return filesizeformat(size or 0)


def shown_value(value: Any) -> str:
    """One stored value as a person reads it: lists joined, nested objects as compact JSON."""
    if value is None:
        return "—"
    if isinstance(value, list):
        return ", ".join(shown_value(v) for v in value) or "—"
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return str(value)


def key_value_rows(data: Mapping[str, Any] | None, empty: str = "—") -> SafeString:
    """A mapping as a small two-column table (metadata, a build's method)."""
    if not data:
        return format_html("{}", empty)
    rows = format_html_join("", "<tr><th>{}</th><td>{}</td></tr>", ((k, shown_value(v)) for k, v in data.items()))
    return format_html('<table class="kb-rows"><tbody>{}</tbody></table>', rows)


def table(headers: Iterable[str], rows: Iterable[Iterable[Any]], empty: str = "—") -> SafeString:
    body = [format_html_join("", "<td>{}</td>", ((cell,) for cell in row)) for row in rows]
    if not body:
        return format_html("{}", empty)
    head = format_html_join("", "<th>{}</th>", ((h,) for h in headers))
    return format_html(
        '<table class="kb-rows"><thead><tr>{}</tr></thead><tbody>{}</tbody></table>',
        head,
        format_html_join("", "<tr>{}</tr>", ((row,) for row in body)),
    )


def stage_rows(stages: Iterable[Mapping[str, Any]]) -> list[tuple[str, str, str, str]]:
    """A search trace's stages as (stage, status, what it did or why it was skipped, milliseconds)."""
    rows = []
    for stage in stages:
        counts = stage.get("counts") or {}
        detail = stage.get("reason") or ", ".join(f"{k}: {shown_value(v)}" for k, v in counts.items())
        ms = stage.get("ms")
        rows.append((str(stage.get("stage", "")), str(stage.get("status", "")), detail, "" if ms is None else f"{ms}"))
    return rows


def stages_table(stages: Iterable[Mapping[str, Any]]) -> SafeString:
    return table(["stage", "status", "details", "ms"], stage_rows(stages))


def marked_text(text: str, spans: Iterable[Mapping[str, Any]], *, best: str | None = None) -> SafeString:
    """`text` escaped, with each span's characters [start, end) wrapped in <mark> (its score on hover).

    Spans come from a search result's `matches` (character offsets into its text). Offsets outside the text
    are clamped; a span without whole-number offsets, empty or overlapping an earlier one is dropped: a wrong
    offset may mark too little, never break the page or let the text's own markup through.

    `best`: the paragraph the result cites (its best match). Given, only its span is highlighted (`kb-match`);
    the other matched paragraphs are marked lightly (`kb-match-also`), so a window where most paragraphs cleared
    the floor does not come out all highlighted and the mark still points at something.
    """
    whole: list[tuple[int, int, Any, bool]] = [
        (s["start"], s["end"], s.get("score"), best is None or str(s.get("paragraph_id")) == best)
        for s in spans
        if _whole(s.get("start")) and _whole(s.get("end"))
    ]
    kept: list[tuple[int, int, Any, bool]] = []
    for start, end, span_score, primary in sorted(whole, key=lambda t: t[:2]):
        start, end = min(max(start, 0), len(text)), min(max(end, 0), len(text))
        if end <= start or (kept and start < kept[-1][1]):
            continue
        kept.append((start, end, span_score, primary))
    pieces: list[SafeString] = []
    position = 0
    for start, end, score, primary in kept:
        what = "matched paragraph" if primary else "also matched"
        title = f"{what}, score {score:.3f}" if isinstance(score, int | float) else what
        pieces.append(format_html('{}<mark class="{}" title="{}">{}</mark>', text[position:start],
                                  "kb-match" if primary else "kb-match-also", title, text[start:end]))  # fmt: skip
        position = end
    pieces.append(format_html("{}", text[position:]))
    return SafeString("".join(pieces))


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# A search's `refused`, three values never collapsed, in words: (one word for a list, what it means). The API's
# value (null, false, true) stays the API's; an editor reads what happened.
REFUSED_SHOWN: dict[bool | None, tuple[str, str]] = {
    None: ("no judge", "no judge: this search could not refuse (no judge configured, no endpoint, or the judge "
                       "failed; the trace says which)"),
    False: ("approved", "approved: the judge approved the results"),
    True: ("refused", "refused: nothing answers (the judge refused; the results were withheld)"),
}  # fmt: skip


def as_sentence(text: str) -> str:
    """A message begun as a sentence: its first word capitalised when it is a plain lower-case word ("the original
    ..." → "The original ..."), never when it is a name ("it-onboarding.md: accepted" stays as written)."""
    first = text.split(" ", 1)[0].rstrip(":,;")
    if first.isalpha() and first.islower():
        return text[:1].upper() + text[1:]
    return text
