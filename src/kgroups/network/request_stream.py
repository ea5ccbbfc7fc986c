"""The reading side of a client connection: asyncio's StreamReader, plus a
read straight into a caller's buffer.

A big request (a producer's megabyte batch) read with ``readexactly`` is
copied four times on its way: appended to the stream's buffer as it arrives,
sliced out of it, turned into bytes, then joined with the part of the frame
read before. ``readinto_exactly`` gives the stream a buffer of the frame's
size instead: the bytes already buffered are moved there, and what arrives
afterwards is copied there as it arrives, once, with no other buffer between.
The frame is a bytearray the request's handler may write into (produce
stamps offsets into the batches where they lie).

It leans on four attributes of asyncio's StreamReader (the bytes buffered,
the buffer's limit, whether the transport is paused, the transport), the
same ones its own readers use, declared below; ``request_server`` builds the streams as
``asyncio.start_server`` does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import SupportsIndex, cast

__all__ = ["RequestStream", "request_server", "stream_protocol"]

# asyncio's default: past twice this many bytes buffered, reading pauses.
_LIMIT = 64 * 1024

ClientConnected = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class RequestStream(asyncio.StreamReader):
    # asyncio.StreamReader's own state, as its readers use it.
    _buffer: bytearray
    _limit: int
    _paused: bool
    _transport: asyncio.Transport | None

    def __init__(self, limit: int = _LIMIT, loop: asyncio.AbstractEventLoop | None = None) -> None:
        super().__init__(limit=limit, loop=loop)
        # The rest of the caller's buffer still to fill, how much of it is
        # filled, and the future that says it is full (or why it never will be).
        self._into: memoryview | None = None
        self._filled = 0
        self._full: asyncio.Future[None] | None = None

    def feed_data(self, data: Iterable[SupportsIndex]) -> None:
        into = self._into
        if into is None:
            super().feed_data(data)
            return
        chunk = memoryview(cast(bytes, data))
        filled = self._filled
        n = min(len(chunk), len(into) - filled)
        into[filled : filled + n] = chunk[:n]
        filled += n
        self._filled = filled
        if filled < len(into):
            return
        self._done(None)
        if n < len(chunk):
            super().feed_data(chunk[n:])

    def feed_eof(self) -> None:
        super().feed_eof()
        if self._into is not None:
            self._done(asyncio.IncompleteReadError(bytes(self._into[: self._filled]), None))

    def set_exception(self, exc: Exception) -> None:
        super().set_exception(exc)
        if self._into is not None:
            self._done(exc)

    def _done(self, error: BaseException | None) -> None:
        full = self._full
        self._into = self._full = None
        if full is not None and not full.done():
            if error is None:
                full.set_result(None)
            else:
                full.set_exception(error)

    async def readinto_exactly(self, into: memoryview) -> None:
        """Fill ``into``; IncompleteReadError (``partial`` what came of it) if
        the peer closes first."""
        if self._into is not None:
            raise RuntimeError("readinto_exactly is already waiting for data")
        exception = self.exception()
        if exception is not None:
            raise exception
        buffered = self._buffer
        n = min(len(buffered), len(into))
        if n:
            with memoryview(buffered) as view:
                into[:n] = view[:n]
            del buffered[:n]
        if n == len(into):
            self._resume()
            return
        if self.at_eof():
            raise asyncio.IncompleteReadError(bytes(into[:n]), None)
        full: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._into, self._filled, self._full = into[n:], 0, full
        # Reading may have been paused by a full buffer; these bytes go elsewhere.
        self._resume()
        try:
            await full
        except asyncio.IncompleteReadError as e:
            raise asyncio.IncompleteReadError(bytes(into[:n]) + e.partial, None) from None
        finally:
            self._into = self._full = None

    def _resume(self) -> None:
        if self._paused and self._transport is not None and len(self._buffer) <= self._limit:
            self._paused = False
            self._transport.resume_reading()


def stream_protocol(
    client_connected: ClientConnected, loop: asyncio.AbstractEventLoop
) -> asyncio.StreamReaderProtocol:
    """What ``asyncio.start_server`` makes for each connection, on a RequestStream."""
    return asyncio.StreamReaderProtocol(RequestStream(loop=loop), client_connected, loop=loop)


async def request_server(
    client_connected: ClientConnected, host: str | None, port: int
) -> asyncio.Server:
    """As ``asyncio.start_server(client_connected, host, port, start_serving=False)``,
    each connection read through a RequestStream."""
    loop = asyncio.get_running_loop()
    return await loop.create_server(
        lambda: stream_protocol(client_connected, loop), host, port, start_serving=False
    )
