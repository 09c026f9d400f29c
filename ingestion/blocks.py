from __future__ import annotations

from dataclasses import asdict, dataclass, field

# A heading is a title, not a paragraph: past this it is read as one (budgets.py). Markdown, Word and HTML headings
# that long are a missing line break, or a file built to hurt: a heading rides along in every paragraph's trail.
HEADING_MAX_CHARS = 300


@dataclass
class Block:
    """One element of parser output, in document order."""

    text: str
    kind: str  # heading | paragraph | list_item | table | code
    page: int | None = None
    # Heading trail, outermost first. A heading's own trail ends with itself.
    section: list[str] = field(default_factory=list)
    language: str = ""
    # Filterable values of a record (spreadsheet row, JSON object), by column.
    metadata: dict[str, object] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> Block:
        return cls(**data)


@dataclass
class ChunkDraft:
    """A paragraph as the chunker proposes it, before it is embedded and stored."""

    text: str
    section: list[str]
    page: int | None
    language: str = ""
    metadata: dict[str, object] = field(default_factory=dict)
    # "paragraph" (matched by searches) or "parent" (hierarchical: a section window, never embedded).
    kind: str = "paragraph"
    # A child's parent: the parent's index in the same list of drafts (hierarchical only).
    parent: int | None = None
    # True when this paragraph starts inside a block the previous one began (a `fixed` cut, a long block split
    # by `structure`): a window rejoins the two with a space, dropping the overlap they share. False: it starts
    # at a block boundary (a heading, a new paragraph, a page), and a window puts a paragraph break before it.
    continues: bool = False
    # An editor's hand, re-applied by a rebuild (services/documents/_edits.py): hidden from readers; edited text.
    hidden: bool = False
    edited: bool = False

    def embedding_text(self, title: str = "") -> str:
        # The breadcrumb (document title › heading trail) gives the embedding its context ("Refunds" means
        # something else under "Payroll"); it is not part of the stored text nor of the keyword index.
        trail = [title, *self.section] if title else list(self.section)
        if not trail:
            return self.text
        # Parser output kept from before the block budget, or a title from metadata (an email's subject), may
        # hold a part of any length: the model would read all of it, for every paragraph.
        trail = [part[:HEADING_MAX_CHARS] for part in trail]
        return " › ".join(trail) + "\n\n" + self.text


@dataclass
class Attachment:
    """A file found inside another (an email attachment): it becomes a document of its own."""

    filename: str
    content: bytes


@dataclass
class ParseResult:
    """What a parser hands back: blocks in order, plus what a person should know."""

    blocks: list[Block]
    # Shown on the document: things read differently than asked, rows skipped, ...
    warnings: list[str] = field(default_factory=list)
    # Document-level facts (email sender, date, subject, ...), filterable.
    metadata: dict[str, object] = field(default_factory=dict)
    attachments: list[Attachment] = field(default_factory=list)
    # Records only (spreadsheets, JSON/YAML arrays; ingestion/records.py), None for every other parser:
    # each column's name, type, proposed role, role used and sample values. services/metadata_schema.py
    # stores the roles on the document (editable) and declares the metadata columns in the collection.
    columns: list[dict[str, object]] | None = None
    # Each record block with where a person finds its row ("row 7 of the data (line 8 of the file)") and
    # the typed values of all its kept columns: a value the collection's schema refuses is reported by row
    # and column, and a column the collection already declares can be made filterable here too.
    record_rows: list[tuple[Block, str, dict[str, object]]] = field(default_factory=list)
