"""Batches of many same-size records, as producers send them, pass or fail
validation exactly as a record-by-record walk decides: a forged record count
or a record length that breaks a run is refused wherever it is."""

from __future__ import annotations

import struct

import pytest

from kgroups.errors import ErrorCode, KafkaError
from kgroups.partitions.batch_validation import validate_batches
from kgroups.records.batch import HEADER_SIZE, batch_crc, encode_batch
from kgroups.records.scan import read_varint

LIMITS = {"max_message_bytes": 10 << 20, "segment_bytes": 1 << 30}


def _batch(values: list[bytes], timestamps: list[int] | None = None) -> bytes:
    stamps = timestamps or [1_700_000_000_000] * len(values)
    return encode_batch([(None, v, (), t) for v, t in zip(values, stamps, strict=True)])


def _reseal(batch: bytearray) -> bytes:
    """The batch's CRC made right again after an edit."""
    struct.pack_into(">I", batch, 17, batch_crc(batch, len(batch)))
    return bytes(batch)


def _error(payload: bytes | memoryview) -> ErrorCode | None:
    try:
        validate_batches(payload, **LIMITS)  # type: ignore[arg-type]
    except KafkaError as e:
        return e.error_code
    return None


def _recount(batch: bytes, count: int) -> bytes:
    """The batch claiming ``count`` records (header count and last offset delta)."""
    edited = bytearray(batch)
    struct.pack_into(">i", edited, 23, count - 1)
    struct.pack_into(">i", edited, 57, count)
    return _reseal(edited)


@pytest.mark.parametrize(
    "batch",
    [
        _batch([b"x" * 1000] * 1000),  # one size change, where offset deltas grow a byte
        _batch([b"x" * 20] * 300, list(range(300))),  # timestamp deltas grow a byte too
        _batch([b"x" * (i % 3) for i in range(200)]),  # no run long enough
        _batch([b"x" * 100] * 9 + [b"y" * 5000] * 40 + [b"z"] * 30),
    ],
)
def test_producer_batches_pass_whole_and_as_views(batch: bytes) -> None:
    assert _error(batch) is None
    assert _error(memoryview(bytearray(batch))) is None
    assert _error(memoryview(batch)[0:]) is None


@pytest.mark.parametrize("claimed", [999, 1001, 1])
def test_a_forged_count_is_refused(claimed: int) -> None:
    batch = _recount(_batch([b"x" * 1000] * 1000), claimed)
    assert _error(batch) == ErrorCode.invalid_record


def _record_starts(batch: bytes) -> list[int]:
    starts, pos = [], HEADER_SIZE
    while pos < len(batch):
        starts.append(pos)
        length, after = read_varint(batch, pos)
        pos = after + length
    return starts


@pytest.mark.parametrize("record", [0, 7, 63, 64, 500, 999])
@pytest.mark.parametrize("change", [-1, 1])
def test_a_record_length_breaking_a_run_is_refused(record: int, change: int) -> None:
    batch = bytearray(_batch([b"x" * 1000] * 1000))
    start = _record_starts(bytes(batch))[record]
    length, after = read_varint(batch, start)
    assert after - start == 2  # 1 KB records: a two-byte length prefix
    zigzag = (length + change) << 1
    batch[start] = (zigzag & 0x7F) | 0x80
    batch[start + 1] = zigzag >> 7
    assert _error(_reseal(batch)) == ErrorCode.invalid_record
