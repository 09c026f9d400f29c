"""Email (.eml, .msg): the body is the text, the subject its heading; attachments become documents of their own.

- .eml: the standard library's `email` package with `policy.default`, which decodes
  RFC 2047 headers, charsets and transfer encodings and picks the body for us
  (`get_body`: plain text preferred, HTML otherwise).
- .msg (Outlook): python-oxmsg rather than extract-msg. It is MIT-licensed, small and
  pure Python (olefile underneath), and already installed as unstructured's own .msg
  reader. extract-msg is GPL-3.0, which would bind the whole platform's licence, and
  brings a dozen more dependencies for features we do not use (RTF de-encapsulation,
  saving to PDF). What python-oxmsg does not do, decompress an RTF-only body, is rare
  in practice: Outlook stores a plain-text body beside it.

Metadata (document-level, copied onto every paragraph): `author` (sender's address),
`created` (ISO 8601), `subject`, `recipients` (addresses) and `thread`, an id shared by
every message of one conversation.
"""

from __future__ import annotations

import base64
import datetime as dt
import re
from dataclasses import dataclass, field
from email import policy
from email.message import EmailMessage, MIMEPart
from email.parser import BytesParser, HeaderParser
from email.utils import getaddresses, parsedate_to_datetime
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from .blocks import Attachment, Block, ParseResult


def parse_email(path: Path, ext: str, options: dict[str, Any]) -> ParseResult:
    mail = _read_msg(path) if ext == ".msg" else _read_eml(path)
    return mail.to_result()


@dataclass
class _Mail:
    """What both readers extract, before it becomes blocks."""

    subject: str = ""
    plain: str = ""
    html: str = ""
    sender: str = ""
    recipients: list[str] = field(default_factory=list)
    date: dt.datetime | None = None
    thread: str = ""
    attachments: list[Attachment] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def to_result(self) -> ParseResult:
        subject = " ".join(self.subject.split())
        section = [subject] if subject else []
        blocks = [Block(text=subject, kind="heading", section=section)] if subject else []
        body = self.plain if self.plain.strip() else html_to_text(self.html)
        blocks += [Block(text=p, kind="paragraph", section=section) for p in _paragraphs(body)]
        metadata: dict[str, object] = {}
        if self.sender:
            metadata["author"] = self.sender
        if self.date is not None:
            date = self.date if self.date.tzinfo else self.date.replace(tzinfo=dt.UTC)
            metadata["created"] = date.isoformat()
        if subject:
            metadata["subject"] = subject
        if self.recipients:
            metadata["recipients"] = self.recipients
        thread = self.thread or (f"subject:{normalise_subject(subject)}" if subject else "")
        if thread:
            metadata["thread"] = thread
        return ParseResult(blocks=blocks, warnings=self.warnings, metadata=metadata, attachments=self.attachments)


# --- .eml -------------------------------------------------------------------------------------------------------


def _read_eml(path: Path) -> _Mail:
    with path.open("rb") as fp:
        message = BytesParser(policy=policy.default).parse(fp)
    assert isinstance(message, EmailMessage)  # policy.default always builds EmailMessage
    mail = _Mail(
        subject=str(message.get("subject", "") or ""),
        sender=_first_address(message.get_all("from") or message.get_all("sender") or []),
        recipients=_addresses([*_all(message, "to"), *_all(message, "cc"), *_all(message, "bcc")]),
        date=_date(message.get("date")),
        thread=thread_of(message),
    )
    for preference in ("plain", "html"):
        part = message.get_body(preferencelist=(preference,))
        if part is not None:
            setattr(mail, preference, _text_of(part))
    referenced = set(re.findall(r"cid:([^\"'\s)>]+)", mail.html, flags=re.IGNORECASE))
    for part in message.iter_attachments():
        attachment = _eml_attachment(part, referenced)
        if attachment is not None:
            mail.attachments.append(attachment)
    return mail


