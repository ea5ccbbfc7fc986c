"""A frame bigger than one read is read into a buffer of its own, whole and
once, from a connection's RequestStream."""

import asyncio
import struct

import pytest

from kgroups.network.request_stream import RequestStream
from kgroups.protocol.framing import BadFrame, FrameReader, frame


async def _frames(chunks: list[bytes], eof: bool = True) -> list[bytes | bytearray]:
    """The frames read while ``chunks`` arrive one by one, as a socket's would."""
    stream = RequestStream()
    frames = FrameReader(stream, 1 << 24)
    found: list[bytes | bytearray] = []

    async def arrive() -> None:
        for chunk in chunks:
            await asyncio.sleep(0)
            stream.feed_data(chunk)
        if eof:
            stream.feed_eof()

    feeder = asyncio.create_task(arrive())
    try:
        while True:
            request = frames.next_frame()
            if request is not None:
                found.append(request)
            elif not await frames.fill():
                return found
    finally:
        await feeder


def _pieces(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def test_a_big_frame_arriving_in_pieces_comes_out_whole_and_writable() -> None:
    big = bytes(range(256)) * 2000  # 512,000 bytes, past one 64 KiB read
    data = frame(b"a") + frame(big) + frame(b"b") + frame(big[::-1])
    found = asyncio.run(_frames(_pieces(data, 7000)))
    assert found == [b"a", big, b"b", big[::-1]]
    assert isinstance(found[1], bytearray)  # the buffer the request is read into


def test_a_big_frame_in_one_piece_with_the_next_frames_behind_it() -> None:
    big = b"x" * 300_000
    data = frame(big) + frame(b"after") + frame(big)
    assert asyncio.run(_frames([data])) == [big, b"after", big]


def test_the_peer_closing_inside_a_big_frame_is_a_bad_frame() -> None:
    data = struct.pack(">i", 200_000) + b"y" * 150_000
    with pytest.raises(BadFrame, match="closed after 150000 of 200000 bytes"):
        asyncio.run(_frames(_pieces(data, 10_000)))


def test_reading_goes_on_when_the_buffer_had_paused_it() -> None:
    """Bytes buffered past the stream's limit pause the transport; reading
    into the frame's buffer resumes it, or the frame would never arrive."""

    class Transport(asyncio.Transport):
        def __init__(self) -> None:
            super().__init__()
            self.paused = False

        def pause_reading(self) -> None:
            self.paused = True

        def resume_reading(self) -> None:
            self.paused = False

    async def go() -> bytes | bytearray:
        stream = RequestStream(limit=1024)
        transport = Transport()
        stream.set_transport(transport)
        data = frame(b"z" * 100_000)
        stream.feed_data(data[:70_000])  # far past twice the limit
        frames = FrameReader(stream, 1 << 20)
        assert await frames.fill()  # one read's 64 KiB: the rest stays buffered
        assert frames.next_frame() is None
        assert transport.paused
        reading = asyncio.create_task(frames.fill())
        await asyncio.sleep(0)
        assert not transport.paused
        stream.feed_data(data[70_000:])
        assert await reading
        request = frames.next_frame()
        assert request is not None
        return request

    assert asyncio.run(go()) == b"z" * 100_000
