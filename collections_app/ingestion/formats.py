"""Which files kbsite accepts, and refusing the ones it does not before any work."""

from __future__ import annotations

import zipfile
from io import BytesIO
from pathlib import PurePosixPath

# Families are parsed differently (see parsing.py); text formats have no
# signature and are never refused for their content.
TEXT_EXTENSIONS = {".txt", ".md"}
MARKUP_EXTENSIONS = {".html", ".htm"}
OFFICE_EXTENSIONS = {".docx"}
PDF_EXTENSIONS = {".pdf"}
ACCEPTED_EXTENSIONS = sorted(TEXT_EXTENSIONS | MARKUP_EXTENSIONS | OFFICE_EXTENSIONS | PDF_EXTENSIONS)


class UnsupportedFile(ValueError):
    """The upload is refused before any work; the message says why and what would be accepted."""


def extension_of(filename: str) -> str:
    return PurePosixPath(filename.replace("\\", "/")).suffix.lower()


def check_upload(filename: str, content: bytes) -> str:
    """Return the extension if kbsite can read this file, else raise UnsupportedFile."""
    ext = extension_of(filename)
    if ext not in ACCEPTED_EXTENSIONS:
        shown = ext or "(no extension)"
        raise UnsupportedFile(f"files of type {shown} are not accepted; accepted: {' '.join(ACCEPTED_EXTENSIONS)}")
    actual = _sniff(content)
    if ext in PDF_EXTENSIONS and actual != "pdf":
        raise UnsupportedFile(f"{filename} is named .pdf but its content is {actual or 'not a PDF'}")
    if ext in OFFICE_EXTENSIONS:
        if actual != "zip":
            raise UnsupportedFile(f"{filename} is named {ext} but its content is {actual or 'not a Word document'}")
        if not _is_word_package(content):
            raise UnsupportedFile(f"{filename} is named {ext} but its content is a ZIP archive, not a Word document")
    return ext


def _sniff(content: bytes) -> str:
    head = content[:1024].lstrip()
    if content.startswith(b"%PDF-"):
        return "pdf"
    if content.startswith(b"PK\x03\x04"):
        return "zip"
    lowered = head[:200].lower()
    if lowered.startswith((b"<!doctype html", b"<html")):
        return "an HTML page"
    if content.startswith((b"\x89PNG", b"\xff\xd8\xff", b"GIF8")):
        return "an image"
    return ""


def _is_word_package(content: bytes) -> bool:
    try:
        with zipfile.ZipFile(BytesIO(content)) as archive:
            return "word/document.xml" in archive.namelist()
    except zipfile.BadZipFile:
        return False
