"""Record batches (Kafka's v2 format) decoded straight into Arrow columns.

Batches are collected as they come (``add_batch``: the records section and where
each record starts) and decoded together (``decode``): every field of every
record at once, with numpy over the sections' bytes, so the per-record Python
work is a few operations to find where each record starts (its length varint is
the only thing that says where the next one begins). Keys and values are never
Python objects: the sections' bytes are cut into alternating (gap, field) spans
of one Arrow binary array, and Arrow takes the field spans out in C.

Records are checked as :func:`~kgroups.records.scan.scan_records` checks
them: fields that do not fill a record's stated length, or that run past the
batch, are CORRUPT_MESSAGE. Headers, rare in bulk data, are read per record in
Python, and only for the records that have them.

``index_only`` skips keys, values and headers: what the offsets-log analytics
needs of a data topic is its offset -> timestamp index.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from kgroups.records.batch import BatchHeader, records_section
from kgroups.records.scan import malformed, read_headers, read_varint

if TYPE_CHECKING:
    import numpy.typing as npt
    import pyarrow as pa

    Ints = npt.NDArray[np.int64]

__all__ = ["DecodedRecords", "RecordColumns"]

# Zero bytes after the last section: a varint read past a record's end stops
# there instead of running off the buffer (the length checks then refuse it).
_PAD = bytes(16)
# attributes, timestamp delta, offset delta, key length, value length, header count.
_MIN_RECORD = 6


@dataclass(slots=True)
class DecodedRecords:
    """The records in range: numpy offsets and timestamps (ms), Arrow keys and values
    (None with ``index_only``), headers per record (None unless included)."""

    offsets: Ints
    timestamps: Ints
    timestamp_types: Ints
    keys: pa.Array | None
    values: pa.Array | None
    headers: list[list[dict[str, Any]]] | None

    def __len__(self) -> int:
        return len(self.offsets)


class RecordColumns:
    """The records of one partition accumulating as record sections, batch by batch."""

    def __init__(self, *, include_headers: bool, index_only: bool = False) -> None:
        self.include_headers = include_headers and not index_only
        self.index_only = index_only
        self.clear()

    def clear(self) -> None:
        self._sections: list[bytes] = []
        self._starts: list[int] = []  # of every record, in its section
        # Per batch: records, base offset, base timestamp, max timestamp (every
        # record's under LogAppendTime), timestamp type, the range [lo, hi) to read,
        # where its section starts in the joined sections.
        self._batches: list[tuple[int, int, int, int, int, int, int, int]] = []
        self._size = 0

    def __len__(self) -> int:
        """Records collected (of whole batches: those out of range are dropped later)."""
        return len(self._starts)

    def add_batch(self, batch: memoryview, header: BatchHeader, start: int, end: int) -> None:
        """Collect the records of ``batch``; those with offsets in [start, end) are
        decoded. The caller skips control batches."""
        data = records_section(batch, header)
        count = header.records_count
        self._starts += _record_starts(data, count)
        self._sections.append(data)
        self._batches.append(
            (
                count,
                header.base_offset,
                header.base_timestamp,
                header.max_timestamp,
                header.timestamp_type,
                start,
                end,
                self._size,
            )
        )
        self._size += len(data)

    def decode(self) -> DecodedRecords:
        """Every collected record in range, decoded; CORRUPT_MESSAGE if any is malformed."""
        raw = b"".join(self._sections) + _PAD
        buf = np.frombuffer(raw, np.uint8)
        batches = np.array(self._batches, np.int64).reshape(-1, 8)
        counts = batches[:, 0]

        def per_record(column: int) -> Ints:
            return np.repeat(batches[:, column], counts)

        starts = np.array(self._starts, np.int64) + per_record(7)
        length, pos = _varints(buf, starts)
        if np.any(length < _MIN_RECORD):
            raise malformed("a record is shorter than its fields")
        ends = pos + length
        pos += 1  # record attributes: unused in v2
        timestamp_delta, pos = _varints(buf, pos)
        offset_delta, pos = _varints(buf, pos)
        offsets = per_record(1) + offset_delta
        timestamp_types = per_record(4)
        log_append_time = timestamp_types == 1
        timestamps = np.where(log_append_time, per_record(3), per_record(2) + timestamp_delta)
        keep = (offsets >= per_record(5)) & (offsets < per_record(6))
        if self.index_only:
            if np.any(pos + 3 > ends):  # key length, value length, header count
                raise malformed("a record is shorter than its fields")
            return DecodedRecords(
                offsets[keep], timestamps[keep], timestamp_types[keep], None, None, None
            )
        key_length, pos = _varints(buf, pos)
        key_start, pos = _field(pos, key_length, ends)
        value_length, pos = _varints(buf, pos)
        value_start, pos = _field(pos, value_length, ends)
        header_counts = buf[np.minimum(pos, len(buf) - 1)]
        with_headers = np.flatnonzero(header_counts)
        headers = self._headers(raw, pos, ends, with_headers, keep) if len(with_headers) else None
        plain = header_counts == 0
        if np.any(plain & (pos + 1 != ends)):
            raise malformed("a record does not fill its stated length")
        if not np.all(keep):
            key_start, key_length = key_start[keep], key_length[keep]
            value_start, value_length = value_start[keep], value_length[keep]
            offsets, timestamps = offsets[keep], timestamps[keep]
            timestamp_types = timestamp_types[keep]
        if self.include_headers and headers is None:
            headers = [[] for _ in range(len(offsets))]
        return DecodedRecords(
            offsets,
            timestamps,
            timestamp_types,
            _binary(raw, key_start, key_length),
            _binary(raw, value_start, value_length),
            headers if self.include_headers else None,
        )

    def _headers(
        self, raw: bytes, pos: Ints, ends: Ints, which: Ints, keep: npt.NDArray[np.bool_]
    ) -> list[list[dict[str, Any]]]:
        """Check (and decode, when included) the headers of the records ``which``."""
        decoded: list[list[dict[str, Any]]] = [[] for _ in range(len(pos))]
        try:
            for i in which.tolist():
                headers, after = read_headers(raw, int(pos[i]))
                if after != ends[i]:
                    raise malformed("a record does not fill its stated length")
                decoded[i] = [{"key": k.decode("utf-8", "replace"), "value": v} for k, v in headers]
        except IndexError:
            raise malformed("records run past the end of the batch") from None
        return [h for h, k in zip(decoded, keep.tolist(), strict=True) if k]

    def to_arrow(self, topic: str, partition: int, schema: pa.Schema) -> pa.RecordBatch:
        """The collected records in range as a batch of Spark's Kafka schema."""
        import pyarrow as pa

        records = self.decode()
        n = len(records)
        keys = pa.nulls(n, pa.binary()) if records.keys is None else records.keys
        values = pa.nulls(n, pa.binary()) if records.values is None else records.values
        timestamp_type = schema.field("timestamp").type
        columns = [
            keys,
            values,
            pa.repeat(pa.scalar(topic, pa.string()), n),
            pa.repeat(pa.scalar(partition, pa.int32()), n),
            pa.array(records.offsets, pa.int64()),
            pa.array(records.timestamps, pa.int64())
            .cast(pa.timestamp("ms", tz="UTC"))
            .cast(timestamp_type),
            pa.array(records.timestamp_types.astype(np.int32), pa.int32()),
        ]
        if "headers" in schema.names:
            headers_type = schema.field("headers").type
            if records.headers is not None:
                columns.append(pa.array(records.headers, headers_type))
            else:
                columns.append(pa.nulls(n, headers_type))
        return pa.RecordBatch.from_arrays(columns, schema=schema)


