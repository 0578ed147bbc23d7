"""Writes objects whose content Copydesk already holds as one pack file (git's pack format, version 2)."""

import hashlib
import struct
import zlib
from collections.abc import Mapping
from typing import BinaryIO

_TYPES = {"commit": 1, "tree": 2, "blob": 3}


def write_pack(out: BinaryIO, objects: Mapping[str, tuple[str, bytes]], object_format: str = "sha1") -> str:
    """Write `objects` (id -> (kind, content)) to `out` as a pack of whole (undeltified) objects; return the
    pack's checksum in hex, which names it in `objects/pack/`."""
    digest = hashlib.new(object_format)

    def emit(chunk: bytes) -> None:
        digest.update(chunk)
        out.write(chunk)

    emit(b"PACK" + struct.pack(">II", 2, len(objects)))
    for kind, data in objects.values():
        emit(_entry_header(_TYPES[kind], len(data)))
        emit(zlib.compress(data, 1))  # the pack is read once, by index-pack; speed matters more than its size
    checksum = digest.digest()
    out.write(checksum)
    return checksum.hex()


def _entry_header(kind: int, size: int) -> bytes:
    # The type and the size's low 4 bits, then 7 bits of the size per byte, the high bit meaning "more".
    header = bytearray()
    byte, size = (kind << 4) | (size & 0x0F), size >> 4
    while size:
        header.append(byte | 0x80)
        byte, size = size & 0x7F, size >> 7
    header.append(byte)
    return bytes(header)