def _eml_attachment(part: EmailMessage, referenced_cids: set[str]) -> Attachment | None:
    filename = part.get_filename()
    if part.get_content_type() == "message/rfc822":
        # A forwarded message: it becomes an .eml document of its own.
        inner = part.get_content()
        if not isinstance(inner, EmailMessage):
            return None
        name = filename or _safe_name(str(inner.get("subject", "") or "")) or "forwarded message"
        return Attachment(filename=name if name.lower().endswith(".eml") else f"{name}.eml", content=inner.as_bytes())
    if not filename:
        return None  # inline images and other nameless parts are part of the body, not attachments
    content_id = (part.get("content-id") or "").strip("<> ")
    if part.get_content_maintype() == "image" and content_id and content_id in referenced_cids:
        return None  # a logo or signature image shown inside the HTML body
    payload = part.get_payload(decode=True)
    return Attachment(filename=filename, content=payload if isinstance(payload, bytes) else b"")


def _text_of(part: MIMEPart) -> str:
    try:
        content = part.get_content()
    except (LookupError, UnicodeError):  # an unknown or lying charset: read what can be read
        payload = part.get_payload(decode=True)
        content = payload.decode("utf-8", errors="replace") if isinstance(payload, bytes) else ""
    return content if isinstance(content, str) else ""


def _all(message: EmailMessage, name: str) -> list[str]:
    return [str(v) for v in (message.get_all(name) or [])]


def _date(value: object) -> dt.datetime | None:
    if value is None:
        return None
    parsed = getattr(value, "datetime", None)
    if isinstance(parsed, dt.datetime):
        return parsed
    try:
        return parsedate_to_datetime(str(value))
    except (TypeError, ValueError):
        return None


# --- .msg -------------------------------------------------------------------------------------------------------

# MAPI property ids python-oxmsg has no accessor for.
_PID_CONVERSATION_INDEX = 0x0071
_PID_TRANSPORT_MESSAGE_HEADERS = 0x007D
_PID_INTERNET_MESSAGE_ID = 0x1035
_PID_ATTACH_CONTENT_ID = 0x3712
_PID_ATTACH_METHOD_EMBEDDED_MESSAGE = 5


def _read_msg(path: Path) -> _Mail:
    from oxmsg import Message

    message = Message.load(str(path))
    props = message.properties
    headers = HeaderParser(policy=policy.default).parsestr(_str(props.str_prop_value(_PID_TRANSPORT_MESSAGE_HEADERS)))
    html = _str(message.html_body)
    mail = _Mail(
        subject=_str(message.subject),
        plain=_str(message.body),
        html=html,
        sender=_first_address([_str(message.sender)]),
        recipients=_addresses([_recipient(_str(r.name), _str(r.email_address)) for r in message.recipients]),
        date=message.sent_date or _date(headers.get("date")),
    )
    if not mail.recipients:
        mail.recipients = _addresses([*_all(headers, "to"), *_all(headers, "cc")])
    mail.thread = thread_of(
        headers,
        message_id=_str(props.str_prop_value(_PID_INTERNET_MESSAGE_ID)),
        conversation_index=props.binary_prop_value(_PID_CONVERSATION_INDEX),
    )
    referenced = set(re.findall(r"cid:([^\"'\s)>]+)", html, flags=re.IGNORECASE))
    for attachment in message.attachments:
        aprops = attachment.properties
        name = _str(attachment.file_name or aprops.str_prop_value(0x3704))  # the long name, else the 8.3 one
        if aprops.int_prop_value(0x3705) == _PID_ATTACH_METHOD_EMBEDDED_MESSAGE:
            mail.warnings.append(f"attached message {name or '(unnamed)'} skipped: embedded Outlook items are not read")
            continue
        content_id = _str(aprops.str_prop_value(_PID_ATTACH_CONTENT_ID)).strip("<> ")
        if not name or (content_id and content_id in referenced):
            continue  # inline images of the body, as for .eml
        mail.attachments.append(Attachment(filename=name, content=attachment.file_bytes or b""))
    return mail


def _str(value: str | None) -> str:
    # Some writers keep a string property's terminating null in its stream; python-oxmsg hands it back.
    return (value or "").replace("\x00", "")


