"""Walking the records section of a v2 record batch: the one reader of its fields.

Each record is::

    length varint | attributes int8 | timestampDelta varlong | offsetDelta varint |
    keyLength varint | key | valueLength varint | value | headerCount varint |
    (headerKeyLength varint | headerKey | headerValueLength varint | headerValue)*

Varints are zig-zag encoded; a length of -1 means null.

This is the hot loop of every reader of stored records (the fetch-side decoders,
the cleaner, the coordinator's loader, Spark). It runs once per batch and fills
one Python list per field, so callers turn them into tuples, columns or spans
with C-speed ``zip``/``extend`` rather than a per-record Python call. Varints of
one and two bytes (every delta and length of records up to 8 KiB) are decoded
inline; longer ones call :func:`read_varint`.
"""

from __future__ import annotations

from typing import NamedTuple

from kgroups.errors import ErrorCode, KafkaError

__all__ = ["RawHeader", "ScannedRecords", "malformed", "read_varint", "scan_records"]

# A record header as stored: (key bytes, value or None); callers decode the key.
RawHeader = tuple[bytes, bytes | None]


class ScannedRecords(NamedTuple):
    """The fields of a batch's records, one list per field, in record order.

    Record ``i`` occupies ``[ends[i - 1], ends[i])`` of the section (``[0, ends[0])``
    for the first). ``headers`` maps the index of each record that has headers
    (few do) to them. Without ``bodies``, keys, values and headers stay empty.
    """

    ends: list[int]
    offset_deltas: list[int]
    timestamp_deltas: list[int]
    keys: list[bytes | None]
    values: list[bytes | None]
    headers: dict[int, list[RawHeader]]


def malformed(reason: str) -> KafkaError:
    return KafkaError(ErrorCode.corrupt_message, f"malformed record batch: {reason}")


def read_varint(data: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """The zig-zag varint at ``pos`` and the position after it."""
    result = 0
    shift = 0
    while True:
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift > 63:
            raise malformed("varint longer than 10 bytes")


def read_headers(data: bytes, pos: int) -> tuple[list[RawHeader], int]:
    """The headers whose count is at ``pos``, and the position after them."""
    count, pos = read_varint(data, pos)
    if count < 0:
        raise malformed("negative header count")
    headers: list[RawHeader] = []
    for _ in range(count):
        n, pos = read_varint(data, pos)
        if n < 0:
            raise malformed("null header key")
        key = data[pos : pos + n]
        pos += n
        n, pos = read_varint(data, pos)
        if n < 0:
            headers.append((key, None))
        else:
            headers.append((key, data[pos : pos + n]))
            pos += n
    return headers, pos


def scan_records(data: bytes, count: int, *, bodies: bool = True) -> ScannedRecords:
    """Read the ``count`` records of the records section ``data``.

    A record whose fields do not fill exactly its stated length, or that runs
    past ``data``, is CORRUPT_MESSAGE. Without ``bodies`` only lengths and
    deltas are read, each record's length trusted to reach the next.
    """
    slow = read_varint
    ends: list[int] = []
    offset_deltas: list[int] = []
    timestamp_deltas: list[int] = []
    keys: list[bytes | None] = []
    values: list[bytes | None] = []
    headers: dict[int, list[RawHeader]] = {}
    # Each varint: b < 0x80 is one byte, c < 0x80 two; zig-zag decoded as (n >> 1) ^ -(n & 1).
    pos = 0
    try:
        for i in range(count):
            b = data[pos]
            if b < 0x80:
                n = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                c = data[pos + 1]
                if c < 0x80:
                    n = (b & 0x7F) | (c << 7)
                    n = (n >> 1) ^ -(n & 1)
                    pos += 2
                else:
                    n, pos = slow(data, pos)
            end = pos + n
            ends.append(end)
            pos += 1  # record attributes: unused in v2
            b = data[pos]
            if b < 0x80:
                timestamp_deltas.append((b >> 1) ^ -(b & 1))
                pos += 1
            else:
                c = data[pos + 1]
                if c < 0x80:
                    n = (b & 0x7F) | (c << 7)
                    timestamp_deltas.append((n >> 1) ^ -(n & 1))
                    pos += 2
                else:
                    n, pos = slow(data, pos)
                    timestamp_deltas.append(n)
            b = data[pos]
            if b < 0x80:
                offset_deltas.append((b >> 1) ^ -(b & 1))
                pos += 1
            else:
                c = data[pos + 1]
                if c < 0x80:
                    n = (b & 0x7F) | (c << 7)
                    offset_deltas.append((n >> 1) ^ -(n & 1))
                    pos += 2
                else:
                    n, pos = slow(data, pos)
                    offset_deltas.append(n)
            if not bodies:
                if end < pos + 3:  # key length, value length, header count
                    raise malformed(f"record {i} is shorter than its fields")
                pos = end
                continue
            b = data[pos]
            if b < 0x80:
                n = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                c = data[pos + 1]
                if c < 0x80:
                    n = (b & 0x7F) | (c << 7)
                    n = (n >> 1) ^ -(n & 1)
                    pos += 2
                else:
                    n, pos = slow(data, pos)
            if n < 0:
                keys.append(None)
            else:
                keys.append(data[pos : pos + n])
                pos += n
            b = data[pos]
            if b < 0x80:
                n = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                c = data[pos + 1]
                if c < 0x80:
                    n = (b & 0x7F) | (c << 7)
                    n = (n >> 1) ^ -(n & 1)
                    pos += 2
                else:
                    n, pos = slow(data, pos)
            if n < 0:
                values.append(None)
            else:
                values.append(data[pos : pos + n])
                pos += n
            if data[pos]:  # a header count other than 0
                headers[i], pos = read_headers(data, pos)
            else:
                pos += 1
            if pos != end:
                raise malformed(f"record {i} does not fill its stated length")
    except IndexError:
        raise malformed("records run past the end of the batch") from None
    if pos > len(data):
        raise malformed("records run past the end of the batch")
    return ScannedRecords(ends, offset_deltas, timestamp_deltas, keys, values, headers)
