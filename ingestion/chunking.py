"""Chunking strategies: parser blocks → paragraphs (and, for `hierarchical`, their parent sections).

`CHUNK_STRATEGIES` is the vocabulary: every name a collection may hold, built or planned. The API, the
admin's choices, the preview and the docs read it; a planned name is refused with an error naming it.

- `structure`: consecutive blocks that share a page and a section are packed into one chunk up to `size`;
  a heading travels with the body beneath it; a chunk never crosses a page or section boundary; a block
  longer than `size` is split at whitespace with `overlap`. A heading with no body of its own is never a
  chunk: beneath it, its text travels in the next chunk's trail; otherwise (a title followed directly by a
  section heading) it leads the next chunk. Only a heading that ends the document stays alone.
- `fixed`: each block on its own, never joined; one longer than `size` is cut at whitespace found in the
  last tenth of the window (else at the window's end), the next piece repeating `overlap`.
- `page`: one chunk per page (or slide); a page longer than `size` is cut between blocks, then at whitespace.
- `hierarchical`: children exactly as `structure` makes them, plus parents: consecutive children of one
  section packed up to `parent_size` (4 times `size` unless set). Parents follow the children in the list,
  carry `kind="parent"`, and each child's `parent` is its parent's index in the list.

`size` is a ceiling in the unit the caller measures with (`measure`: characters, or the embedding model's
tokens).

Every chunk says whether it starts inside a block the previous chunk began (`ChunkDraft.continues`: a cut), so
a search window rejoins the two with a space, and any other two with a paragraph break.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from itertools import chain, groupby

from infra.errors import Invalid

from .blocks import Block, ChunkDraft

# Every strategy name, and whether its chunker exists. Planned names are part of the vocabulary (a
# collection form lists them, the API names them in its refusal) until they are built.
BUILT, PLANNED = "built", "planned"
CHUNK_STRATEGIES: dict[str, str] = {
    "structure": BUILT,
    "fixed": BUILT,
    "hierarchical": BUILT,
    "page": BUILT,
    "semantic": PLANNED,
}


def built_strategies() -> list[str]:
    return [name for name, state in CHUNK_STRATEGIES.items() if state == BUILT]


class StrategyNotBuilt(Invalid):
    """The collection names a chunk strategy that is planned but not built yet (or not a strategy at all)."""


@dataclass(frozen=True)
class ChunkingSettings:
    strategy: str = "structure"
    size: int = 1000
    overlap: int = 200
    unit: str = "chars"
    # hierarchical only: the largest parent section; None = 4 times size.
    parent_size: int | None = None

    @property
    def parent_ceiling(self) -> int:
        return self.parent_size or 4 * self.size


# The one set of chunking defaults: a collection's model fields, hence the API (its answers and schema) and the
# admin's add form, start from it. 1,000 characters with 200 of overlap: what the API has always made.
CHUNKING_DEFAULTS = ChunkingSettings()


def overlap_following(size: int) -> int:
    """The overlap a new size brings along when no overlap is given: the defaults' share of it (200 of 1,000,
    a fifth), rounded down, and always below the size."""
    return max(0, min(size * CHUNKING_DEFAULTS.overlap // CHUNKING_DEFAULTS.size, size - 1))


def chunk_blocks(
    blocks: Iterable[Block],
    settings: ChunkingSettings,
    measure: Callable[[str], int] | None = None,
) -> list[ChunkDraft]:
    _check_strategy(settings)
    measure = measure or len
    if settings.strategy == "fixed":
        return _fixed(blocks, settings, measure)
    if settings.strategy == "page":
        return _by_page(blocks, settings, measure)
    children = _structure(blocks, settings, measure)
    if settings.strategy == "hierarchical":
        return children + _parents(children, settings, measure)
    return children


def _structure(blocks: Iterable[Block], settings: ChunkingSettings, measure: Callable[[str], int]) -> list[ChunkDraft]:
    drafts: list[ChunkDraft] = []
    groups = [(key, list(group)) for key, group in groupby(blocks, key=lambda b: (b.page, tuple(b.section)))]
    carried: list[Block] = []  # lone headings waiting for the content that follows them
    for index, ((page, section), members) in enumerate(groups):
        if all(b.kind == "heading" for b in members) and index + 1 < len(groups):
            # A heading with no body of its own never is a paragraph of its own. One whose body follows in a
            # deeper section adds nothing the next chunk's trail does not already carry; any other (a title
            # followed directly by a section heading) leads the content that follows it.
            following = groups[index + 1][0][1]
            if not _beneath(section, following):
                carried.extend(members)
            continue
        # A lone heading at the very end (a one-line text file, a closing title) is content and is kept.
        language = _dominant_language(members)
        for text, metadata, continues in _ipack([*carried, *members], settings, measure):
            drafts.append(
                ChunkDraft(
                    text=text, section=list(section), page=page, language=language, metadata=metadata,
                    continues=continues,
                )
            )  # fmt: skip
        carried = []
    return drafts


def _beneath(section: tuple[str, ...], following: tuple[str, ...]) -> bool:
    """Whether the `following` trail lies strictly beneath `section` (its heading is in that trail)."""
    return following[: len(section)] == section and following != section


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
    Only `structure` streams (a large text file is read with it whatever the collection says: the file is
    its own parser output, and the other strategies need the whole document).
    """
    _check_strategy(settings)
    measure = measure or len
    held: tuple[tuple[int | None, tuple[str, ...]], list[Block]] | None = None  # an all-heading group
    carried: list[Block] = []  # lone headings that lead the next content (see _structure)
    for key, group in groupby(blocks, key=lambda b: (b.page, tuple(b.section))):
        if held is not None and not _beneath(held[0][1], key[1]):
            carried.extend(held[1])
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
        for text, metadata, continues in _ipack(chain(carried, head, members), settings, measure):
            yield ChunkDraft(
                text=text, section=list(section), page=page, language=language, metadata=metadata, continues=continues
            )
        carried = []
    if held is not None:  # a closing heading is content, with the lone headings before it
        (page, section), closing = held
        language = _dominant_language(closing)
        for text, metadata, continues in _ipack([*carried, *closing], settings, measure):
            yield ChunkDraft(
                text=text, section=list(section), page=page, language=language, metadata=metadata, continues=continues
            )


