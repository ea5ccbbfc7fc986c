"""A small compressed input that expands past the limit is refused while
decompressing, without producing the excess (each codec, each framing)."""

from __future__ import annotations

import resource
import struct
import zlib
from collections.abc import Callable

import cramjam
import lz4.frame
import pytest
import zstandard

from kgroups.errors import ErrorCode, KafkaError
from kgroups.records.compression import XERIAL_MAGIC, decompress, iter_decompress

MB = 1024 * 1024


def gzip_bomb(size: int) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = bytes(MB)
    return b"".join(c.compress(zeros) for _ in range(size // MB)) + c.flush()


def lz4_bomb(size: int) -> bytes:
    c = lz4.frame.LZ4FrameCompressor()
    zeros = bytes(MB)
    return c.begin() + b"".join(c.compress(zeros) for _ in range(size // MB)) + c.flush()


def zstd_bomb(size: int) -> bytes:
    c = zstandard.ZstdCompressor().compressobj()
    zeros = bytes(MB)
    return b"".join(c.compress(zeros) for _ in range(size // MB)) + c.flush()


def snappy_raw_bomb(size: int) -> bytes:
    return bytes(cramjam.snappy.compress_raw(bytes(size)))


def snappy_xerial_bomb(size: int) -> bytes:
    block = bytes(cramjam.snappy.compress_raw(bytes(MB)))
    header = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
    return header + (struct.pack(">i", len(block)) + block) * (size // MB)


def snappy_lying_length() -> bytes:
    """A raw block that claims 4 GiB but holds nothing."""
    return b"\xff\xff\xff\xff\x0f\x00"


BOMBS: dict[str, tuple[int, Callable[[int], bytes]]] = {
    "gzip": (1, gzip_bomb),
    "snappy-raw": (2, snappy_raw_bomb),
    "snappy-xerial": (2, snappy_xerial_bomb),
    "lz4": (3, lz4_bomb),
    "zstd": (4, zstd_bomb),
}


@pytest.mark.parametrize("name", sorted(BOMBS))
def test_output_past_the_limit_is_corrupt(name: str) -> None:
    codec, make = BOMBS[name]
    bomb = make(8 * MB)
    assert len(bomb) < MB
    with pytest.raises(KafkaError) as exc:
        decompress(codec, bomb, limit=2 * MB)
    assert exc.value.error_code == ErrorCode.corrupt_message
    assert decompress(codec, bomb, limit=8 * MB) == bytes(8 * MB)


@pytest.mark.parametrize("name", ["gzip", "lz4", "zstd"])
def test_output_streams_in_bounded_chunks(name: str) -> None:
    codec, make = BOMBS[name]
    bomb = make(64 * MB)
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    pieces = 0
    with pytest.raises(KafkaError):
        for piece in iter_decompress(codec, bomb, limit=48 * MB):
            assert len(piece) <= 256 * 1024
            pieces += 1
    assert pieces >= 48 * 4
    grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before
    assert grown_kb < 32 * 1024


def test_snappy_block_claiming_gigabytes_is_refused_before_allocating() -> None:
    with pytest.raises(KafkaError) as exc:
        decompress(2, snappy_lying_length())
    assert exc.value.error_code == ErrorCode.corrupt_message