def _record_starts(data: bytes, count: int) -> list[int]:
    """Where each of the ``count`` records of ``data`` starts: the one per-record
    loop, as it must follow the length varints one by one.

    Kept to the fewest operations: a length is taken as positive (zig-zag: half
    the varint); ``decode`` reads every length again and refuses negative ones."""
    starts = [0] * count
    pos = 0
    try:
        for i in range(count):
            starts[i] = pos
            b = data[pos]
            if b < 0x80:
                pos += 1 + (b >> 1)
            else:
                c = data[pos + 1]
                if c < 0x80:
                    pos += 2 + (((b & 0x7F) | (c << 7)) >> 1)
                else:
                    n, pos = read_varint(data, pos)
                    pos += n
    except IndexError:
        raise malformed("records run past the end of the batch") from None
    if pos > len(data):
        raise malformed("records run past the end of the batch")
    return starts


def _varints(buf: npt.NDArray[np.uint8], pos: Ints) -> tuple[Ints, Ints]:
    """The zig-zag varints at each of ``pos``, and the positions after them.

    One and two bytes (every length and delta below 8 KiB) in one pass; the
    few longer ones byte by byte."""
    at = np.minimum(pos, len(buf) - 2)
    first = buf[at].astype(np.int64)
    second = buf[at + 1].astype(np.int64)
    two = first >= 0x80
    raw = np.where(two, (first & 0x7F) | (second << 7), first)
    value = (raw >> 1) ^ -(raw & 1)
    after = pos + 1 + two
    longer = np.flatnonzero(two & (second >= 0x80))
    if len(longer):
        value[longer], after[longer] = _long_varints(buf, pos[longer])
    return value, after