def _check_strategy(settings: ChunkingSettings) -> None:
    check_strategy(settings.strategy)


def check_strategy(name: str) -> None:
    """Refuse a strategy whose chunker does not exist, naming it and the ones that do."""
    state = CHUNK_STRATEGIES.get(name)
    if state == BUILT:
        return
    available = ", ".join(built_strategies())
    if state == PLANNED:
        raise StrategyNotBuilt(f"chunk strategy {name!r} is planned but not built yet; use one of {available}")
    raise StrategyNotBuilt(f"chunk strategy {name!r} does not exist; use one of {available}")


def _block_pieces(
    block: Block,
    settings: ChunkingSettings,
    measure: Callable[[str], int],
    *,
    cut_text: Callable[[str, ChunkingSettings, Callable[[str], int]], list[str]],
) -> list[str]:
    """A block that fits is one piece; a longer one is cut by its kind: tables between rows (each piece
    repeating the header), code between lines, prose by `cut_text`."""
    if measure(block.text) <= settings.size:
        return [block.text]
    if block.kind == "table":
        return _split_table(block.text, settings, measure)
    if block.kind == "code":
        return _split_lines(block.text, settings, measure)
    return cut_text(block.text, settings, measure)


def _fixed(blocks: Iterable[Block], settings: ChunkingSettings, measure: Callable[[str], int]) -> list[ChunkDraft]:
    """Each parser block is a chunk of its own; only a block longer than `size` is cut."""
    drafts: list[ChunkDraft] = []
    for block in blocks:
        if block.kind == "record":
            pieces = [block.text]
        else:
            pieces = _block_pieces(block, settings, measure, cut_text=_cut_fixed)
        metadata = dict(block.metadata) if block.kind == "record" else {}
        for number, piece in enumerate(pieces):
            drafts.append(
                ChunkDraft(
                    text=piece, section=list(block.section), page=block.page, language=block.language,
                    metadata=metadata, continues=number > 0,
                )
            )  # fmt: skip
    return drafts


