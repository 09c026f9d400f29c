"""The `structure` chunking strategy.

Consecutive blocks that share a page and a section are packed into one chunk
up to `size`; a heading travels with the body beneath it; a chunk never
crosses a page or section boundary; a block longer than `size` is split at
whitespace with `overlap`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from itertools import chain, groupby

from .blocks import Block, ChunkDraft


class StrategyNotBuilt(ValueError):
    """The collection names a chunk strategy that is planned but not built yet."""


@dataclass(frozen=True)
class ChunkingSettings:
    strategy: str = "structure"
    size: int = 1000
    overlap: int = 200
    unit: str = "chars"


def chunk_blocks(
    blocks: Iterable[Block],
    settings: ChunkingSettings,
    measure: Callable[[str], int] | None = None,
) -> list[ChunkDraft]:
    _check_strategy(settings)
    measure = measure or len
    drafts: list[ChunkDraft] = []
    groups = [(key, list(group)) for key, group in groupby(blocks, key=lambda b: (b.page, tuple(b.section)))]
    for index, ((page, section), members) in enumerate(groups):
        # A heading whose body follows in a deeper section adds nothing the
        # next chunk's trail does not already carry; any other lone heading
        # (a one-line text file, a closing title) is content and is kept.
        following = groups[index + 1][0][1] if index + 1 < len(groups) else ()
        if all(b.kind == "heading" for b in members) and following[: len(section)] == section and following != section:
            continue
        language = _dominant_language(members)
        for text, metadata in _pack(members, settings, measure):
            drafts.append(ChunkDraft(text=text, section=list(section), page=page, language=language, metadata=metadata))
    return drafts


def iter_chunk_blocks(
    blocks: Iterable[Block],
    settings: ChunkingSettings,
    measure: Callable[[str], int] | None = None,
) -> Iterator[ChunkDraft]:
    """`chunk_blocks` as a stream, for documents too large to hold: memory is bounded by one chunk and the
    headings waiting above it, never by a whole section.

    The same rules, with one difference: a chunk's language is the dominant one among the blocks read before
    its section's first body block (the list version weighs the whole section). Streamed blocks (large text
    files) carry no language, and ingestion labels each paragraph anyway.
    """
    _check_strategy(settings)
    measure = measure or len
    held: tuple[tuple[int | None, tuple[str, ...]], list[Block]] | None = None  # an all-heading group
    for key, group in groupby(blocks, key=lambda b: (b.page, tuple(b.section))):
        if held is not None:
            yield from _held_headings(held, key[1], settings, measure)
            held = None
        members = iter(group)
        head: list[Block] = []
        for block in members:
            head.append(block)
            if block.kind != "heading":
                break
        else:  # only headings: whether they are kept depends on the next group's section
            held = (key, head)
            continue
        page, section = key
        language = _dominant_language(head)
        for text, metadata in _ipack(chain(head, members), settings, measure):
            yield ChunkDraft(text=text, section=list(section), page=page, language=language, metadata=metadata)
    if held is not None:
        yield from _held_headings(held, (), settings, measure)


def _held_headings(
    held: tuple[tuple[int | None, tuple[str, ...]], list[Block]],
    following: tuple[str, ...],
    settings: ChunkingSettings,
    measure: Callable[[str], int],
) -> Iterator[ChunkDraft]:
    (page, section), members = held
    if following[: len(section)] == section and following != section:
        return  # the next section is beneath it: its text travels in that trail (see chunk_blocks)
    language = _dominant_language(members)
    for text, metadata in _ipack(members, settings, measure):
        yield ChunkDraft(text=text, section=list(section), page=page, language=language, metadata=metadata)


def _check_strategy(settings: ChunkingSettings) -> None:
    if settings.strategy != "structure":
        raise StrategyNotBuilt(
            f"chunk strategy {settings.strategy!r} is not built yet; use 'structure' (the only one available)"
        )


def _pack(
    blocks: list[Block], settings: ChunkingSettings, measure: Callable[[str], int]
) -> list[tuple[str, dict[str, object]]]:
    return list(_ipack(blocks, settings, measure))


def _ipack(
    blocks: Iterable[Block], settings: ChunkingSettings, measure: Callable[[str], int]
) -> Iterator[tuple[str, dict[str, object]]]:
    """Pack blocks up to `size`. A record (spreadsheet row, JSON object) is always a chunk of its own."""
    current: list[str] = []

    def flush() -> Iterator[tuple[str, dict[str, object]]]:
        if current:
            yield ("\n\n".join(current), {})
            current.clear()

    headings_only = False  # `current` holds nothing but headings so far
    for block in blocks:
        if block.kind == "record":
            yield from flush()
            yield (block.text, dict(block.metadata))
            continue
        # A heading travels with the body beneath it: when only headings are
        # waiting, the body is split to leave them room rather than flushing
        # them as a paragraph of their own.
        budget = settings.size
        if current and headings_only and block.kind != "heading":
            budget = max(settings.size - measure("\n\n".join(current)) - 2, settings.size // 2)
        fitted = replace(settings, size=budget)
        if measure(block.text) <= budget:
            pieces = [block.text]
        elif block.kind == "code":
            pieces = _split_lines(block.text, fitted, measure)
        elif block.kind == "table":
            pieces = _split_table(block.text, fitted, measure)
        else:
            pieces = _split_long(block.text, fitted, measure)
        for piece in pieces:
            if current and measure("\n\n".join([*current, piece])) > settings.size:
                yield from flush()
            headings_only = (headings_only or not current) and block.kind == "heading"
            current.append(piece)
    yield from flush()


def _split_lines(code: str, settings: ChunkingSettings, measure: Callable[[str], int]) -> list[str]:
    """Code is split between lines, never inside one, so it stays code."""
    pieces: list[str] = []
    current: list[str] = []
    for line in code.splitlines():
        if current and measure("\n".join([*current, line])) > settings.size:
            pieces.append("\n".join(current))
            current = []
        current.append(line)
    if current:
        pieces.append("\n".join(current))
    return pieces


def _split_table(table: str, settings: ChunkingSettings, measure: Callable[[str], int]) -> list[str]:
    """A table too long for one chunk is split between rows; a Markdown header (row + |---| rule) repeats."""
    lines = table.splitlines()
    if len(lines) > 2 and "-" in lines[1] and set(lines[1].replace("|", "").replace(" ", "")) <= set("-:"):
        header, body = "\n".join(lines[:2]), "\n".join(lines[2:])
        room = ChunkingSettings(settings.strategy, max(1, settings.size - measure(header) - 1), 0, settings.unit)
        return [f"{header}\n{piece}" for piece in _split_lines(body, room, measure)]
    return _split_lines(table, settings, measure)


def _split_long(text: str, settings: ChunkingSettings, measure: Callable[[str], int]) -> list[str]:
    """Split at whitespace into windows of at most `size`, each repeating `overlap` of the last."""
    words = text.split()
    if measure is len:
        return _split_long_chars(words, settings)
    pieces: list[str] = []
    start = 0
    while start < len(words):
        end = start
        piece = ""
        while end < len(words):
            candidate = " ".join(words[start : end + 1])
            if end > start and measure(candidate) > settings.size:
                break
            piece, end = candidate, end + 1
        pieces.append(piece)
        if end >= len(words):
            break
        # Step back over as many words as fit in the overlap, but always move forward.
        back = end
        while back > start + 1 and measure(" ".join(words[back - 1 : end])) <= settings.overlap:
            back -= 1
        start = back if back < end else end
    return pieces


def _split_long_chars(words: list[str], settings: ChunkingSettings) -> list[str]:
    """_split_long for sizes in characters, the same windows without joining words to measure them.

    The length of " ".join(words[a:b]) is the letters of those words plus b - a - 1 spaces; joining each
    candidate made splitting a large text file quadratic in the window (most of its chunking time).
    """
    prefix = [0]
    for word in words:
        prefix.append(prefix[-1] + len(word))

    def length(a: int, b: int) -> int:
        return prefix[b] - prefix[a] + b - a - 1

    pieces: list[str] = []
    start = 0
    while start < len(words):
        end = start + 1  # the first word always, however long
        while end < len(words) and length(start, end + 1) <= settings.size:
            end += 1
        pieces.append(" ".join(words[start:end]))
        if end >= len(words):
            break
        back = end
        while back > start + 1 and length(back - 1, end) <= settings.overlap:
            back -= 1
        start = back if back < end else end
    return pieces


def _dominant_language(blocks: list[Block]) -> str:
    languages = [b.language for b in blocks if b.language]
    return max(set(languages), key=languages.count) if languages else ""
