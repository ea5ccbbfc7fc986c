import asyncio
import struct

import pytest

from kgroups.protocol.framing import BadFrame, FrameReader, frame


def _read_all(data: bytes, max_bytes: int = 1000) -> list[bytes]:
    """Every frame in ``data``, read as the connection loop reads them."""

    async def go() -> list[bytes]:
        reader = asyncio.StreamReader()
        reader.feed_data(data)
        reader.feed_eof()
        frames = FrameReader(reader, max_bytes)
        found = []
        while True:
            request = frames.next_frame()
            if request is not None:
                found.append(request)
            elif not await frames.fill():
                return found

    return asyncio.run(go())


def _read(data: bytes, max_bytes: int = 1000) -> bytes | None:
    frames = _read_all(data, max_bytes)
    return frames[0] if frames else None


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


def test_several_frames_in_one_read_come_out_in_order() -> None:
    payloads = [bytes([i]) * i for i in range(50)]
    assert _read_all(b"".join(frame(p) for p in payloads)) == payloads


def test_a_frame_bigger_than_one_read() -> None:
    big = bytes(range(256)) * 1000  # 256,000 bytes, past the 64 KiB read
    assert _read_all(frame(b"a") + frame(big) + frame(b"b"), max_bytes=1 << 20) == [
        b"a",
        big,
        b"b",
    ]


def test_a_bad_size_after_good_frames_is_refused() -> None:
    with pytest.raises(BadFrame, match="negative frame size"):
        _read_all(frame(b"ok") + struct.pack(">i", -1))
