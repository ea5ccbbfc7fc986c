"""Produce payload checks and in-place offset assignment."""

from __future__ import annotations

import struct

import pytest
from storage_helpers import make_batch

from kgroups.errors import ErrorCode, KafkaError
from kgroups.partitions.batch_validation import assign_offsets, validate_batches
from kgroups.records.batch import batch_crc, decode_records, encode_batch, read_header
from kgroups.records.compression import compress, decompress

LIMITS = {"max_message_bytes": 1_048_588, "segment_bytes": 1 << 30}


def error_of(payload: bytes, **kwargs: object) -> ErrorCode:
    with pytest.raises(KafkaError) as exc:
        validate_batches(payload, **{**LIMITS, **kwargs})  # type: ignore[arg-type]
    return exc.value.error_code


def test_accepts_concatenated_batches() -> None:
    a, b = make_batch(3), make_batch(2, compression=4)
    found = validate_batches(a + b, **LIMITS)
    assert [pos for pos, _ in found] == [0, len(a)]
    assert [h.records_count for _, h in found] == [3, 2]


def test_old_magic_is_unsupported() -> None:
    legacy = bytearray(make_batch())
    legacy[16] = 1
    assert error_of(bytes(legacy)) == ErrorCode.unsupported_for_message_format


def test_truncated_batches_are_corrupt() -> None:
    batch = make_batch(5)
    assert error_of(batch[:-1]) == ErrorCode.corrupt_message
    assert error_of(batch + batch[:30]) == ErrorCode.corrupt_message
    assert error_of(batch + batch[:10]) == ErrorCode.corrupt_message


def test_bad_length_is_corrupt() -> None:
    bad = bytearray(make_batch())
    struct.pack_into(">i", bad, 8, 20)
    assert error_of(bytes(bad)) == ErrorCode.corrupt_message


def test_crc_mismatch_is_corrupt() -> None:
    bad = bytearray(make_batch(3))
    bad[-1] ^= 0x40
    assert error_of(bytes(bad)) == ErrorCode.corrupt_message


def test_sizes() -> None:
    batch = make_batch(10, value_size=100)
    assert error_of(batch, max_message_bytes=len(batch) - 1) == ErrorCode.message_too_large
    validate_batches(batch, max_message_bytes=len(batch), segment_bytes=len(batch))
    assert error_of(batch + batch, segment_bytes=len(batch) * 2 - 1) == (
        ErrorCode.record_list_too_large
    )


def test_unknown_codec() -> None:
    bad = bytearray(make_batch())
    struct.pack_into(">h", bad, 21, 6)
    struct.pack_into(">I", bad, 17, batch_crc(bad, len(bad)))
    assert error_of(bytes(bad)) == ErrorCode.unsupported_compression_type


def _reseal(batch: bytearray) -> bytes:
    struct.pack_into(">I", batch, 17, batch_crc(batch, len(batch)))
    return bytes(batch)


def test_record_count_must_match_offsets() -> None:
    bad = bytearray(make_batch(3))
    struct.pack_into(">i", bad, 23, 5)  # lastOffsetDelta
    assert error_of(_reseal(bad)) == ErrorCode.invalid_record
    empty = bytearray(make_batch(1))
    struct.pack_into(">i", empty, 57, 0)
    assert error_of(_reseal(empty)) == ErrorCode.invalid_record
    # Consistent but impossible: a million records in a few dozen bytes.
    forged = bytearray(make_batch(1))
    struct.pack_into(">i", forged, 23, 999_999)
    struct.pack_into(">i", forged, 57, 1_000_000)
    assert error_of(_reseal(forged)) == ErrorCode.invalid_record


def test_client_only_rules() -> None:
    control = encode_batch([(b"\x00\x00\x00\x00", b"", [], 1)], is_control=True)
    assert error_of(control) == ErrorCode.invalid_record
    validate_batches(control, **LIMITS, from_client=False)
    no_seq = make_batch(producer_id=5, producer_epoch=0, base_sequence=-1)
    assert error_of(no_seq) == ErrorCode.invalid_record
    assert error_of(encode_batch([(b"k", b"v", [], 1)], base_offset=9)) == ErrorCode.invalid_record


def test_empty_payload() -> None:
    assert error_of(b"") == ErrorCode.invalid_record


def test_compacted_topics_need_keys() -> None:
    for codec in (0, 2):
        keyless = encode_batch([(b"k", b"v", [], 1), (None, b"v", [], 1)], compression=codec)
        assert error_of(keyless, require_keys=True) == ErrorCode.invalid_record
        keyed = encode_batch([(b"k", b"v", [], 1)], compression=codec)
        validate_batches(keyed, **LIMITS, require_keys=True)