def _cut_fixed(text: str, settings: ChunkingSettings, measure: Callable[[str], int]) -> list[str]:
    """Windows of at most `size`: each ends at the last whitespace within its last tenth (else where the size
    runs out), and the next starts `overlap` before that end, at a word's start when one is near."""
    pieces: list[str] = []
    start, length = 0, len(text)
    while start < length:
        while start < length and text[start].isspace():
            start += 1
        if start >= length:
            break
        end = _fit(text, start, settings.size, measure)
        if end < length:
            floor = start + max(1, (end - start) * 9 // 10)
            cut = max((i for i in range(end, floor - 1, -1) if i < length and text[i].isspace()), default=None)
            if cut is not None and cut > start:
                end = cut
        piece = text[start:end].strip()
        if piece:
            pieces.append(piece)
        if end >= length:
            break
        back = _back_by(text, start, end, settings.overlap, measure)
        start = back if back > start else end
    return pieces


def _fit(text: str, start: int, size: int, measure: Callable[[str], int]) -> int:
    """The largest end such that text[start:end] measures at most `size` (at least one character)."""
    if measure is len:
        return min(len(text), start + size)
    low, high = start + 1, len(text)
    if measure(text[start:high]) <= size:
        return high
    while low < high:  # the last end that fits lies in [low, high)
        middle = (low + high + 1) // 2
        if measure(text[start:middle]) <= size:
            low = middle
        else:
            high = middle - 1
    return low


def _back_by(text: str, start: int, end: int, overlap: int, measure: Callable[[str], int]) -> int:
    """Where the next window starts: `overlap` before `end`, moved forward to a word's start."""
    if overlap <= 0:
        return end
    back = end
    while back > start + 1 and measure(text[back - 1 : end]) <= overlap:
        back -= 1
    # Start at a word, not inside one: forward to just past the nearest whitespace before `end`.
    space = text.find(" ", back, end)
    if 0 <= space < end - 1:
        back = space + 1
    return back


def _by_page(blocks: Iterable[Block], settings: ChunkingSettings, measure: Callable[[str], int]) -> list[ChunkDraft]:
    """One chunk per page (slide); a page longer than the ceiling is cut between blocks, then at whitespace."""
    drafts: list[ChunkDraft] = []
    for page, group in groupby(blocks, key=lambda b: b.page):
        members = list(group)
        section = _common_trail([b.section for b in members if b.kind != "heading"] or [b.section for b in members])
        language = _dominant_language(members)
        flat = [replace(b, kind="paragraph") if b.kind == "record" else b for b in members]
        for text, _, continues in _ipack(flat, settings, measure):
            drafts.append(ChunkDraft(text=text, section=section, page=page, language=language, continues=continues))
    return drafts


def _common_trail(trails: list[list[str]]) -> list[str]:
    common = list(trails[0]) if trails else []
    for trail in trails[1:]:
        size = 0
        while size < min(len(common), len(trail)) and common[size] == trail[size]:
            size += 1
        common = common[:size]
    return common


def _parents(children: list[ChunkDraft], settings: ChunkingSettings, measure: Callable[[str], int]) -> list[ChunkDraft]:
    """Parents: consecutive children of one section packed up to the parent ceiling (they may cross a page
    inside their section); a longer section becomes several parents. Sets each child's `parent` to its
    parent's index in `children + parents`."""
    windows: list[list[int]] = []
    for _, run in groupby(range(len(children)), key=lambda i: tuple(children[i].section)):
        window: list[int] = []
        for index in run:
            candidate = "\n\n".join([*(children[i].text for i in window), children[index].text])
            if window and measure(candidate) > settings.parent_ceiling:
                windows.append(window)
                window = []
            window.append(index)
        windows.append(window)
    parents: list[ChunkDraft] = []
    for window in windows:
        members = [children[i] for i in window]
        for child in members:
            child.parent = len(children) + len(parents)
        parents.append(
            ChunkDraft(
                text="\n\n".join(m.text for m in members),
                section=list(members[0].section),
                page=members[0].page,
                language=_dominant_language_of(members),
                kind="parent",
            )
        )
    return parents


def _dominant_language_of(drafts: list[ChunkDraft]) -> str:
    languages = [d.language for d in drafts if d.language]
    return max(set(languages), key=languages.count) if languages else ""


def _ipack(
    blocks: Iterable[Block], settings: ChunkingSettings, measure: Callable[[str], int]
) -> Iterator[tuple[str, dict[str, object], bool]]:
    """Pack blocks up to `size`: (text, metadata, continues), `continues` when the chunk starts inside a block the
    previous chunk began. A record (spreadsheet row, JSON object) is always a chunk of its own."""
    current: list[str] = []
    starts_inside = False  # `current` starts with a piece that is not its block's first

    def flush() -> Iterator[tuple[str, dict[str, object], bool]]:
        if current:
            yield ("\n\n".join(current), {}, starts_inside)
            current.clear()

    headings_only = False  # `current` holds nothing but headings so far
    for block in blocks:
        if block.kind == "record":
            yield from flush()
            yield (block.text, dict(block.metadata), False)
            continue
        # A heading travels with the body beneath it: when only headings are
        # waiting, the body is split to leave them room rather than flushing
        # them as a paragraph of their own.
        budget = settings.size
        if current and headings_only and block.kind != "heading":
            budget = max(settings.size - measure("\n\n".join(current)) - 2, settings.size // 2)
        pieces = _block_pieces(block, replace(settings, size=budget), measure, cut_text=_split_long)
        for number, piece in enumerate(pieces):
            if current and measure("\n\n".join([*current, piece])) > settings.size:
                yield from flush()
            headings_only = (headings_only or not current) and block.kind == "heading"
            if not current:
                starts_inside = number > 0
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
        room = replace(settings, size=max(1, settings.size - measure(header) - 1), overlap=0)
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
