"""4-byte big-endian size framing, with Kafka's `socket.request.max.bytes` bound."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Awaitable, Callable

_SIZE = struct.Struct(">i")
# What one read asks the stream for: enough for a client's pipelined burst of
# small requests, which are then taken from memory without a wait each.
_READ_BYTES = 64 * 1024


class BadFrame(ValueError):
    """The peer sent a size we refuse to read; the connection must close."""


class FrameReader:
    """Request frames from a stream.

    One read takes whatever has arrived, up to 64 KiB, and ``next_frame`` hands
    out the whole frames in it without touching the stream again: a client
    with many small requests in flight costs one read per burst, not two
    per request. A frame bigger than what has arrived is read to its end in
    one go, so big frames are not assembled piece by piece; from a stream
    that can read into a buffer (``readinto_exactly``, network/request_stream.py)
    straight into a bytearray of the frame's size, the frame handed out.
    """

    __slots__ = ("_buffer", "_limit_name", "_max_bytes", "_pos", "_reader", "_whole")

    def __init__(
        self,
        reader: asyncio.StreamReader,
        max_bytes: int,
        limit_name: str = "socket.request.max.bytes",
    ) -> None:
        self._reader = reader
        self._max_bytes = max_bytes
        self._limit_name = limit_name
        self._buffer = b""
        self._pos = 0
        # A big frame read on its own, next to hand out.
        self._whole: bytearray | None = None

    def limit(self, max_bytes: int, name: str) -> None:
        """Frames from now on are bounded by ``max_bytes``, Kafka's key ``name``
        (a SASL listener's bound changes once the peer has authenticated)."""
        self._max_bytes, self._limit_name = max_bytes, name

    def next_frame(self) -> bytes | bytearray | None:
        """The next frame already read, or None if ``fill`` must read more."""
        whole = self._whole
        if whole is not None:
            self._whole = None
            return whole
        buffer, pos = self._buffer, self._pos
        if len(buffer) - pos < 4:
            return None
        (size,) = _SIZE.unpack_from(buffer, pos)
        self._check(size)
        end = pos + 4 + size
        if end > len(buffer):
            return None
        self._pos = end
        return buffer[pos + 4 : end]

    async def fill(self) -> bool:
        """Read more; False when the peer closed cleanly between frames."""
        rest = self._buffer[self._pos :]
        if len(rest) >= 4:
            # A frame's start is here, its end is not: read exactly the rest.
            (size,) = _SIZE.unpack_from(rest, 0)
            missing = 4 + size - len(rest)
            readinto = getattr(self._reader, "readinto_exactly", None)
            if readinto is not None and size > _READ_BYTES:
                self._whole = await self._read_whole(readinto, rest, size)
                self._buffer, self._pos = b"", 0
                return True
            try:
                more = await self._reader.readexactly(missing)
            except asyncio.IncompleteReadError as e:
                have = len(rest) - 4 + len(e.partial)
                raise BadFrame(f"connection closed after {have} of {size} bytes") from None
        else:
            more = await self._reader.read(_READ_BYTES)
            if not more:
                if rest:
                    raise BadFrame("connection closed inside a size prefix")
                return False
        self._buffer = rest + more
        self._pos = 0
        return True

    @staticmethod
    async def _read_whole(
        readinto: Callable[[memoryview], Awaitable[None]], rest: bytes, size: int
    ) -> bytearray:
        """The frame whose first bytes (size prefix included) are ``rest``."""
        whole = bytearray(size)
        have = len(rest) - 4
        whole[:have] = memoryview(rest)[4:]
        try:
            await readinto(memoryview(whole)[have:])
        except asyncio.IncompleteReadError as e:
            got = have + len(e.partial)
            raise BadFrame(f"connection closed after {got} of {size} bytes") from None
        return whole

    def _check(self, size: int) -> None:
        if size < 0:
            raise BadFrame(f"negative frame size {size}")
        if size > self._max_bytes:
            raise BadFrame(f"frame of {size} bytes exceeds {self._limit_name}={self._max_bytes}")


def frame(payload: bytes) -> bytes:
    return _SIZE.pack(len(payload)) + payload
