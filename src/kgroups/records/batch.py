"""Kafka record batch v2 (magic 2): header access, record decoding and encoding.

Layout of a batch (all integers big-endian)::

    baseOffset int64 | batchLength int32 | partitionLeaderEpoch int32 | magic int8 |
    crc uint32 | attributes int16 | lastOffsetDelta int32 | baseTimestamp int64 |
    maxTimestamp int64 | producerId int64 | producerEpoch int16 | baseSequence int32 |
    recordsCount int32 | records...

``batchLength`` counts the bytes after itself, so a batch occupies ``batchLength + 12``
bytes. The CRC32C covers everything from ``attributes`` to the end, which is why the
broker may rewrite ``baseOffset`` and ``partitionLeaderEpoch`` without touching it.
When the batch is compressed, everything after ``recordsCount`` is one compressed
blob; :mod:`kgroups.records.scan` reads the records in it.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from functools import lru_cache
from typing import NamedTuple

from kgroups.errors import ErrorCode, KafkaError
from kgroups.records.checksum import crc32c
from kgroups.records.compression import compress, decompress
from kgroups.records.scan import (
    RawHeader,
    malformed,
    read_headers,
    read_varint,
    record_span,
    scan_records,
)

__all__ = [
    "ATTRIBUTES_OFFSET",
    "BASE_TIMESTAMP_OFFSET",
    "CRC_OFFSET",
    "HEADER_SIZE",
    "HEADER_STRUCT",
    "LOG_OVERHEAD",
    "MAX_TIMESTAMP_OFFSET",
    "PARTITION_LEADER_EPOCH_OFFSET",
    "BatchHeader",
    "BatchMeta",
    "Header",
    "Record",
    "RecordInput",
    "batch_crc",
    "decode_records",
    "encode_batch",
    "iter_batches",
    "read_header",
]

# Offsets of the fields the broker reads or rewrites in place.
PARTITION_LEADER_EPOCH_OFFSET = 12
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
BASE_TIMESTAMP_OFFSET = 27
MAX_TIMESTAMP_OFFSET = 35
HEADER_SIZE = 61
# baseOffset + batchLength: the part of a batch that batchLength does not count.
LOG_OVERHEAD = 12

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

HEADER_STRUCT = struct.Struct(">qiibIhiqqqhii")
_HEADER = HEADER_STRUCT
_BATCH_LENGTH = struct.Struct(">i")
assert _HEADER.size == HEADER_SIZE
# NamedTuples built straight from unpacked tuples: _make costs an extra call.
_new_tuple = tuple.__new__

Header = tuple[str, bytes | None]


class Record(NamedTuple):
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()


# What encode_batch takes for each record: (key, value, headers, timestamp_ms).
RecordInput = tuple[bytes | None, bytes | None, Sequence[Header], int]

# What the log needs to know about each batch it writes: (position within the
# written bytes, size, last offset, max timestamp) as finally stored.
BatchMeta = tuple[int, int, int, int]


class BatchHeader(NamedTuple):
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        """0 = CreateTime, 1 = LogAppendTime."""
        return (self.attributes & TIMESTAMP_TYPE_MASK) >> 3

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def size(self) -> int:
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_sequence(self) -> int:
        """Sequence of the last record; sequences wrap from int32 max to 0."""
        if self.base_sequence < 0:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset_delta) & 0x7FFFFFFF


def read_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """Unpack the 61-byte header at ``pos``; the caller checks it fits."""
    header: BatchHeader = _new_tuple(BatchHeader, _HEADER.unpack_from(buf, pos))
    return header


def iter_batches(buf: bytes | bytearray | memoryview) -> Iterator[tuple[int, BatchHeader]]:
    """Yield ``(position, header)`` for each whole batch in ``buf``.

    Stops quietly at an incomplete trailing batch (a fetch may end mid-batch);
    a length field too small to hold a header is corruption, not truncation.
    """
    end = len(buf)
    pos = 0
    unpack = _HEADER.unpack_from
    new = _new_tuple
    while pos + HEADER_SIZE <= end:
        header: BatchHeader = new(BatchHeader, unpack(buf, pos))
        size = header.batch_length + LOG_OVERHEAD
        if size < HEADER_SIZE:
            raise KafkaError(
                ErrorCode.corrupt_message,
                f"record batch at byte {pos} has invalid length {header.batch_length}",
            )
        if pos + size > end:
            return
        yield pos, header
        pos += size


def batch_crc(batch: bytes | bytearray | memoryview, size: int) -> int:
    """CRC32C of a batch as stored in its crc field (attributes to the end)."""
    with memoryview(batch) as view:
        return int(crc32c(view[ATTRIBUTES_OFFSET:size]))


def records_section(batch: bytes | bytearray | memoryview, header: BatchHeader) -> bytes:
    """The records of ``batch`` (everything after its header), decompressed."""
    data = bytes(batch[HEADER_SIZE : header.size])
    if header.compression:
        return decompress(header.compression, data)
    return data


def decode_records(
    batch: bytes | bytearray | memoryview,
    *,
    first_offset: int | None = None,
    last_offset: int | None = None,
) -> list[Record]:
    """Decode the records of one batch, decompressing as needed: every one, or
    only those from ``first_offset`` to ``last_offset`` (the others are stepped
    over, not decoded)."""
    if len(batch) < HEADER_SIZE:
        raise malformed("shorter than a batch header")
    header = read_header(batch, 0)
    if header.magic != 2:
        raise KafkaError(
            ErrorCode.unsupported_for_message_format,
            f"record batch magic {header.magic} is not supported",
        )
    size = header.size
    if size > len(batch) or size < HEADER_SIZE:
        raise malformed("batch length does not match the buffer")
    data = records_section(batch, header)
    base = header.base_offset
    count = header.records_count
    if first_offset is not None or last_offset is not None:
        first_delta = -1 if first_offset is None else first_offset - base
        last_delta = 2**31 if last_offset is None else last_offset - base
        dense = header.last_offset_delta == count - 1
        start, end, count = record_span(data, count, first_delta, last_delta, dense)
        data = data[start:end]
    base_timestamp = header.base_timestamp
    append_time = header.max_timestamp if header.timestamp_type else None  # LogAppendTime
    new = _new_tuple
    return [
        new(
            Record,
            (
                base + offset_delta,
                base_timestamp + timestamp_delta if append_time is None else append_time,
                key,
                value,
                headers and _text_keys(headers),
            ),
        )
        for _, _, offset_delta, timestamp_delta, key, _, value, headers in scan_records(data, count)
    ]


def _text_keys(headers: tuple[RawHeader, ...]) -> tuple[Header, ...]:
    return tuple((key.decode("utf-8", "surrogateescape"), value) for key, value in headers)


def _zigzag_varint(value: int) -> bytes:
    n = (value << 1) ^ (value >> 63)
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


# Zig-zag encodings of small values, which is nearly every length and delta:
# 0..4095 zig-zag to the even numbers below 8192, one varint byte below 128 and
# two above (written out rather than through _zigzag_varint: built at import).
_SMALL_VARINTS = tuple(
    bytes((n,)) if n < 0x80 else bytes(((n & 0x7F) | 0x80, n >> 7)) for n in range(0, 8192, 2)
)
_MINUS_ONE = _zigzag_varint(-1)


def _varint(value: int) -> bytes:
    if 0 <= value < 4096:
        return _SMALL_VARINTS[value]
    return _zigzag_varint(value)


def _encode_record(
    out: bytearray,
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[Header],
) -> None:
    # Key, value and header values are written inline rather than through one
    # nullable-bytes helper: this runs per record when producing and committing
    # offsets, and the extra calls cost about 10 % of it.
    body = bytearray(b"\x00")
    body += _varint(timestamp_delta)
    body += _varint(offset_delta)
    if key is None:
        body += _MINUS_ONE
    else:
        body += _varint(len(key))
        body += key
    if value is None:
        body += _MINUS_ONE
    else:
        body += _varint(len(value))
        body += value
    body += _varint(len(headers))
    for hkey, hvalue in headers:
        raw = hkey.encode("utf-8", "surrogateescape")
        body += _varint(len(raw))
        body += raw
        if hvalue is None:
            body += _MINUS_ONE
        else:
            body += _varint(len(hvalue))
            body += hvalue
    out += _varint(len(body))
    out += body


def encode_batch(
    records: Sequence[RecordInput],
    *,
    base_offset: int = 0,
    compression: int = 0,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    timestamp_type: int = 0,
    is_transactional: bool = False,
    is_control: bool = False,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> bytes:
    """Build one batch; records get consecutive offsets from ``base_offset``."""
    if not records:
        raise ValueError("a record batch needs at least one record")
    base_timestamp = records[0][3]
    max_timestamp = base_timestamp
    body = bytearray()
    small = _SMALL_VARINTS
    for delta, (key, value, headers, timestamp) in enumerate(records):
        if timestamp > max_timestamp:
            max_timestamp = timestamp
        timestamp_delta = timestamp - base_timestamp
        if headers or not 0 <= timestamp_delta < 4096 or delta >= 4096:
            _encode_record(body, delta, timestamp_delta, key, value, headers)
            continue
        # The usual record (no headers, small deltas) in one expression: what the
        # coordinator writes, one record per committed partition.
        record = b"".join(
            (
                b"\x00",  # attributes
                small[timestamp_delta],
                small[delta],
                _MINUS_ONE if key is None else _varint(len(key)) + key,
                _MINUS_ONE if value is None else _varint(len(value)) + value,
                b"\x00",  # no headers
            )
        )
        body += _varint(len(record))
        body += record
    payload: bytes | bytearray = compress(compression, bytes(body)) if compression else body
    attributes = compression & COMPRESSION_MASK
    if timestamp_type:
        attributes |= TIMESTAMP_TYPE_MASK
    if is_transactional:
        attributes |= TRANSACTIONAL_MASK
    if is_control:
        attributes |= CONTROL_MASK
    size = HEADER_SIZE + len(payload)
    out = bytearray(size)
    _HEADER.pack_into(
        out,
        0,
        base_offset,
        size - LOG_OVERHEAD,
        partition_leader_epoch,
        2,
        0,
        attributes,
        len(records) - 1,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        len(records),
    )
    out[HEADER_SIZE:] = payload
    struct.pack_into(">I", out, CRC_OFFSET, batch_crc(out, size))
    return bytes(out)


def encode_keyed_batch(records: Sequence[tuple[bytes, bytes | None]], timestamp: int) -> bytes:
    """``encode_batch`` of keyed records without headers, all of one timestamp,
    as a coordinator appends them: the same bytes, with less work per record
    (a key's length prefix is kept with it: a committer writes the same keys
    commit after commit)."""
    count = len(records)
    if not 0 < count <= len(_SMALL_VARINTS):
        return encode_batch([(key, value, (), timestamp) for key, value in records])
    small = _SMALL_VARINTS
    body = bytearray()
    for delta, (key, value) in enumerate(records):
        record = b"".join(
            (
                b"\x00\x00",  # attributes, timestamp delta 0
                small[delta],
                _prefixed_key(key),
                _MINUS_ONE if value is None else _varint(len(value)) + value,
                b"\x00",  # no headers
            )
        )
        body += _varint(len(record))
        body += record
    size = HEADER_SIZE + len(body)
    out = bytearray(size)
    _HEADER.pack_into(
        out,
        0,
        0,
        size - LOG_OVERHEAD,
        NO_PARTITION_LEADER_EPOCH,
        2,
        0,
        0,
        count - 1,
        timestamp,
        timestamp,
        NO_PRODUCER_ID,
        NO_PRODUCER_EPOCH,
        NO_SEQUENCE,
        count,
    )
    out[HEADER_SIZE:] = body
    struct.pack_into(">I", out, CRC_OFFSET, batch_crc(out, size))
    return bytes(out)


@lru_cache(maxsize=1 << 16)
def _prefixed_key(key: bytes) -> bytes:
    return _varint(len(key)) + key


def batch_length_at(buf: bytes | bytearray | memoryview, pos: int) -> int:
    """The batchLength field of the batch starting at ``pos``."""
    return int(_BATCH_LENGTH.unpack_from(buf, pos + 8)[0])


def iter_key_values(
    batch: bytes | bytearray | memoryview,
) -> list[tuple[bytes | None, bytes | None]]:
    """Just the (key, value) of each record of one batch: what a compacted
    log's reader (the coordinator's loader) needs. Control batches yield nothing.

    Deliberately not ``record_scan.scan_records``: loading ``__consumer_offsets``
    reads millions of small records, on which this loop, which decodes no deltas
    and builds only the pair, is about 20 % faster. It refuses what the scanner
    refuses (test_record_scan holds both to the same inputs)."""
    header = read_header(batch, 0)
    if header.is_control:
        return []
    data = records_section(batch, header)
    slow = read_varint
    out: list[tuple[bytes | None, bytes | None]] = []
    append = out.append
    pos = 0
    try:
        for i in range(header.records_count):
            b = data[pos]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                length, pos = slow(data, pos)
            following = pos + length
            p = pos + 1  # attributes
            while data[p] & 0x80:  # timestamp delta
                p += 1
            p += 1
            while data[p] & 0x80:  # offset delta
                p += 1
            b = data[p + 1]
            if b < 0x80:
                size = (b >> 1) ^ -(b & 1)
                p += 2
            else:
                size, p = slow(data, p + 1)
            key = None if size < 0 else data[p : p + size]
            if size > 0:
                p += size
            b = data[p]
            if b < 0x80:
                size = (b >> 1) ^ -(b & 1)
                p += 1
            else:
                size, p = slow(data, p)
            if size < 0:
                append((key, None))
            else:
                append((key, data[p : p + size]))
                p += size
            # Nearly always: no headers and the length right. Else walk the headers.
            if (p + 1 != following or data[p]) and (
                not data[p] or read_headers(data, p)[1] != following
            ):
                raise malformed(f"record {i} does not fill its stated length")
            pos = following
    except IndexError:
        raise malformed("records run past the end of the batch") from None
    if pos > len(data):
        raise malformed("records run past the end of the batch")
    return out
