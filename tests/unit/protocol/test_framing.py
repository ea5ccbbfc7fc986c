import asyncio
import struct

import pytest

from kgroups.protocol.framing import BadFrame, frame, read_frame


def _read(data: bytes, max_bytes: int = 1000) -> bytes | None:
    async def go() -> bytes | None:
        reader = asyncio.StreamReader()
        reader.feed_data(data)
        reader.feed_eof()
        return await read_frame(reader, max_bytes)

    return asyncio.run(go())


def test_round_trip() -> None:
    assert _read(frame(b"hello")) == b"hello"
    assert _read(frame(b"")) == b""


def test_clean_close_between_frames() -> None:
    assert _read(b"") is None


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (struct.pack(">i", -5), "negative frame size"),
        (struct.pack(">i", 1001), "exceeds socket.request.max.bytes=1000"),
        (struct.pack(">i", 10) + b"abc", "closed after 3 of 10 bytes"),
        (b"\x00\x00", "inside a size prefix"),
    ],
)
def test_bad_frames(data: bytes, message: str) -> None:
    with pytest.raises(BadFrame, match=message):
        _read(data)
