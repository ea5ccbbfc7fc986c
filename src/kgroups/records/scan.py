"""Walking the records section of a v2 record batch: the one reader of its fields.

Each record is::

    length varint | attributes int8 | timestampDelta varlong | offsetDelta varint |
    keyLength varint | key | valueLength varint | value | headerCount varint |
    (headerKeyLength varint | headerKey | headerValueLength varint | headerValue)*

Varints are zig-zag encoded; a length of -1 means null.

This is the hot loop of the readers of stored records (the fetch-side decoder,
the cleaner, Spark): one call per batch returns one plain tuple per record,
which costs less than a call per record and, on batches of a few records, less
than filling a list per field. Varints of one and two bytes (every delta and
length of records up to 8 KiB) are decoded inline, the rest by :func:`read_varint`.
"""

from __future__ import annotations

from kgroups.errors import ErrorCode, KafkaError

__all__ = [
    "RawHeader",
    "ScannedRecord",
    "malformed",
    "read_headers",
    "read_varint",
    "record_span",
    "scan_records",
]

# A record header as stored: (key bytes, value or None); readers decode the key.
RawHeader = tuple[bytes, bytes | None]

# One record: (start, end) of its bytes in the records section, offset delta,
# timestamp delta, key, whether the value is null, value, headers. The first six
# are what the cleaner needs (a null value is a tombstone), so it takes the tuples
# as they are. Without bodies: no key, value or headers.
ScannedRecord = tuple[int, int, int, int, bytes | None, bool, bytes | None, tuple[RawHeader, ...]]
_NO_HEADERS: tuple[RawHeader, ...] = ()


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


def read_headers(data: bytes, pos: int) -> tuple[tuple[RawHeader, ...], int]:
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
    return tuple(headers), pos


def scan_records(data: bytes, count: int, bodies: bool = True) -> list[ScannedRecord]:
    """Read the ``count`` records of the records section ``data``.

    A record whose fields do not fill exactly its stated length, or that runs
    past ``data``, is CORRUPT_MESSAGE. Without ``bodies`` only lengths and
    deltas are read, each record's length trusted to reach the next.
    """
    slow = read_varint
    out: list[ScannedRecord] = []
    append = out.append
    # Each varint: b < 0x80 is one byte, c < 0x80 two, zig-zag decoded as (n >> 1) ^ -(n & 1)
    # where n is b, or (b & 0x7F) | c << 7 (whose low bit is b's). Written out at every field
    # rather than in a helper: a call per field is what this loop avoids.
    pos = 0
    try:
        for i in range(count):
            start = pos
            b = data[pos]
            if b < 0x80:
                n = (b >> 1) ^ -(b & 1)
                pos += 1
            elif (c := data[pos + 1]) < 0x80:
                n = ((b & 0x7F) >> 1 | c << 6) ^ -(b & 1)
                pos += 2
            else:
                n, pos = slow(data, pos)
            end = pos + n
            pos += 1  # record attributes: unused in v2
            b = data[pos]
            if b < 0x80:
                timestamp_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            elif (c := data[pos + 1]) < 0x80:
                timestamp_delta = ((b & 0x7F) >> 1 | c << 6) ^ -(b & 1)
                pos += 2
            else:
                timestamp_delta, pos = slow(data, pos)
            b = data[pos]
            if b < 0x80:
                offset_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            elif (c := data[pos + 1]) < 0x80:
                offset_delta = ((b & 0x7F) >> 1 | c << 6) ^ -(b & 1)
                pos += 2
            else:
                offset_delta, pos = slow(data, pos)
            if not bodies:
                if end < pos + 3:  # key length, value length, header count
                    raise malformed(f"record {i} is shorter than its fields")
                append((start, end, offset_delta, timestamp_delta, None, True, None, _NO_HEADERS))
                pos = end
                continue
            b = data[pos]
            if b < 0x80:
                n = (b >> 1) ^ -(b & 1)
                pos += 1
            elif (c := data[pos + 1]) < 0x80:
                n = ((b & 0x7F) >> 1 | c << 6) ^ -(b & 1)
                pos += 2
            else:
                n, pos = slow(data, pos)
            if n < 0:
                key = None
            else:
                key = data[pos : pos + n]
                pos += n
            b = data[pos]
            if b < 0x80:
                n = (b >> 1) ^ -(b & 1)
                pos += 1
            elif (c := data[pos + 1]) < 0x80:
                n = ((b & 0x7F) >> 1 | c << 6) ^ -(b & 1)
                pos += 2
            else:
                n, pos = slow(data, pos)
            if n >= 0:
                null = False
                value = data[pos : pos + n]
                pos += n
            else:
                null = True
                value = None
            if data[pos]:  # a header count other than 0
                headers, pos = read_headers(data, pos)
            else:
                headers = _NO_HEADERS
                pos += 1
            if pos != end:
                raise malformed(f"record {i} does not fill its stated length")
            append((start, end, offset_delta, timestamp_delta, key, null, value, headers))
    except IndexError:
        raise malformed("records run past the end of the batch") from None
    if pos > len(data):
        raise malformed("records run past the end of the batch")
    return out


def record_span(
    data: bytes, count: int, first_delta: int, last_delta: int, dense: bool = False
) -> tuple[int, int, int]:
    """Where the records whose offset delta lies in ``[first_delta, last_delta]``
    sit among the ``count`` records of ``data``: ``(start, end, how many)``.

    A reader that wants a few records of a large batch (a share consumer handed
    part of one) passes the span to :func:`scan_records` instead of decoding the
    whole batch: the records before it are stepped over by their length, and
    the walk stops at the first record past it. Offset deltas grow through a
    batch, so the records in the window are contiguous. ``dense``: the offset
    deltas are 0 to ``count - 1`` (no record compacted away), so only lengths
    are read.
    """
    if dense:
        first = max(first_delta, 0)
        last = min(last_delta, count - 1)
        if first > last:
            return 0, 0, 0
        start = _skip(data, 0, first)
        return start, _skip(data, start, last - first + 1), last - first + 1
    slow = read_varint
    pos = 0
    start = -1
    found = 0
    try:
        for _ in range(count):
            record_start = pos
            n, pos = slow(data, pos)
            if n < 0:
                raise malformed("a record with a negative length")
            end = pos + n
            pos += 1  # attributes
            while data[pos] & 0x80:  # the timestamp delta, which is not needed
                pos += 1
            offset_delta, pos = slow(data, pos + 1)
            if offset_delta > last_delta:
                pos = record_start
                break
            if offset_delta >= first_delta:
                if start < 0:
                    start = record_start
                found += 1
            pos = end
    except IndexError:
        raise malformed("records run past the end of the batch") from None
    if pos > len(data):
        raise malformed("records run past the end of the batch")
    return (start, pos, found) if found else (0, 0, 0)


def _skip(data: bytes, pos: int, records: int) -> int:
    """The position ``records`` records after ``pos``, read by their lengths alone."""
    try:
        for _ in range(records):
            b = data[pos]
            if b < 0x80:
                n = (b >> 1) ^ -(b & 1)
                pos += 1
            elif (c := data[pos + 1]) < 0x80:
                n = ((b & 0x7F) >> 1 | c << 6) ^ -(b & 1)
                pos += 2
            else:
                n, pos = read_varint(data, pos)
            if n < 0:
                raise malformed("a record with a negative length")
            pos += n
    except IndexError:
        raise malformed("records run past the end of the batch") from None
    if pos > len(data):
        raise malformed("records run past the end of the batch")
    return pos
