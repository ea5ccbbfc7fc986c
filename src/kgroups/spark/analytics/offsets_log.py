"""Decoding ``__consumer_offsets`` records into rows, on the executors.

Every key and value version Kafka has written is read (offset commit keys v0/v1
and values v0-v4, group metadata key v2 and values v0-v4), through the same
decoders the coordinator itself uses. A record that is neither (a newer
coordinator's record types) is kept with kind ``unknown`` so it can be counted,
not silently lost. Members' subscriptions and assignments are decoded from the
consumer protocol when the group's protocol type is ``consumer``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pyspark.sql.types import ArrayType

from kgroups.assignors.protocol import ProtocolError, decode_assignment, decode_subscription
from kgroups.coordinator.records import (
    GroupMetadataKey,
    OffsetCommitKey,
    RecordFormatError,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
)
from kgroups.spark.analytics.row_types import arrow_of, struct

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["DECODED_SCHEMA", "decode_batches"]

_TOPIC_PARTITION = struct(("topic", "string"), ("partition", "int"))
_MEMBER = struct(
    ("member_id", "string"),
    ("group_instance_id", "string"),
    ("client_id", "string"),
    ("client_host", "string"),
    ("rebalance_timeout_ms", "int"),
    ("session_timeout_ms", "int"),
    ("topics", "strings"),
    ("assignment", ArrayType(_TOPIC_PARTITION)),
)

DECODED_SCHEMA = struct(
    ("kind", "string"),
    ("group", "string"),
    ("topic", "string"),
    ("partition", "int"),
    ("offsets_partition", "int"),
    ("offsets_offset", "long"),
    ("record_ms", "long"),
    ("key_version", "int"),
    ("value_version", "int"),
    ("committed_offset", "long"),
    ("leader_epoch", "int"),
    ("metadata", "string"),
    ("commit_ms", "long"),
    ("expire_ms", "long"),
    ("generation", "int"),
    ("protocol_type", "string"),
    ("protocol", "string"),
    ("leader", "string"),
    ("state_ms", "long"),
    ("members", ArrayType(_MEMBER)),
    ("error", "string"),
)


def _version(data: bytes | None) -> int | None:
    return None if data is None or len(data) < 2 else int.from_bytes(data[:2], "big", signed=True)


def _member(member: Any, consumer: bool) -> dict[str, Any]:
    topics: list[str] | None = None
    assignment: list[dict[str, Any]] | None = None
    if consumer:
        try:
            topics = list(decode_subscription(member.subscription).topics)
            assignment = (
                [
                    {"topic": tp.topic, "partition": tp.partition}
                    for tp in decode_assignment(member.assignment).partitions
                ]
                if member.assignment
                else []
            )
        except (ProtocolError, ValueError):
            topics = assignment = None
    return {
        "member_id": member.member_id,
        "group_instance_id": member.group_instance_id,
        "client_id": member.client_id,
        "client_host": member.client_host,
        "rebalance_timeout_ms": member.rebalance_timeout,
        "session_timeout_ms": member.session_timeout,
        "topics": topics,
        "assignment": assignment,
    }


def decode_record(key: bytes | None, value: bytes | None) -> dict[str, Any]:
    """One record's row (without the columns locating it in the log)."""
    row: dict[str, Any] = {"key_version": _version(key), "value_version": _version(value)}
    if key is None:
        return {**row, "kind": "unknown", "error": "record without a key"}
    try:
        decoded = decode_key(key)
    except RecordFormatError as e:
        return {**row, "kind": "unknown", "error": f"key: {e}"}
    try:
        if isinstance(decoded, OffsetCommitKey):
            row.update(group=decoded.group, topic=decoded.topic, partition=decoded.partition)
            if value is None:
                return {**row, "kind": "offset_deleted"}
            commit = decode_offset_commit_value(value)
            return {
                **row,
                "kind": "offset_commit",
                "committed_offset": commit.offset,
                "leader_epoch": commit.leader_epoch,
                "metadata": commit.metadata,
                "commit_ms": commit.commit_timestamp,
                "expire_ms": None if commit.expire_timestamp < 0 else commit.expire_timestamp,
            }
        if isinstance(decoded, GroupMetadataKey):
            row["group"] = decoded.group
            if value is None:
                return {**row, "kind": "group_deleted"}
            group = decode_group_metadata_value(value)
            consumer = group.protocol_type == "consumer"
            return {
                **row,
                "kind": "group_metadata",
                "generation": group.generation,
                "protocol_type": group.protocol_type,
                "protocol": group.protocol,
                "leader": group.leader,
                "state_ms": None
                if group.current_state_timestamp < 0
                else group.current_state_timestamp,
                "members": [_member(m, consumer) for m in group.members],
            }
    except RecordFormatError as e:
        return {**row, "kind": "unknown", "error": f"value: {e}"}
    return {**row, "kind": "unknown", "error": f"key version {row['key_version']}"}


def decode_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow function: rows of the data source -> DECODED_SCHEMA rows."""
    import pyarrow as pa

    arrow = arrow_of(DECODED_SCHEMA)
    for batch in batches:
        columns = batch.to_pydict()
        timestamps = batch.column("timestamp").cast(pa.int64()).to_pylist()
        rows = []
        for key, value, partition, offset, micros in zip(
            columns["key"],
            columns["value"],
            columns["partition"],
            columns["offset"],
            timestamps,
            strict=True,
        ):
            row = decode_record(key, value)
            row.update(offsets_partition=partition, offsets_offset=offset, record_ms=micros // 1000)
            rows.append(row)
        yield pa.RecordBatch.from_pylist(rows, schema=arrow)
