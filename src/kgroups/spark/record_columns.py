"""Record batches (Kafka's v2 format) decoded straight into Arrow columns.

:func:`~kgroups.storage.record_scan.scan_records` reads each batch into one list
per field; they are extended onto the partition's columns (filtered when the
batch straddles the range) without a per-record object, and Arrow converts each
in C. Keys and values are slices of the batch's (decompressed) bytes.

``index_only`` skips keys, values and headers: what the offsets-log analytics
needs of a data topic is its offset -> timestamp index.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kgroups.storage.record_scan import ScannedRecords, scan_records
from kgroups.storage.records import BatchHeader, offsets_and_timestamps, records_section

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
        scanned = scan_records(data, header.records_count, bodies=not self.index_only)
        offsets, timestamps = offsets_and_timestamps(header, scanned)
        keys = scanned.keys
        values = scanned.values
        headers = _headers(scanned) if self.include_headers else []
        if not (header.base_offset >= start and header.last_offset < end):
            wanted = [i for i, offset in enumerate(offsets) if start <= offset < end]
            offsets = [offsets[i] for i in wanted]
            timestamps = [timestamps[i] for i in wanted]
            if not self.index_only:
                keys = [keys[i] for i in wanted]
                values = [values[i] for i in wanted]
            headers = [headers[i] for i in wanted] if headers else []
        self.offsets += offsets
        self.timestamps += timestamps
        self.keys += keys
        self.values += values
        self.headers += headers
        self.timestamp_types += [header.timestamp_type] * len(offsets)
        return len(offsets)

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


def _headers(scanned: ScannedRecords) -> list[list[dict[str, Any]]]:
    """One list of ``{"key", "value"}`` per record, as Spark's Kafka source gives."""
    out: list[list[dict[str, Any]]] = [[] for _ in scanned.offset_deltas]
    for i, raw in scanned.headers.items():
        out[i] = [{"key": key.decode("utf-8", "replace"), "value": value} for key, value in raw]
    return out
