"""Writing a response whose records stay in their files: from file to socket.

A Fetch answered from local segment files is a list of parts
(handlers/response_parts.py): encoded bytes, and regions of segment files. The
bytes go to the socket with ``os.write``, the regions with ``os.sendfile``: the
kernel moves the records from the page cache to the socket, and the broker
never reads them. asyncio's ``loop.sendfile`` would do the same on its own
event loop, but uvloop's transports lack it; so this writes to the socket's
descriptor itself, on either loop.

Only a plaintext socket is written to this way (TLS encrypts in the process),
and only while nothing else writes to the connection: the transport's buffer
is drained first, and the connection handles no other request until the whole
response is sent (responses keep the request order). When the socket is full,
it waits until the socket can take more, watching a duplicate of its
descriptor (an event loop refuses to watch the transport's own), and gives up
once the transport is closing (the connection was closed meanwhile).
"""

from __future__ import annotations

import asyncio
import os

from kgroups.handlers.response_parts import ResponseParts
from kgroups.records.file_region import FileRegion, RegionGone

__all__ = ["FileSender"]

# How often a wait for room in the socket looks whether the connection closed.
_CLOSED_CHECK_S = 0.1


class FileSender:
    """Sends ResponseParts on one plaintext connection."""

    __slots__ = ("_fd", "_loop", "_transport", "_writer")

    def __init__(self, writer: asyncio.StreamWriter, fd: int) -> None:
        self._writer = writer
        self._transport = writer.transport
        self._fd = fd
        self._loop = asyncio.get_running_loop()

    @classmethod
    def of(cls, writer: asyncio.StreamWriter) -> FileSender | None:
        """A sender for the connection, if its socket can be written to directly."""
        sock = writer.get_extra_info("socket")
        if sock is None or writer.get_extra_info("sslcontext") is not None:
            return None
        try:
            fd = sock.fileno()
        except (AttributeError, OSError):
            return None
        return cls(writer, fd) if fd >= 0 else None

    async def send(self, response: ResponseParts) -> None:
        """Write every part, in order; ConnectionError once the connection closed,
        RegionGone when a file was closed or cut short meanwhile (the frame
        cannot be completed: the connection must close)."""
        await self._drained()
        for part in response.parts:
            if isinstance(part, FileRegion):
                await self._send_region(part)
            else:
                await self._write(part)

    async def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            self._check_open()
            try:
                written = os.write(self._fd, view)
            except BlockingIOError:
                await self._room()
                continue
            view = view[written:]

    async def _send_region(self, region: FileRegion) -> None:
        position, left = region.position, region.size
        source = region.source
        while left:
            self._check_open()
            try:
                sent = source.send_to(self._fd, position, left)
            except BlockingIOError:
                await self._room()
                continue
            if sent == 0:
                raise RegionGone(f"{region!r} ended {left} bytes early")
            position += sent
            left -= sent

    def _check_open(self) -> None:
        # Checked after every wait: once closing, the descriptor may be closed
        # and its number reused.
        if self._transport.is_closing():
            raise ConnectionResetError("connection closed while sending a response")

    async def _drained(self) -> None:
        """Wait until the transport has written everything it holds."""
        transport = self._transport
        if not transport.get_write_buffer_size():
            return
        low, high = transport.get_write_buffer_limits()
        # With no room at all, the transport pauses the writer until it is empty.
        transport.set_write_buffer_limits(high=0, low=0)
        try:
            await self._writer.drain()
        finally:
            if not transport.is_closing():
                transport.set_write_buffer_limits(high=high, low=low)

    async def _room(self) -> None:
        """Wait until the socket takes more bytes, or the transport closes."""
        watched = os.dup(self._fd)
        ready = self._loop.create_future()

        def writable() -> None:
            if not ready.done():
                ready.set_result(None)

        self._loop.add_writer(watched, writable)
        try:
            while not ready.done():
                await asyncio.wait([ready], timeout=_CLOSED_CHECK_S)
                self._check_open()
        finally:
            self._loop.remove_writer(watched)
            os.close(watched)
