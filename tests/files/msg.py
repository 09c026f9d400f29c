"""A small writer of Outlook .msg files, for tests: real MS-CFB v3 compound files laid out per MS-OXMSG.

No Python library writes .msg (extract-msg and python-oxmsg only read), so the tests
build one from the specifications: [MS-CFB] (sectors, FAT, mini stream, directory)
and [MS-OXMSG] (property streams, recipient and attachment storages). Only what a
plain email needs is written: Unicode string, integer, time and binary properties.
"""

from __future__ import annotations

import datetime as dt
import struct
from dataclasses import dataclass, field

# --- MS-OXMSG ---------------------------------------------------------------------------------------------------

PT_INT32, PT_BOOLEAN, PT_TIME, PT_UNICODE, PT_BINARY = 0x0003, 0x000B, 0x0040, 0x001F, 0x0102

PID_MESSAGE_CLASS = 0x001A
PID_SUBJECT = 0x0037
PID_CLIENT_SUBMIT_TIME = 0x0039
PID_CONVERSATION_TOPIC = 0x0070
PID_CONVERSATION_INDEX = 0x0071
PID_TRANSPORT_MESSAGE_HEADERS = 0x007D
PID_SENDER_NAME = 0x0C1A
PID_SENDER_EMAIL_ADDRESS = 0x0C1F
PID_BODY = 0x1000
PID_INTERNET_MESSAGE_ID = 0x1035
PID_STORE_SUPPORT_MASK = 0x340D
PID_RECIPIENT_TYPE = 0x0C15
PID_DISPLAY_NAME = 0x3001
PID_EMAIL_ADDRESS = 0x3003
PID_SMTP_ADDRESS = 0x39FE
PID_ATTACH_DATA_BINARY = 0x3701
PID_ATTACH_METHOD = 0x3705
PID_ATTACH_LONG_FILENAME = 0x3707
PID_ATTACH_MIME_TAG = 0x370E

STORE_UNICODE_OK = 0x00040000
ATTACH_BY_VALUE = 1
MAPI_TO = 1


@dataclass
class MsgAttachment:
    filename: str
    content: bytes
    mime_type: str = "application/octet-stream"


@dataclass
class MsgRecipient:
    name: str
    address: str


@dataclass
class MsgSpec:
    subject: str
    body: str
    sender_name: str
    sender_address: str
    sent: dt.datetime
    recipients: list[MsgRecipient] = field(default_factory=list)
    attachments: list[MsgAttachment] = field(default_factory=list)
    message_id: str = ""
    conversation_index: bytes = b""


def msg_bytes(spec: MsgSpec) -> bytes:
    headers = f"From: {spec.sender_name} <{spec.sender_address}>\r\n"
    if spec.recipients:
        headers += "To: " + ", ".join(f"{r.name} <{r.address}>" for r in spec.recipients) + "\r\n"
    headers += f"Subject: {spec.subject}\r\nDate: {spec.sent.strftime('%a, %d %b %Y %H:%M:%S +0000')}\r\n"
    if spec.message_id:
        headers += f"Message-ID: <{spec.message_id}>\r\n"
    props: list[tuple[int, int, object]] = [
        (PID_MESSAGE_CLASS, PT_UNICODE, "IPM.Note"),
        (PID_SUBJECT, PT_UNICODE, spec.subject),
        (PID_CONVERSATION_TOPIC, PT_UNICODE, spec.subject),
        (PID_CLIENT_SUBMIT_TIME, PT_TIME, spec.sent),
        (PID_TRANSPORT_MESSAGE_HEADERS, PT_UNICODE, headers),
        (PID_SENDER_NAME, PT_UNICODE, spec.sender_name),
        (PID_SENDER_EMAIL_ADDRESS, PT_UNICODE, spec.sender_address),
        (PID_BODY, PT_UNICODE, spec.body),
        (PID_STORE_SUPPORT_MASK, PT_INT32, STORE_UNICODE_OK),
    ]
    if spec.message_id:
        props.append((PID_INTERNET_MESSAGE_ID, PT_UNICODE, f"<{spec.message_id}>"))
    if spec.conversation_index:
        props.append((PID_CONVERSATION_INDEX, PT_BINARY, spec.conversation_index))
    counts = struct.pack(
        "<8x4I8x", len(spec.recipients), len(spec.attachments), len(spec.recipients), len(spec.attachments)
    )
    root: dict[str, object] = _property_storage(props, header=counts)
    for i, recipient in enumerate(spec.recipients):
        root[f"__recip_version1.0_#{i:08X}"] = _property_storage(
            [
                (PID_RECIPIENT_TYPE, PT_INT32, MAPI_TO),
                (PID_DISPLAY_NAME, PT_UNICODE, recipient.name),
                (PID_EMAIL_ADDRESS, PT_UNICODE, recipient.address),
                (PID_SMTP_ADDRESS, PT_UNICODE, recipient.address),
            ],
            header=b"\x00" * 8,
        )
    for i, attachment in enumerate(spec.attachments):
        root[f"__attach_version1.0_#{i:08X}"] = _property_storage(
            [
                (PID_ATTACH_METHOD, PT_INT32, ATTACH_BY_VALUE),
                (PID_ATTACH_LONG_FILENAME, PT_UNICODE, attachment.filename),
                (PID_ATTACH_MIME_TAG, PT_UNICODE, attachment.mime_type),
                (PID_ATTACH_DATA_BINARY, PT_BINARY, attachment.content),
            ],
            header=b"\x00" * 8,
        )
    # Named-property mapping: required by the format; empty, as no named property is used.
    root["__nameid_version1.0"] = {f"__substg1.0_{n:04X}0102": b"" for n in (2, 3, 4)}
    return cfb_bytes(root)


