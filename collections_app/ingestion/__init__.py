"""Ingestion: parse a stored original into blocks, chunk, label languages, embed.

Public API:
    check_upload(filename, head)  -> raises UnsupportedFile before any work
    parse_document(path, filename, options) -> ParseResult (blocks, warnings, metadata, attachments)
    chunk_blocks(blocks, settings) -> list[ChunkDraft]
    iter_text_blocks(path, ext), iter_chunk_blocks(blocks, settings) -> the same as streams, for large text files
    document_ingest(document_id=...) (services.documents) ties them together.
"""

from ._text import iter_text_blocks
from .blocks import Block, ChunkDraft
from .chunking import ChunkingSettings, chunk_blocks, iter_chunk_blocks
from .errors import NothingReadable, ParserUnavailable
from .formats import ACCEPTED_EXTENSIONS, UnsupportedFile, check_upload, extension_of
from .languages import detect_language, text_search_config
from .parsing import parse_document

__all__ = [
    "ACCEPTED_EXTENSIONS",
    "Block",
    "ChunkDraft",
    "ChunkingSettings",
    "NothingReadable",
    "ParserUnavailable",
    "UnsupportedFile",
    "check_upload",
    "chunk_blocks",
    "detect_language",
    "extension_of",
    "iter_chunk_blocks",
    "iter_text_blocks",
    "parse_document",
    "text_search_config",
]
