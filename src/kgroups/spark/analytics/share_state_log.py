"""Decoding ``__share_group_state`` records into rows, on the executors (or,
for a small log, on the driver).

Each record is one share partition's delivery state, keyed by (group, topic
id, partition), decoded by the broker's own codec
(share_partitions/state_records.py) in Kafka's layout: a ShareSnapshot
(kind ``share_snapshot``: the whole state) or a ShareUpdate
(``share_update``: the state batches that changed since the snapshot, and
the start offset, -1 when unchanged), or a tombstone
(``share_state_deleted``). A record that is none of them is kept with kind
``unknown`` and its error. Topic ids are turned into names through
``topic_names``; a topic deleted since keeps its id as its name.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from pyspark.sql.types import ArrayType

from kgroups.coordinator.record_codec import RecordFormatError
from kgroups.share_partitions import state_records
from kgroups.spark.analytics.row_types import arrow_of, struct

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["STATE_BATCH", "STATE_LOG_SCHEMA", "decode_state_batches", "decode_state_record"]

STATE_BATCH = struct(
    ("first_offset", "long"),
    ("last_offset", "long"),
    ("delivery_state", "int"),
    ("delivery_count", "int"),
)

STATE_LOG_SCHEMA = struct(
    ("kind", "string"),
    ("group", "string"),
    ("topic", "string"),
    ("partition", "int"),
    ("state_partition", "int"),
    ("state_offset", "long"),
    ("record_ms", "long"),
    ("snapshot_epoch", "int"),
    ("state_epoch", "int"),
    ("leader_epoch", "int"),
    ("start_offset", "long"),
    ("create_ms", "long"),
    ("write_ms", "long"),
    ("batches", ArrayType(STATE_BATCH)),
    ("error", "string"),
)


def _batches(value: Any) -> list[dict[str, int]]:
    return [
        {
            "first_offset": b.first_offset,
            "last_offset": b.last_offset,
            "delivery_state": b.delivery_state,
            "delivery_count": b.delivery_count,
        }
        for b in value.state_batches
    ]


def decode_state_record(
    key: bytes | None, value: bytes | None, topic_names: Mapping[str, str]
) -> dict[str, Any]:
    """One record's row (without the columns locating it in the log)."""
    if key is None:
        return {"kind": "unknown", "error": "record without a key"}
    try:
        decoded_key = state_records.decode_key(key)
    except RecordFormatError as e:
        return {"kind": "unknown", "error": f"key: {e}"}
    topic_id = str(decoded_key.topic_id)
    row: dict[str, Any] = {
        "group": decoded_key.group_id,
        "topic": topic_names.get(topic_id, topic_id),
        "partition": decoded_key.partition,
    }
    if value is None:
        return {**row, "kind": "share_state_deleted"}
    try:
        if decoded_key.record_type == state_records.SHARE_SNAPSHOT:
            snapshot = state_records.decode_snapshot(value)
            return {
                **row,
                "kind": "share_snapshot",
                "snapshot_epoch": snapshot.snapshot_epoch,
                "state_epoch": snapshot.state_epoch,
                "leader_epoch": snapshot.leader_epoch,
                "start_offset": snapshot.start_offset,
                "create_ms": snapshot.create_timestamp,
                "write_ms": snapshot.write_timestamp,
                "batches": _batches(snapshot),
            }
        update = state_records.decode_update(value)
    except RecordFormatError as e:
        return {**row, "kind": "unknown", "error": f"value: {e}"}
    return {
        **row,
        "kind": "share_update",
        "snapshot_epoch": update.snapshot_epoch,
        "leader_epoch": update.leader_epoch,
        "start_offset": update.start_offset,
        "batches": _batches(update),
    }


def decode_state_batches(
    batches: Iterator[pa.RecordBatch], topic_names: Mapping[str, str] | None = None
) -> Iterator[pa.RecordBatch]:
    """mapInArrow function: rows of the data source -> STATE_LOG_SCHEMA rows."""
    import pyarrow as pa

    arrow = arrow_of(STATE_LOG_SCHEMA)
    names = topic_names or {}
    for batch in batches:
        rows = []
        for key, value, partition, offset, timestamp in zip(
            *(batch.column(c).to_pylist() for c in ("key", "value", "partition", "offset")),
            batch.column("timestamp").cast(pa.int64()).to_pylist(),
            strict=True,
        ):
            row = decode_state_record(key, value, names)
            row.update(
                state_partition=partition,
                state_offset=offset,
                record_ms=None if timestamp is None else timestamp // 1000,
            )
            rows.append(row)
        yield pa.RecordBatch.from_pylist(rows, schema=arrow)