def _long_varints(buf: npt.NDArray[np.uint8], pos: Ints) -> tuple[Ints, Ints]:
    """Varints of any length (up to Kafka's 10 bytes), a byte position at a time."""
    last = len(buf) - 1
    byte = buf[np.minimum(pos, last)].astype(np.uint64)
    raw = byte & 0x7F
    after = pos + 1
    more = np.flatnonzero(byte >= 0x80)
    shift = 7
    while len(more):
        if shift > 63:
            raise malformed("varint longer than 10 bytes")
        byte = buf[np.minimum(after[more], last)].astype(np.uint64)
        raw[more] |= (byte & 0x7F) << np.uint64(shift)
        after[more] += 1
        more = more[byte >= 0x80]
        shift += 7
    value = (raw >> np.uint64(1)).astype(np.int64) ^ -(raw & np.uint64(1)).astype(np.int64)
    return value, after


def _field(pos: Ints, length: Ints, ends: Ints) -> tuple[Ints, Ints]:
    """Where a key or value of ``length`` (negative: null) at ``pos`` starts, and the
    position after it; refused if it runs past its record."""
    if np.any(length > ends - pos):
        raise malformed("a record does not fill its stated length")
    return pos, pos + np.maximum(length, 0)


def _binary(raw: bytes, starts: Ints, lengths: Ints) -> pa.Array:
    """Arrow binary array of the spans of ``raw`` (negative length: null).

    The spans are in order and do not overlap, so ``raw`` cut at (start, end) of
    each is a valid binary array of gaps and fields; Arrow takes every second."""
    import pyarrow as pa

    n = len(starts)
    nulls = lengths < 0
    ends = starts + np.maximum(lengths, 0)
    small = len(raw) < 2**31  # binary offsets are int32; the fields taken are smaller
    cuts = np.empty(2 * n + 1, np.int32 if small else np.int64)
    cuts[0] = 0
    cuts[1::2] = starts
    cuts[2::2] = ends
    kind = pa.binary() if small else pa.large_binary()
    spans = pa.Array.from_buffers(kind, 2 * n, [None, pa.py_buffer(cuts), pa.py_buffer(raw)])
    fields = spans.take(pa.array(np.arange(1, 2 * n, 2, dtype=np.int64)))
    if not small:
        fields = fields.cast(pa.binary())
    if not nulls.any():
        return fields
    valid = pa.py_buffer(np.packbits(~nulls, bitorder="little"))
    return pa.Array.from_buffers(
        pa.binary(), n, [valid, *fields.buffers()[1:]], int(nulls.sum()), fields.offset
    )