def test_assign_offsets_keeps_the_crc_valid() -> None:
    a, b = make_batch(3, compression=2), make_batch(4)
    payload = a + b
    found = validate_batches(payload, **LIMITS)
    buf = bytearray(payload)
    metas = assign_offsets(buf, found, 1000, partition_leader_epoch=7, log_append_time=None)
    assert metas == [
        (0, len(a), 1002, read_header(a).max_timestamp),
        (len(a), len(b), 1006, read_header(b).max_timestamp),
    ]
    # Only baseOffset and partitionLeaderEpoch changed, both outside the CRC.
    assert buf[17 : len(a)] == payload[17 : len(a)]
    h = read_header(buf, len(a))
    assert (h.base_offset, h.partition_leader_epoch) == (1003, 7)
    assert [r.offset for r in decode_records(bytes(buf[len(a) :]))] == [1003, 1004, 1005, 1006]
    validate_batches(bytes(buf), **LIMITS, from_client=False)


def test_log_append_time_restamps_and_recomputes_crc() -> None:
    payload = make_batch(3, timestamp=1000, compression=3)
    found = validate_batches(payload, **LIMITS)
    buf = bytearray(payload)
    metas = assign_offsets(buf, found, 0, partition_leader_epoch=0, log_append_time=5555)
    assert metas[0][3] == 5555
    h = read_header(buf)
    assert h.timestamp_type == 1 and h.max_timestamp == 5555
    assert h.base_timestamp == 1000
    assert h.crc == batch_crc(buf, len(buf))
    # Compressed records are left as they were: no recompression.
    assert buf[61:] == payload[61:]
    assert [r.timestamp for r in decode_records(bytes(buf))] == [5555] * 3


def _forge(batch: bytes, count: int, *, records: bytes | None = None) -> bytes:
    """``batch`` claiming ``count`` records (lastOffsetDelta to match), and
    optionally another records section (compressed with the batch's codec)."""
    header = read_header(batch)
    body = batch[61:] if records is None else compress(header.compression, records)
    out = bytearray(batch[:61] + body)
    struct.pack_into(">i", out, 8, len(out) - 12)
    struct.pack_into(">i", out, 23, count - 1)
    struct.pack_into(">i", out, 57, count)
    return _reseal(out)


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_record_count_must_match_the_records(codec: int) -> None:
    batch = encode_batch([(b"k", b"v%d" % i, [], 1) for i in range(3)], compression=codec)
    validate_batches(_forge(batch, 3), **LIMITS)
    for count in (1, 2, 4, 2**31 - 1):
        assert error_of(_forge(batch, count)) == ErrorCode.invalid_record, count


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_records_must_fill_the_batch_exactly(codec: int) -> None:
    batch = encode_batch([(b"k", b"v", [], 1)], compression=codec)
    records = decode_records_section(batch)
    for bad in (records + b"\x00", records[:-1], b"\x00" * 64, b"\x7f" + records[1:]):
        assert error_of(_forge(batch, 1, records=bad)) == ErrorCode.invalid_record, bad


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_compressed_records_need_consecutive_offset_deltas(codec: int) -> None:
    two = encode_batch([(b"k", b"a", [], 1), (b"k", b"b", [], 1)])
    records = bytearray(two[61:])
    records[3] = 4  # second record's offset delta 0 -> 2 (zig-zag); first record is 7 bytes
    batch = encode_batch([(b"k", b"v", [], 1)], compression=codec)
    assert error_of(_forge(batch, 2, records=bytes(records))) == ErrorCode.invalid_record


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_decompression_bomb_is_refused(codec: int) -> None:
    # One record claiming a 16 MiB value of zeros, limited to 4 MiB.
    value = 16 * 1024 * 1024
    body = b"\x00\x00\x00\x01" + _zigzag(value) + bytes(value) + b"\x00"
    batch = encode_batch([(b"k", b"v", [], 1)], compression=codec)
    bomb = _forge(batch, 1, records=_zigzag(len(body)) + body)
    assert len(bomb) < LIMITS["max_message_bytes"]
    assert error_of(bomb, max_decompressed_bytes=4 * 1024 * 1024) == ErrorCode.corrupt_message
    validate_batches(bomb, **LIMITS, max_decompressed_bytes=value + 64)


def _zigzag(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def decode_records_section(batch: bytes) -> bytes:
    header = read_header(batch)
    return decompress(header.compression, batch[61:]) if header.compression else batch[61:]


@pytest.mark.parametrize("codec", [0, 1])
def test_record_lengths_of_every_varint_size_are_walked(codec: int) -> None:
    # Lengths of one (< 64), two (< 8192) and three bytes, the walk's fast paths.
    values = [b"v", b"x" * 200, b"y" * 9000, b"z" * 63, b"w" * 8100]
    batch = encode_batch([(b"k", v, [], 1) for v in values], compression=codec)
    validate_batches(_forge(batch, len(values)), **LIMITS)
    for count in (len(values) - 1, len(values) + 1):
        assert error_of(_forge(batch, count)) == ErrorCode.invalid_record, count
    records = decode_records_section(batch)
    for bad in (records[:-1], records + b"\x00", records[:3]):
        assert error_of(_forge(batch, len(values), records=bad)) == ErrorCode.invalid_record
