"""4-byte big-endian size framing, with Kafka's `socket.request.max.bytes` bound."""

from __future__ import annotations

import asyncio
import struct

_SIZE = struct.Struct(">i")


class BadFrame(ValueError):
    """The peer sent a size we refuse to read; the connection must close."""


async def read_frame(reader: asyncio.StreamReader, max_bytes: int) -> bytes | None:
    """The next request frame, or None when the peer closed cleanly between frames."""
    try:
        prefix = await reader.readexactly(4)
    except asyncio.IncompleteReadError as e:
        if e.partial:
            raise BadFrame("connection closed inside a size prefix") from None
        return None
    (size,) = _SIZE.unpack(prefix)
    if size < 0:
        raise BadFrame(f"negative frame size {size}")
    if size > max_bytes:
        raise BadFrame(f"frame of {size} bytes exceeds socket.request.max.bytes={max_bytes}")
    try:
        return await reader.readexactly(size)
    except asyncio.IncompleteReadError as e:
        raise BadFrame(f"connection closed after {len(e.partial)} of {size} bytes") from None


def frame(payload: bytes) -> bytes:
    return _SIZE.pack(len(payload)) + payload
