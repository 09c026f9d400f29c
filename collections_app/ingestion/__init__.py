"""Ingestion: parse a stored original into blocks, chunk, label languages, embed.

Public API:
    check_upload(filename, head)  -> raises UnsupportedFile before any work
    parse_document(path, filename, options) -> ParseResult (blocks, warnings, metadata, attachments)
    chunk_blocks(blocks, settings) -> list[ChunkDraft]
    document_ingest(document_id=...) (services.documents) ties them together.
"""

from .blocks import Block, ChunkDraft
from .chunking import ChunkingSettings, chunk_blocks
from .formats import ACCEPTED_EXTENSIONS, UnsupportedFile, check_upload, extension_of
from .languages import detect_language, text_search_config
from .parsing import NothingReadable, parse_document

__all__ = [
    "ACCEPTED_EXTENSIONS",
    "Block",
    "ChunkDraft",
    "ChunkingSettings",
    "NothingReadable",
    "UnsupportedFile",
    "check_upload",
    "chunk_blocks",
    "detect_language",
    "extension_of",
    "parse_document",
    "text_search_config",
]
