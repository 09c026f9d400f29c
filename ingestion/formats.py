"""Which files kbsite accepts, and refusing the ones it does not before any work.

Each extension belongs to a family; the family decides the parser (parsing.py).
Binary formats must carry their signature; text formats have none and are
never refused for their content.
"""

from __future__ import annotations

import zipfile
from io import BytesIO
from pathlib import PurePosixPath

from infra.errors import Invalid

FAMILIES: dict[str, str] = {
    **dict.fromkeys([".pdf"], "pdf"),
    **dict.fromkeys([".docx", ".pptx", ".rtf", ".odt", ".odp", ".epub"], "office"),
    **dict.fromkeys([".html", ".htm", ".md", ".txt"], "markup"),
    **dict.fromkeys([".csv", ".tsv", ".xlsx", ".xls", ".ods"], "spreadsheet"),
    **dict.fromkeys([".json", ".yaml", ".yml", ".xml"], "structured"),
    **dict.fromkeys([".eml", ".msg"], "email"),
    **dict.fromkeys([".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".gif", ".webp", ".jp2"], "image"),
    **dict.fromkeys(
        [
            ".py",
            ".js",
            ".ts",
            ".tsx",
            ".jsx",
            ".java",
            ".go",
            ".rs",
            ".rb",
            ".php",
            ".c",
            ".h",
            ".cpp",
            ".hpp",
            ".cs",
            ".kt",
            ".swift",
            ".scala",
            ".sh",
            ".sql",
            ".lua",
            ".r",
            ".pl",
            ".css",
            ".toml",
            ".ini",
            ".cfg",
        ],
        "source",
    ),
    **dict.fromkeys([".zip"], "archive"),
}
ACCEPTED_EXTENSIONS = sorted(FAMILIES)

# Extensions whose content must start with a known signature (or be a
# particular kind of ZIP package), and what that signature is called.
_ZIP_PACKAGES = {
    ".docx": "word/document.xml",
    ".pptx": "ppt/presentation.xml",
    ".xlsx": "xl/workbook.xml",
}
_ODF_MIMETYPES = {
    ".odt": b"application/vnd.oasis.opendocument.text",
    ".odp": b"application/vnd.oasis.opendocument.presentation",
    ".ods": b"application/vnd.oasis.opendocument.spreadsheet",
    ".epub": b"application/epub+zip",
}
_SIGNATURES: dict[str, tuple[bytes, ...]] = {
    ".pdf": (b"%PDF-",),
    ".rtf": (b"{\\rtf",),
    ".xls": (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1",),
    ".msg": (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1",),
    ".png": (b"\x89PNG\r\n\x1a\n",),
    ".jpg": (b"\xff\xd8\xff",),
    ".jpeg": (b"\xff\xd8\xff",),
    ".gif": (b"GIF87a", b"GIF89a"),
    ".bmp": (b"BM",),
    ".tif": (b"II*\x00", b"MM\x00*"),
    ".tiff": (b"II*\x00", b"MM\x00*"),
    ".jp2": (b"\x00\x00\x00\x0cjP  \r\n\x87\n", b"\xff\x4f\xff\x51"),
    ".zip": (b"PK\x03\x04", b"PK\x05\x06"),
}


class UnsupportedFile(Invalid):
    """The upload is refused before any work; the message says why and what would be accepted."""

    field = "file"


def extension_of(filename: str) -> str:
    return PurePosixPath(filename.replace("\\", "/")).suffix.lower()


def family_of(filename: str) -> str:
    return FAMILIES.get(extension_of(filename), "")


def check_extension(filename: str) -> str:
    ext = extension_of(filename)
    if ext not in FAMILIES:
        shown = ext or "(no extension)"
        raise UnsupportedFile(f"files of type {shown} are not accepted; accepted: {' '.join(ACCEPTED_EXTENSIONS)}")
    return ext


def check_upload(filename: str, content: bytes) -> str:
    """Return the extension if kbsite can read this file, else raise UnsupportedFile saying what it is."""
    ext = check_extension(filename)
    if not content:
        return ext  # nothing to contradict: ingestion ends it in `error` ("no text could be read")
    if ext == ".webp":
        if not (content[:4] == b"RIFF" and content[8:12] == b"WEBP"):
            raise _contradiction(filename, ext, content)
    elif ext in _SIGNATURES:
        if not content.startswith(_SIGNATURES[ext]):
            raise _contradiction(filename, ext, content)
    elif ext in _ZIP_PACKAGES:
        if not _zip_has(content, _ZIP_PACKAGES[ext]):
            raise _contradiction(filename, ext, content)
    elif ext in _ODF_MIMETYPES and _zip_mimetype(content) != _ODF_MIMETYPES[ext]:
        raise _contradiction(filename, ext, content)
    return ext


def describe_content(content: bytes) -> str:
    """What a file really is, in words a person knows."""
    if content.startswith(b"%PDF-"):
        return "a PDF"
    if content.startswith(b"PK\x03\x04"):
        for ext, member in _ZIP_PACKAGES.items():
            if _zip_has(content, member):
                return f"a {ext} document"
        mimetype = _zip_mimetype(content)
        for ext, expected in _ODF_MIMETYPES.items():
            if mimetype == expected:
                return f"an {ext} document"
        return "a ZIP archive"
    if content.startswith(b"\xd0\xcf\x11\xe0"):
        return "an old Microsoft Office (OLE) file"
    if content.startswith(b"{\\rtf"):
        return "an RTF document"
    head = content[:512].lstrip().lower()
    if head.startswith((b"<!doctype html", b"<html")) or b"<html" in head:
        return "an HTML page"
    if head.startswith(b"<?xml"):
        return "an XML document"
    for ext in (".png", ".jpg", ".gif", ".bmp", ".tif", ".jp2"):
        if content.startswith(_SIGNATURES[ext]):
            return f"a {ext.lstrip('.').upper()} image"
    if not content:
        return "empty"
    try:
        content[:4096].decode("utf-8")
    except UnicodeDecodeError:
        return "binary data of an unknown kind"
    return "plain text"


def _contradiction(filename: str, ext: str, content: bytes) -> UnsupportedFile:
    name = PurePosixPath(filename.replace("\\", "/")).name
    return UnsupportedFile(f"{name} is named {ext} but its content is {describe_content(content)}")


def _zip_has(content: bytes, member: str) -> bool:
    try:
        with zipfile.ZipFile(BytesIO(content)) as archive:
            return member in archive.namelist()
    except zipfile.BadZipFile:
        return False


def _zip_mimetype(content: bytes) -> bytes:
    try:
        with zipfile.ZipFile(BytesIO(content)) as archive:
            return archive.read("mimetype").strip() if "mimetype" in archive.namelist() else b""
    except zipfile.BadZipFile:
        return b""
