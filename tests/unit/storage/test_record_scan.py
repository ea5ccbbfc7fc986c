"""Every reader of a batch's records agrees on the same tricky inputs.

``decode_records``, the cleaner's ``parse_records`` and Spark's ``RecordColumns``
read records through ``record_scan``; ``iter_key_values`` and the produce
validator keep their own faster loops. Here they all read hand-built records
sections whose varints, nulls and headers take every path, and must see the same
records, or all refuse the same malformed ones.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import pytest

from kgroups.errors import ErrorCode, KafkaError
from kgroups.partitions.batch_validation import validate_batches
from kgroups.records.batch import (
    HEADER_SIZE,
    HEADER_STRUCT,
    LOG_OVERHEAD,
    batch_crc,
    decode_records,
    iter_key_values,
    read_header,
)
from kgroups.records.compression import GZIP, ZSTD, compress
from kgroups.records.filter import parse_records
from kgroups.spark.record_columns import RecordColumns

BASE_OFFSET = 0  # the validator takes client batches, which start at 0
BASE_TIMESTAMP = 1_700_000_000_000
LIMITS = {"max_message_bytes": 1 << 30, "segment_bytes": 1 << 30}

# What every reader is compared on: (offset, timestamp, key, value, headers).
Seen = tuple[int, int, bytes | None, bytes | None, list[tuple[bytes, bytes | None]]]


def varint(value: int, width: int = 0) -> bytes:
    """Zig-zag varint of ``value``, padded to ``width`` bytes (still valid)."""
    n = (value << 1) ^ (value >> 63)
    n &= (1 << 64) - 1
    out = bytearray()
    while n >= 0x80 or len(out) + 1 < width:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def blob(data: bytes | None, width: int = 0) -> bytes:
    return varint(-1, width) if data is None else varint(len(data), width) + data


def record(
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: list[tuple[bytes, bytes | None]] | None = None,
    width: int = 0,
    length_error: int = 0,
) -> bytes:
    headers = headers or []
    body = b"\x00" + varint(timestamp_delta, width) + varint(offset_delta, width)
    body += blob(key, width) + blob(value, width) + varint(len(headers), width)
    for hkey, hvalue in headers:
        body += blob(hkey, width) + blob(hvalue, width)
    return varint(len(body) + length_error, width) + body


def batch(
    section: bytes, count: int, *, compression: int = 0, log_append_time: bool = False
) -> bytes:
    payload = compress(compression, section) if compression else section
    out = bytearray(HEADER_SIZE + len(payload))
    attributes = compression | (0x08 if log_append_time else 0)
    HEADER_STRUCT.pack_into(
        out, 0, BASE_OFFSET, len(out) - LOG_OVERHEAD, -1, 2, 0, attributes,
        max(count - 1, 0), BASE_TIMESTAMP, BASE_TIMESTAMP + 99, -1, -1, -1, count,
    )  # fmt: skip
    out[HEADER_SIZE:] = payload
    struct.pack_into(">I", out, 17, batch_crc(out, len(out)))
    return bytes(out)


def by_decode_records(raw: bytes) -> list[Seen]:
    return [
        (r.offset, r.timestamp, r.key, r.value, [(k.encode(), v) for k, v in r.headers])
        for r in decode_records(raw)
    ]


def by_columns(raw: bytes) -> list[Seen]:
    columns = RecordColumns(include_headers=True)
    columns.add_batch(memoryview(raw), read_header(raw), 0, 1 << 62)
    records = columns.decode()
    assert records.keys is not None and records.values is not None
    assert records.headers is not None
    headers = [[(h["key"].encode(), h["value"]) for h in hs] for hs in records.headers]
    return list(
        zip(
            records.offsets.tolist(),
            records.timestamps.tolist(),
            records.keys.to_pylist(),
            records.values.to_pylist(),
            headers,
            strict=True,
        )
    )


def by_columns_in_range(raw: bytes) -> list[tuple[int, int, bytes | None]]:
    """Only offsets 1 and 2: the path for a batch straddling the range."""
    columns = RecordColumns(include_headers=True)
    columns.add_batch(memoryview(raw), read_header(raw), 1, 3)
    records = columns.decode()
    assert records.keys is not None
    return list(
        zip(
            records.offsets.tolist(),
            records.timestamps.tolist(),
            records.keys.to_pylist(),
            strict=True,
        )
    )


def by_index_only(raw: bytes) -> list[tuple[int, int]]:
    columns = RecordColumns(include_headers=False, index_only=True)
    columns.add_batch(memoryview(raw), read_header(raw), 0, 1 << 62)
    records = columns.decode()
    return list(zip(records.offsets.tolist(), records.timestamps.tolist(), strict=True))


def by_parse_records(raw: bytes) -> list[tuple[int, int, bytes | None, bool]]:
    header = read_header(raw)
    data = decompressed_section(raw)
    spans = parse_records(data, header.records_count)
    assert b"".join(data[start:end] for start, end, *_ in spans) == data  # spans tile it
    return [
        (BASE_OFFSET + od, header.base_timestamp + td, key, tombstone)
        for _, _, od, td, key, tombstone, *_ in spans
    ]


def decompressed_section(raw: bytes) -> bytes:
    from kgroups.records.batch import records_section

    return records_section(raw, read_header(raw))


def validates(raw: bytes) -> bool:
    try:
        validate_batches(raw, **LIMITS)  # type: ignore[arg-type]
    except KafkaError as exc:
        assert exc.error_code is ErrorCode.invalid_record
        return False
    return True


def agree(raw: bytes, expected: list[Seen], *, log_append_time: bool = False) -> None:
    if log_append_time:
        expected = [(o, BASE_TIMESTAMP + 99, k, v, h) for o, _, k, v, h in expected]
    assert by_decode_records(raw) == expected
    assert by_columns(raw) == expected
    assert iter_key_values(raw) == [(k, v) for _, _, k, v, _ in expected]
    assert by_parse_records(raw) == [
        (o, t if not log_append_time else by_parse_time(o, raw), k, v is None)
        for o, t, k, v, _ in expected
    ]
    assert by_index_only(raw) == [(o, t) for o, t, *_ in expected]
    assert by_columns_in_range(raw) == [(o, t, k) for o, t, k, *_ in expected if 1 <= o < 3]


def by_parse_time(offset: int, raw: bytes) -> int:
    # Spans carry the stored timestamp delta, whatever the batch's timestamp type.
    return int(BASE_TIMESTAMP + FIELDS[offset].get("timestamp_delta", 0))


def all_refuse(raw: bytes) -> None:
    """Every reader raises CORRUPT_MESSAGE (the validator: INVALID_RECORD)."""
    header = read_header(raw)
    data = decompressed_section(raw)
    readers: list[Callable[[], Any]] = [
        lambda: decode_records(raw),
        lambda: by_columns(raw),
        lambda: iter_key_values(raw),
        lambda: parse_records(data, header.records_count),
    ]
    for read in readers:
        with pytest.raises(KafkaError) as exc:
            read()
        assert exc.value.error_code is ErrorCode.corrupt_message


# Records that take every path: one-, two-, three- and ten-byte varints, padded
# varints, null and empty keys and values, headers with null and empty parts.
FIELDS: list[dict[str, Any]] = [
    {"key": b"k", "value": b"v"},
    {"timestamp_delta": -1, "key": None, "value": b""},
    {"timestamp_delta": 64, "key": b"", "value": None},
    {
        "timestamp_delta": -(2**62),
        "key": b"K" * 300,
        "value": b"V" * 20_000,
        "headers": [(b"h", None), (b"", b""), ("é".encode(), b"x")],
    },
    {"timestamp_delta": 8191, "key": None, "value": None, "width": 2},
    {
        "timestamp_delta": 8192,
        "key": b"k" * 64,
        "value": b"v" * 70,
        "headers": [(b"a", b"b")],
        "width": 3,
    },
    {"timestamp_delta": 3, "key": b"\x80\xff", "value": b"\x01", "width": 10},
]  # fmt: skip


def section(fields: list[dict[str, Any]]) -> bytes:
    return b"".join(record(i, **{"timestamp_delta": 0, **f}) for i, f in enumerate(fields))


SECTION = section(FIELDS)
EXPECTED: list[Seen] = [
    (i, BASE_TIMESTAMP + f.get("timestamp_delta", 0), f["key"], f["value"], f.get("headers", []))
    for i, f in enumerate(FIELDS)
]


@pytest.mark.parametrize("compression", [0, GZIP, ZSTD])
def test_readers_agree_on_every_varint_width_null_and_header(compression: int) -> None:
    raw = batch(SECTION, len(FIELDS), compression=compression)
    agree(raw, EXPECTED)
    assert validates(raw)


def test_readers_agree_on_log_append_time() -> None:
    raw = batch(SECTION, len(FIELDS), log_append_time=True)
    agree(raw, EXPECTED, log_append_time=True)


def test_readers_agree_on_many_records_with_two_byte_offset_deltas() -> None:
    fields = [{"timestamp_delta": i * 7, "key": b"%d" % i, "value": b"x" * 100} for i in range(300)]
    expected: list[Seen] = [
        (i, BASE_TIMESTAMP + i * 7, b"%d" % i, b"x" * 100, []) for i in range(300)
    ]
    raw = batch(section(fields), 300, compression=GZIP)
    agree(raw, expected)
    assert validates(raw)


def test_a_batch_without_records_reads_as_empty() -> None:
    raw = batch(b"", 0)
    agree(raw, [])
    assert not validates(raw)  # clients may not send one


# Small enough to cut at every byte: every field of every varint width.
SHORT_FIELDS = [
    {**f, "key": (f["key"] or b"")[:3], "value": (f["value"] or b"")[:3]} for f in FIELDS
]
SHORT_SECTION = section(SHORT_FIELDS)


@pytest.mark.parametrize("cut", range(1, len(SHORT_SECTION)))
def test_every_truncation_is_refused_by_every_reader(cut: int) -> None:
    raw = batch(SHORT_SECTION[:cut], len(FIELDS))
    all_refuse(raw)
    assert not validates(raw)


@pytest.mark.parametrize("error", [-1, 1])
def test_records_not_filling_their_length_are_refused(error: int) -> None:
    for which in range(len(FIELDS)):
        fields = [dict(f) for f in FIELDS]
        fields[which]["length_error"] = error
        all_refuse(batch(section(fields), len(FIELDS)))
        all_refuse(batch(section(fields[which:]), len(FIELDS) - which))  # the broken one first
        all_refuse(batch(section(fields[: which + 1]), which + 1))  # and last
    # The validator trusts record lengths: it does not look inside records.


def test_a_count_beyond_the_records_is_refused() -> None:
    raw = batch(SECTION, len(FIELDS) + 1)
    all_refuse(raw)
    assert not validates(raw)


@pytest.mark.parametrize("headers", [b"\x02\x01\x02x", b"\x03"])
def test_a_null_header_key_or_negative_header_count_is_refused(headers: bytes) -> None:
    # Header count 1 then key length -1; or header count -2.
    body = record(0, 0, b"k", b"v")[1:-1] + headers
    all_refuse(batch(varint(len(body)) + body, 1))


def test_columns_decode_batches_collected_together_as_one_arrow_batch() -> None:
    from kgroups.spark.schema import arrow_schema

    plain = batch(SECTION, len(FIELDS))
    compressed = batch(SECTION, len(FIELDS), compression=ZSTD)
    columns = RecordColumns(include_headers=True)
    # Record 3's timestamp is out of Spark's range: left out.
    columns.add_batch(memoryview(plain), read_header(plain), 0, 3)
    columns.add_batch(memoryview(compressed), read_header(compressed), 4, 1 << 62)
    rows = columns.to_arrow("t", 3, arrow_schema(True)).to_pylist()
    wanted = EXPECTED[:3] + EXPECTED[4:]
    assert [(r["key"], r["value"], r["offset"]) for r in rows] == [
        (k, v, o) for o, _, k, v, _ in wanted
    ]
    assert [[(h["key"].encode(), h["value"]) for h in r["headers"]] for r in rows] == [
        h for *_, h in wanted
    ]
    assert {(r["topic"], r["partition"], r["timestampType"]) for r in rows} == {("t", 3, 0)}
