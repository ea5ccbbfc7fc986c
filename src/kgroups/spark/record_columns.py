"""Record batches (Kafka's v2 format) decoded straight into Arrow columns.

:func:`~kgroups.storage.record_scan.scan_records` reads each batch; its records
are appended to one Python list per column (only those in range when the batch
straddles it), and Arrow converts each list in C. Keys and values are slices of
the batch's (decompressed) bytes.

``index_only`` skips keys, values and headers: what the offsets-log analytics
needs of a data topic is its offset -> timestamp index.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kgroups.storage.record_scan import scan_records
from kgroups.storage.records import BatchHeader, records_section

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
        base_timestamp = header.base_timestamp
        append_time = header.max_timestamp if header.timestamp_type else None  # LogAppendTime
        whole = base >= start and header.last_offset < end
        offsets = self.offsets
        timestamps = self.timestamps
        keys = self.keys
        values = self.values
        index_only = self.index_only
        with_headers = self.include_headers
        before = len(offsets)
        scanned = scan_records(data, header.records_count, not index_only)
        for _, _, offset_delta, timestamp_delta, key, _, value, headers in scanned:
            offset = base + offset_delta
            if not whole and not start <= offset < end:
                continue
            offsets.append(offset)
            timestamps.append(
                base_timestamp + timestamp_delta if append_time is None else append_time
            )
            if index_only:
                continue
            keys.append(key)
            values.append(value)
            if with_headers:
                self.headers.append(
                    [{"key": k.decode("utf-8", "replace"), "value": v} for k, v in headers]
                )
        added = len(offsets) - before
        self.timestamp_types += [header.timestamp_type] * added
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
