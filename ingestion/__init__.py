"""Ingestion: parse a stored original into blocks, chunk, label languages, embed.

Public API:
    check_upload(filename, head)  -> raises UnsupportedFile before any work
    parse_document(path, filename, options, budgets) -> ParseResult (blocks, warnings, metadata, attachments)
    parse_document_bounded(...), document_extent_bounded(...) -> the same in a child process bounded in memory
        and time (bounded.py), and a document's pages and rows read before parsing (extent.py)
    Budgets, check_extent, OverBudget -> what one document may cost (budgets.py)
    chunk_blocks(blocks, settings) -> list[ChunkDraft]
    iter_text_blocks(path, ext), iter_chunk_blocks(blocks, settings) -> the same as streams, for large text files
    document_ingest(document_id=...) (services.documents) ties them together.
"""

from ._text import iter_text_blocks
from .blocks import Block, ChunkDraft
from .bounded import NoLongerWanted, OutOfMemory, OutOfTime, ParserCrashed
from .budgets import BlockBudget, Budgets, OverBudget, budget_warnings, memory_over, seconds_over
from .chunking import ChunkingSettings, chunk_blocks, iter_chunk_blocks
from .errors import NothingReadable, ParserUnavailable
from .extent import Extent, check_extent
from .formats import ACCEPTED_EXTENSIONS, UnsupportedFile, check_upload, extension_of
from .languages import detect_language, text_search_config
from .parsing import document_extent_bounded, parse_document, parse_document_bounded

__all__ = [
    "ACCEPTED_EXTENSIONS",
    "Block",
    "BlockBudget",
    "Budgets",
    "ChunkDraft",
    "ChunkingSettings",
    "Extent",
    "NoLongerWanted",
    "NothingReadable",
    "OutOfMemory",
    "OutOfTime",
    "OverBudget",
    "ParserCrashed",
    "ParserUnavailable",
    "UnsupportedFile",
    "budget_warnings",
    "check_extent",
    "check_upload",
    "chunk_blocks",
    "detect_language",
    "document_extent_bounded",
    "extension_of",
    "iter_chunk_blocks",
    "iter_text_blocks",
    "memory_over",
    "parse_document",
    "parse_document_bounded",
    "seconds_over",
    "text_search_config",
]