def _recipient(name: str, address: str) -> str:
    return f'"{name}" <{address}>' if address else name


# --- shared -----------------------------------------------------------------------------------------------------


def _addresses(values: list[str]) -> list[str]:
    """Bare addresses, lower-cased and in order, each once: what a filter is written with."""
    seen: list[str] = []
    for _name, address in getaddresses([v for v in values if v]):
        address = address.strip().lower()
        if "@" in address and address not in seen:
            seen.append(address)
    return seen


def _first_address(values: list[str]) -> str:
    found = _addresses([str(v) for v in values])
    return found[0] if found else ""


# Reply and forward prefixes of common mail clients, in several languages ("Re:", "Fwd:", "AW:", "SV:", ...).
_REPLY_PREFIX = re.compile(
    r"^\s*((re|fwd?|aw|wg|sv|vs|antw|tr|rif|odp|réf|ynt|答复|回复|转发)\s*(\[\d+\])?\s*:\s*)+", re.IGNORECASE
)


def normalise_subject(subject: str) -> str:
    """The subject without reply/forward prefixes, case or extra spaces: what a conversation shares."""
    return " ".join(_REPLY_PREFIX.sub("", subject).split()).lower()


def thread_of(
    headers: EmailMessage,
    *,
    message_id: str = "",
    conversation_index: bytes | None = None,
) -> str:
    """An id every message of one conversation shares, from the best evidence there is.

    The root of References (RFC 5322: the first id is the thread's first message), else
    In-Reply-To, else the message's own Message-ID (a first message: its replies name it
    as their root), else Outlook's Thread-Index / conversation index (its first 22 bytes
    are the conversation's header block; replies only append to it). The caller falls
    back on the normalised subject.
    """
    references = re.findall(r"<[^<>]+>", str(headers.get("references", "") or ""))
    if references:
        return references[0].strip("<>")
    in_reply_to = re.findall(r"<[^<>]+>", str(headers.get("in-reply-to", "") or ""))
    if in_reply_to:
        return in_reply_to[0].strip("<>")
    own = str(headers.get("message-id", "") or "") or message_id
    if own.strip():
        return own.strip().strip("<>")
    index = conversation_index
    if index is None and headers.get("thread-index"):
        try:
            index = base64.b64decode(str(headers["thread-index"]), validate=False)
        except ValueError:
            index = None
    if index and len(index) >= 22:
        return "thread-index:" + index[:22].hex()
    return ""


def _safe_name(subject: str) -> str:
    return re.sub(r"[^\w .,()-]+", "_", subject).strip(" ._")[:100]


def _paragraphs(text: str) -> list[str]:
    """Split a body at blank lines; lines of one paragraph keep their breaks (addresses, lists, signatures)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    parts = re.split(r"\n[ \t]*\n+", text)
    return [p.strip("\n").rstrip() for p in parts if p.strip()]


# HTML bodies: converted to text, not parsed as a document. Email HTML is layout
# (tables for columns, <br> for lines), not structure; its headings are rarely real.
_BLOCK_TAGS = {
    "p", "div", "br", "li", "tr", "table", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre", "hr",
    "ul", "ol", "section", "article", "header", "footer",
}  # fmt: skip
_SKIPPED_TAGS = {"script", "style", "head", "title"}


class _TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIPPED_TAGS:
            self._skipping += 1
        elif tag in ("td", "th"):
            self.parts.append(" ")
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n\n" if tag in ("p", "div", "table", "blockquote", "hr") or tag[0] == "h" else "\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIPPED_TAGS:
            self._skipping = max(0, self._skipping - 1)
        elif tag in _BLOCK_TAGS and tag != "br":
            self.parts.append("\n\n" if tag in ("p", "div", "table", "blockquote") or tag[0] == "h" else "\n")

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self.parts.append(re.sub(r"\s+", " ", data))


def html_to_text(html: str) -> str:
    if not html.strip():
        return ""
    extractor = _TextExtractor()
    extractor.feed(html)
    extractor.close()
    lines = [line.strip() for line in "".join(extractor.parts).replace("\xa0", " ").split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
