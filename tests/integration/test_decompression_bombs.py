"""Compressed batches that expand to gigabytes, or that lie about their record
count, are refused on the wire; the broker's memory stays flat and it keeps
serving."""

from __future__ import annotations

import functools
import socket
import struct
import zlib
from collections.abc import Callable, Iterable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import cast

import lz4.frame
import pytest
import zstandard
from kio.schema.api_versions.v0 import ApiVersionsRequest
from kio.schema.create_topics.v7 import CreateTopicsRequest
from kio.schema.create_topics.v7.request import CreatableTopic
from kio.schema.produce.v9 import ProduceRequest
from kio.schema.produce.v9.request import PartitionProduceData, TopicProduceData
from kio.static.primitive import Records

from kgroups.errors import ErrorCode
from kgroups.protocol.types import TopicName, i16, i32
from kgroups.records.batch import HEADER_SIZE, batch_crc, encode_batch
from kgroups.records.compression import XERIAL_MAGIC

from process_broker import BrokerProcess
from raw_wire import call

MB = 1024 * 1024


def _zigzag(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _one_huge_record(size: int) -> Iterator[bytes]:
    """A well-formed record whose value is ``size`` zero bytes, in pieces."""
    body_head = b"\x00\x00\x00\x01" + _zigzag(size)
    yield _zigzag(len(body_head) + size + 1) + body_head
    zeros = bytes(MB)
    for _ in range(size // MB):
        yield zeros
    yield b"\x00"


def _blocks(
    compress: Callable[[bytes], bytes], end_block: Callable[[], bytes], pieces: Iterable[bytes]
) -> Iterator[bytes]:
    """Each piece compressed and ended at a block boundary. Once a piece equal to
    the one before came out as the same block (the window holds only zeros), the
    rest of the run is that block again, without compressing it: building a
    gigabyte bomb then takes a moment, not seconds of the test's time."""
    previous: tuple[bytes, bytes] | None = None
    repeating = False
    for piece in pieces:
        if repeating and previous is not None and piece == previous[0]:
            yield previous[1]
            continue
        block = compress(piece) + end_block()
        repeating = previous == (piece, block)
        previous = piece, block
        yield block


def _gzip(pieces: Iterator[bytes]) -> bytes:
    """One gzip member: header, raw deflate, then the CRC and length of all the input."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    crc = size = 0

    def counted() -> Iterator[bytes]:
        nonlocal crc, size
        for p in pieces:
            crc, size = zlib.crc32(p, crc), size + len(p)
            yield p

    deflated = b"".join(_blocks(c.compress, lambda: c.flush(zlib.Z_SYNC_FLUSH), counted()))
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    return header + deflated + c.flush() + struct.pack("<II", crc, size & 0xFFFFFFFF)


def _lz4(pieces: Iterator[bytes]) -> bytes:
    c = lz4.frame.LZ4FrameCompressor()
    return c.begin() + b"".join(c.compress(p) for p in pieces) + c.flush()


def _zstd(pieces: Iterator[bytes]) -> bytes:
    c = zstandard.ZstdCompressor().compressobj()
    end_block = functools.partial(c.flush, zstandard.COMPRESSOBJ_FLUSH_BLOCK)
    return b"".join(_blocks(c.compress, end_block, pieces)) + c.flush()


def _snappy_raw(_pieces: Iterator[bytes]) -> bytes:
    return b"\xff\xff\xff\xff\x0f\x00"  # one block claiming 4 GiB


def _snappy_xerial(_pieces: Iterator[bytes]) -> bytes:
    block = _snappy_raw(iter(()))
    return XERIAL_MAGIC + struct.pack(">iii", 1, 1, len(block)) + block


# codec, compressor, what the bomb expands to (the most that stays under 1 MB
# compressed; snappy bombs instead claim a 4 GiB block).
BOMBS: dict[str, tuple[int, Callable[[Iterator[bytes]], bytes], int]] = {
    "gzip": (1, _gzip, 900 * MB),
    "snappy-raw": (2, _snappy_raw, 0),
    "snappy-xerial": (2, _snappy_xerial, 0),
    "lz4": (3, _lz4, 200 * MB),
    "zstd": (4, _zstd, 4096 * MB),
}


def _batch(codec: int, records: bytes, count: int = 1) -> bytes:
    """A magic 2 batch with this (already compressed) records section."""
    template = bytearray(encode_batch([(b"k", b"v", (), 1)], compression=codec)[:HEADER_SIZE])
    out = template + records
    struct.pack_into(">i", out, 8, len(out) - 12)
    struct.pack_into(">i", out, 23, count - 1)
    struct.pack_into(">i", out, 57, count)
    struct.pack_into(">I", out, 17, batch_crc(out, len(out)))
    return bytes(out)


def _produce(s: socket.socket, batch: bytes, topic: str = "t") -> int:
    request = ProduceRequest(
        transactional_id=None,
        acks=i16(-1),
        timeout=timedelta(seconds=10),
        topic_data=(
            TopicProduceData(
                name=TopicName(topic),
                partition_data=(PartitionProduceData(index=i32(0), records=cast(Records, batch)),),
            ),
        ),
    )
    response, _ = call(s, request)
    return int(response.responses[0].partition_responses[0].error_code)


def _peak_rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


@pytest.fixture(scope="module")
def bombs() -> dict[str, bytes]:
    made = {name: make(_one_huge_record(size)) for name, (_, make, size) in BOMBS.items()}
    # Past what a batch may expand to, the repeated blocks read as the record does.
    prefix = 101 * MB
    for name, read in (
        ("gzip", lambda b: zlib.decompressobj(31).decompress(b, prefix)),
        ("zstd", lambda b: zstandard.ZstdDecompressor().stream_reader(b).read(prefix)),
    ):
        record = _one_huge_record(BOMBS[name][2])
        expected = b"".join(next(record) for _ in range(prefix // MB + 1))[:prefix]
        assert read(made[name]) == expected, name
    return made


def _create_topic(s: socket.socket, name: str) -> None:
    topic = CreatableTopic(
        name=TopicName(name),
        num_partitions=i32(1),
        replication_factor=i16(1),
        assignments=(),
        configs=(),
    )
    created, _ = call(
        s, CreateTopicsRequest(topics=(topic,), timeout=timedelta(seconds=10), validate_only=False)
    )
    assert created.topics[0].error_code == ErrorCode.none


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[tuple[BrokerProcess, socket.socket]]:
    """A broker of its own: its peak memory is measured."""
    if not Path("/proc/self/status").exists():
        pytest.skip("needs /proc to read the broker's peak memory")
    b = BrokerProcess(tmp_path / "data").start()
    try:
        with socket.create_connection(("127.0.0.1", b.port), 30) as s:
            _create_topic(s, "t")
            yield b, s
    finally:
        b.stop()


@pytest.fixture(scope="module")
def forging_broker(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[socket.socket]:
    """One broker for the forged counts: each codec writes to a topic of its own."""
    b = BrokerProcess(tmp_path_factory.mktemp("forged") / "data").start()
    try:
        with socket.create_connection(("127.0.0.1", b.port), 30) as s:
            yield s
    finally:
        b.stop()


def test_bombs_are_refused_without_the_memory(
    broker: tuple[BrokerProcess, socket.socket], bombs: dict[str, bytes]
) -> None:
    b, s = broker
    assert b.proc is not None
    # Warm up the codecs and the produce path with one legitimate batch per codec.
    for codec in (1, 2, 3, 4):
        assert _produce(s, encode_batch([(b"k", b"v" * 1000, (), 1)], compression=codec)) == 0
    before = _peak_rss_kb(b.proc.pid)
    for name, (codec, _, _) in BOMBS.items():
        assert len(bombs[name]) < MB, name
        error = _produce(s, _batch(codec, bombs[name]))
        assert error == ErrorCode.corrupt_message, name
    grown_mb = (_peak_rss_kb(b.proc.pid) - before) / 1024
    assert grown_mb < 64, f"peak RSS grew by {grown_mb:.0f} MB"
    # Still serving, on this connection and a new one.
    assert _produce(s, encode_batch([(b"k", b"after", (), 1)], compression=4)) == 0
    with socket.create_connection(("127.0.0.1", b.port), 10) as other:
        versions, _ = call(other, ApiVersionsRequest())
        assert versions.error_code == ErrorCode.none


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_forged_record_count_is_refused(forging_broker: socket.socket, codec: int) -> None:
    s = forging_broker
    topic = f"forged-{codec}"
    _create_topic(s, topic)
    honest = encode_batch([(b"k", b"v", (), 1)], compression=codec)
    forged = _batch(codec, honest[HEADER_SIZE:], count=2**31 - 1)
    assert _produce(s, forged, topic) == ErrorCode.invalid_record
    # No offsets were consumed: the next batch gets offset 0.
    request_ok = _produce(s, honest, topic)
    assert request_ok == 0
