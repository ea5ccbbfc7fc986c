"""Record batches (Kafka's v2 format) decoded straight into Arrow columns.

This is the hot loop of every read: it walks each record once, appending to one
Python list per column, with one-byte varints (nearly all deltas and lengths)
decoded inline, and never builds a per-record object. Arrow then converts each
list in C. Keys and values are sliced from the batch's (decompressed) bytes.

``index_only`` skips keys, values and headers: what the offsets-log analytics
needs of a data topic is its offset -> timestamp index.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kgroups.errors import ErrorCode, KafkaError
from kgroups.storage.records import BatchHeader, read_varint, records_section

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["RecordColumns"]


class RecordColumns:
    """The records of one partition accumulating as columns, batch by batch."""

    def __init__(self, *, include_headers: bool, index_only: bool = False) -> None:
        self.include_headers = include_headers and not index_only
        self.index_only = index_only
        self.clear()

    def clear(self) -> None:
        self.offsets: list[int] = []
        self.timestamps: list[int] = []
        self.timestamp_types: list[int] = []
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        self.headers: list[list[dict[str, Any]]] = []

    def __len__(self) -> int:
        return len(self.offsets)

    def add_batch(self, batch: memoryview, header: BatchHeader, start: int, end: int) -> int:
        """Decode the records of ``batch`` whose offsets lie in [start, end); returns
        how many were added. The caller skips control batches."""
        data = records_section(batch, header)
        base = header.base_offset
        base_ts = header.base_timestamp
        append_time = header.max_timestamp if header.timestamp_type else None
        whole = base >= start and header.last_offset < end
        offsets = self.offsets
        timestamps = self.timestamps
        keys = self.keys
        values = self.values
        index_only = self.index_only
        with_headers = self.include_headers
        before = len(offsets)
        pos = 0
        try:
            for _ in range(header.records_count):
                b = data[pos]
                if b < 0x80:
                    length = (b >> 1) ^ -(b & 1)
                    pos += 1
                else:
                    length, pos = read_varint(data, pos)
                following = pos + length
                pos += 1  # record attributes: unused
                b = data[pos]
                if b < 0x80:
                    ts_delta = (b >> 1) ^ -(b & 1)
                    pos += 1
                else:
                    ts_delta, pos = read_varint(data, pos)
                b = data[pos]
                if b < 0x80:
                    offset = base + ((b >> 1) ^ -(b & 1))
                    pos += 1
                else:
                    delta, pos = read_varint(data, pos)
                    offset = base + delta
                if not whole and not start <= offset < end:
                    pos = following
                    continue
                offsets.append(offset)
                timestamps.append(base_ts + ts_delta if append_time is None else append_time)
                if index_only:
                    pos = following
                    continue
                b = data[pos]
                if b < 0x80:
                    n = (b >> 1) ^ -(b & 1)
                    pos += 1
                else:
                    n, pos = read_varint(data, pos)
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
                    n, pos = read_varint(data, pos)
                if n < 0:
                    values.append(None)
                else:
                    values.append(data[pos : pos + n])
                    pos += n
                if with_headers:
                    self.headers.append(_headers(data, pos))
                pos = following
        except IndexError:
            raise KafkaError(
                ErrorCode.corrupt_message, f"record batch at offset {base} runs past its end"
            ) from None
        added = len(offsets) - before
        self.timestamp_types.extend([header.timestamp_type] * added)
        return added

    def to_arrow(self, topic: str, partition: int, schema: pa.Schema) -> pa.RecordBatch:
        import pyarrow as pa

        n = len(self.offsets)
        if self.index_only:
            keys = values = pa.nulls(n, pa.binary())
        else:
            keys = pa.array(self.keys, pa.binary())
            values = pa.array(self.values, pa.binary())
        timestamp_type = schema.field("timestamp").type
        columns = [
            keys,
            values,
            pa.repeat(pa.scalar(topic, pa.string()), n),
            pa.repeat(pa.scalar(partition, pa.int32()), n),
            pa.array(self.offsets, pa.int64()),
            pa.array(self.timestamps, pa.int64())
            .cast(pa.timestamp("ms", tz="UTC"))
            .cast(timestamp_type),
            pa.array(self.timestamp_types, pa.int32()),
        ]
        if "headers" in schema.names:
            headers_type = schema.field("headers").type
            if self.include_headers:
                columns.append(pa.array(self.headers, headers_type))
            else:
                columns.append(pa.nulls(n, headers_type))
        return pa.RecordBatch.from_arrays(columns, schema=schema)


def _headers(data: bytes, pos: int) -> list[dict[str, Any]]:
    count, pos = read_varint(data, pos)
    out: list[dict[str, Any]] = []
    for _ in range(max(count, 0)):
        n, pos = read_varint(data, pos)
        key = data[pos : pos + n].decode("utf-8", "replace")
        pos += n
        n, pos = read_varint(data, pos)
        value = None if n < 0 else data[pos : pos + n]
        pos += max(n, 0)
        out.append({"key": key, "value": value})
    return out