def _property_storage(props: list[tuple[int, int, object]], header: bytes) -> dict[str, object]:
    storage: dict[str, object] = {}
    entries = bytearray(header)
    for pid, ptype, value in props:
        tag = struct.pack("<HH", ptype, pid)
        flags = struct.pack("<I", 0x6)  # readable | writable
        if ptype == PT_INT32:
            entries += tag + flags + struct.pack("<iI", value, 0)
        elif ptype == PT_BOOLEAN:
            entries += tag + flags + struct.pack("<II", int(bool(value)), 0)
        elif ptype == PT_TIME:
            assert isinstance(value, dt.datetime)
            ticks = int((value - dt.datetime(1601, 1, 1, tzinfo=dt.UTC)).total_seconds() * 10_000_000)
            entries += tag + flags + struct.pack("<Q", ticks)
        else:
            # Strings are stored without their terminating null; the size counts it (MS-OXMSG 2.4.2.2).
            data = str(value).encode("utf-16-le") if ptype == PT_UNICODE else bytes(value)  # type: ignore[call-overload]
            storage[f"__substg1.0_{pid:04X}{ptype:04X}"] = data
            entries += tag + flags + struct.pack("<II", len(data) + (2 if ptype == PT_UNICODE else 0), 0)
    storage["__properties_version1.0"] = bytes(entries)
    return storage


# --- MS-CFB version 3 -------------------------------------------------------------------------------------------

SECTOR = 512
MINI_SECTOR = 64
MINI_CUTOFF = 4096
FREESECT, ENDOFCHAIN, FATSECT, NOSTREAM = 0xFFFFFFFF, 0xFFFFFFFE, 0xFFFFFFFD, 0xFFFFFFFF


@dataclass
class _Entry:
    name: str
    kind: int  # 1 storage, 2 stream, 5 root
    data: bytes = b""
    children: list[int] = field(default_factory=list)
    left: int = NOSTREAM
    right: int = NOSTREAM
    child: int = NOSTREAM
    start: int = ENDOFCHAIN
    size: int = 0


