"""Zip archives built in tests, including encrypted members zipfile cannot write."""

from __future__ import annotations

import io
import struct
import zipfile

RETURNS = b"# Returns\n\nGoods can be sent back within thirty days of purchase if they are unused.\n"
DELIVERY = b"Parcels leave the warehouse every weekday morning and arrive within two days.\n"
CANTEEN = b"<html><body><h1>Canteen</h1><p>Lunch is served between noon and two o'clock.</p></body></html>"


def zip_bytes(members: dict[str, bytes], *, encrypted: tuple[str, ...] = ()) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, content in members.items():
            archive.writestr(name, content)  # a name ending in / is a folder entry
    data = out.getvalue()
    for name in encrypted:
        data = _mark_encrypted(data, name)
    return data


def _mark_encrypted(data: bytes, name: str) -> bytes:
    # zipfile cannot write encrypted members; set the "encrypted" flag bit as an encrypting tool would.
    buffer = bytearray(data)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        info = archive.getinfo(name)
    struct.pack_into("<H", buffer, info.header_offset + 6, info.flag_bits | 0x1)
    position = buffer.find(b"PK\x01\x02")
    while position != -1:
        length = struct.unpack_from("<H", buffer, position + 28)[0]
        if bytes(buffer[position + 46 : position + 46 + length]).decode() == name:
            struct.pack_into("<H", buffer, position + 8, info.flag_bits | 0x1)
        position = buffer.find(b"PK\x01\x02", position + 4)
    return bytes(buffer)


HANDBOOK_ZIP = {
    "handbook/": b"",
    "handbook/returns.md": RETURNS,
    "handbook/shipping/delivery.txt": DELIVERY,
    "canteen.html": CANTEEN,
    "__MACOSX/handbook/._returns.md": b"\x00\x05\x16\x07",
    "handbook/.DS_Store": b"\x00\x00\x00\x01Bud1",
}