def cfb_bytes(tree: dict[str, object]) -> bytes:
    """A compound file from a tree: {name: bytes (stream) | dict (storage)}."""
    entries = [_Entry("Root Entry", 5)]

    def add(parent: int, node: dict[str, object]) -> None:
        for name, value in node.items():
            entries.append(_Entry(name, 2, data=value) if isinstance(value, bytes) else _Entry(name, 1))
            index = len(entries) - 1
            entries[parent].children.append(index)
            if isinstance(value, dict):
                add(index, value)

    add(0, tree)
    for entry in entries:
        # Siblings form a binary search tree ordered by name length, then upper-cased name.
        ordered = sorted(entry.children, key=lambda i: (len(entries[i].name), entries[i].name.upper()))
        entry.child = _balanced(ordered, entries)

    fat: list[int] = []
    sectors: list[bytes] = []

    def allocate(data: bytes) -> int:
        count = max(1, -(-len(data) // SECTOR))
        first = len(sectors)
        for n in range(count):
            sectors.append(data[n * SECTOR : (n + 1) * SECTOR].ljust(SECTOR, b"\x00"))
            fat.append(first + n + 1 if n < count - 1 else ENDOFCHAIN)
        return first

    mini_stream = bytearray()
    mini_fat: list[int] = []
    for entry in entries:
        if entry.kind != 2:
            continue
        entry.size = len(entry.data)
        if entry.size == 0:
            continue
        if entry.size < MINI_CUTOFF:
            count = -(-entry.size // MINI_SECTOR)
            entry.start = len(mini_fat)
            mini_fat += [entry.start + n + 1 if n < count - 1 else ENDOFCHAIN for n in range(count)]
            mini_stream += entry.data.ljust(count * MINI_SECTOR, b"\x00")
        else:
            entry.start = allocate(entry.data)
    root = entries[0]
    if mini_stream:
        root.start, root.size = allocate(bytes(mini_stream)), len(mini_stream)
    first_mini_fat, mini_fat_sectors = ENDOFCHAIN, 0
    if mini_fat:
        table = b"".join(struct.pack("<I", n) for n in mini_fat)
        table += struct.pack("<I", FREESECT) * ((-len(mini_fat)) % (SECTOR // 4))
        first_mini_fat, mini_fat_sectors = allocate(table), len(table) // SECTOR
    directory = b"".join(_direntry(e) for e in entries)
    directory += _unused_direntry() * ((-len(entries)) % (SECTOR // 128))
    first_directory = allocate(directory)

    # The FAT describes itself too: find how many sectors it needs.
    fat_sectors = 1
    while (len(fat) + fat_sectors) > fat_sectors * (SECTOR // 4):
        fat_sectors += 1
    assert fat_sectors <= 109, "test files stay small: no DIFAT sectors"
    fat_start = len(sectors)
    fat += [FATSECT] * fat_sectors
    table = b"".join(struct.pack("<I", n) for n in fat)
    table += struct.pack("<I", FREESECT) * (fat_sectors * (SECTOR // 4) - len(fat))
    sectors += [table[n * SECTOR : (n + 1) * SECTOR] for n in range(fat_sectors)]

    difat = [fat_start + n for n in range(fat_sectors)] + [FREESECT] * (109 - fat_sectors)
    header = (
        b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
        + b"\x00" * 16
        + struct.pack("<HHHHH", 0x003E, 0x0003, 0xFFFE, 9, 6)
        + b"\x00" * 6
        # directory sectors (0 in v3), FAT sectors, first directory sector, transaction signature,
        # mini stream cutoff, first mini FAT sector, mini FAT sectors, first DIFAT sector, DIFAT sectors
        + struct.pack(
            "<IIIIIIIII",
            0,
            fat_sectors,
            first_directory,
            0,
            MINI_CUTOFF,
            first_mini_fat,
            mini_fat_sectors,
            ENDOFCHAIN,
            0,
        )
        + b"".join(struct.pack("<I", n) for n in difat)
    )
    assert len(header) == SECTOR
    return header + b"".join(sectors)


def _balanced(ordered: list[int], entries: list[_Entry]) -> int:
    if not ordered:
        return NOSTREAM
    middle = len(ordered) // 2
    node = entries[ordered[middle]]
    node.left = _balanced(ordered[:middle], entries)
    node.right = _balanced(ordered[middle + 1 :], entries)
    return ordered[middle]


def _direntry(entry: _Entry) -> bytes:
    name = (entry.name + "\x00").encode("utf-16-le")
    assert len(name) <= 64, entry.name
    return (
        name.ljust(64, b"\x00")
        + struct.pack("<HBB", len(name), entry.kind, 1)  # colour: black
        + struct.pack("<III", entry.left, entry.right, entry.child)
        + b"\x00" * 16  # CLSID
        + struct.pack("<I", 0)  # state bits
        + b"\x00" * 16  # creation and modification times
        + struct.pack("<IQ", entry.start if entry.kind != 1 else 0, entry.size)
    )


def _unused_direntry() -> bytes:
    return (
        b"\x00" * 64 + struct.pack("<HBB", 0, 0, 0) + struct.pack("<III", NOSTREAM, NOSTREAM, NOSTREAM) + b"\x00" * 52
    )
