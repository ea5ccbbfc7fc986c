"""Decoding ``__consumer_offsets`` records into rows, on the executors.

Every key and value version Kafka has written is read (offset commit keys v0/v1
and values v0-v4, group metadata key v2 and values v0-v4), through the same
decoders the coordinator itself uses; offset commits, nearly every record, are
read a batch at a time by commit_columns, which gives the same rows. A record
that is neither (a newer coordinator's record types) is kept with kind
``unknown`` so it can be counted, not silently lost. Members' subscriptions and
assignments are decoded from the consumer protocol when the group's protocol
type is ``consumer``.

The consumer group (KIP-848) records, types 3-8 and 16, are decoded by the
broker's own codec into kinds ``consumer_group_epoch`` (3),
``consumer_group_topics`` (4), ``consumer_member`` (5),
``consumer_assignment_epoch`` (6), ``consumer_target_assignment`` (7),
``consumer_member_assignment`` (8) and ``consumer_regex`` (16); a tombstone adds
``_deleted`` to its kind. Their assignments name topics by id: the ids are
turned into names through ``topic_names`` (the cluster's topics now), and a
topic deleted since keeps its id as its name.

The share group (KIP-932) records, types 10-15, are decoded the same way by
the share coordinator's codec into kinds ``share_member`` (10),
``share_group_epoch`` (11), ``share_assignment_epoch`` (12),
``share_target_assignment`` (13), ``share_member_assignment`` (14) and
``share_state_partitions`` (15, kept undecoded by the coordinator too).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from pyspark.sql.types import ArrayType

from kgroups.assignors.protocol import ProtocolError, decode_assignment, decode_subscription
from kgroups.coordinator.consumer import records as consumer_records
from kgroups.coordinator.consumer.member import MemberState
from kgroups.coordinator.consumer_assignors.spec import Assignment
from kgroups.coordinator.records import (
    GroupMetadataKey,
    OffsetCommitKey,
    RecordFormatError,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
)
from kgroups.coordinator.share import records as share_records
from kgroups.spark.analytics.commit_columns import offset_commit_columns
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
    # Consumer group (KIP-848) records:
    ("group_epoch", "int"),
    ("assignment_epoch", "int"),
    ("member_id", "string"),
    ("member_epoch", "int"),
    ("previous_member_epoch", "int"),
    ("member_state", "string"),
    ("instance_id", "string"),
    ("client_id", "string"),
    ("client_host", "string"),
    ("subscribed_topics", "strings"),
    ("subscribed_regex", "string"),
    ("server_assignor", "string"),
    ("rebalance_timeout_ms", "int"),
    ("assigned", ArrayType(_TOPIC_PARTITION)),
    ("pending_revocation", ArrayType(_TOPIC_PARTITION)),
    ("target", ArrayType(_TOPIC_PARTITION)),
    ("regex", "string"),
    ("topics", "strings"),
    ("error", "string"),
)

_CONSUMER_KINDS = {
    consumer_records.GROUP_METADATA: "consumer_group_epoch",
    consumer_records.PARTITION_METADATA: "consumer_group_topics",
    consumer_records.MEMBER_METADATA: "consumer_member",
    consumer_records.TARGET_ASSIGNMENT_METADATA: "consumer_assignment_epoch",
    consumer_records.TARGET_ASSIGNMENT_MEMBER: "consumer_target_assignment",
    consumer_records.CURRENT_MEMBER_ASSIGNMENT: "consumer_member_assignment",
    consumer_records.REGULAR_EXPRESSION: "consumer_regex",
}


_SHARE_KINDS = {
    share_records.MEMBER_METADATA: "share_member",
    share_records.GROUP_METADATA: "share_group_epoch",
    share_records.TARGET_ASSIGNMENT_METADATA: "share_assignment_epoch",
    share_records.TARGET_ASSIGNMENT_MEMBER: "share_target_assignment",
    share_records.CURRENT_MEMBER_ASSIGNMENT: "share_member_assignment",
    share_records.STATE_PARTITION_METADATA: "share_state_partitions",
}


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


def _partitions(assignment: Assignment, topic_names: Mapping[str, str]) -> list[dict[str, Any]]:
    return sorted(
        (
            {"topic": topic_names.get(str(topic_id), str(topic_id)), "partition": p}
            for topic_id, partitions in assignment.items()
            for p in partitions
        ),
        key=lambda tp: (tp["topic"], tp["partition"]),
    )


def _state_name(state: int) -> str:
    try:
        return MemberState(state).name.lower()
    except ValueError:
        return f"unknown ({state})"


def _consumer_group_record(
    key: bytes, value: bytes | None, topic_names: Mapping[str, str]
) -> dict[str, Any]:
    """A consumer group record's columns, through the coordinator's codec."""
    decoded_key, decoded = consumer_records.decode_record(key, value)
    row: dict[str, Any] = {"group": decoded_key.group_id}
    kind = _CONSUMER_KINDS[decoded_key.record_type]
    if isinstance(decoded_key, consumer_records.MemberKey):
        row["member_id"] = decoded_key.member_id
    elif isinstance(decoded_key, consumer_records.RegularExpressionKey):
        row["regex"] = decoded_key.regex
    if decoded is None:
        return {**row, "kind": f"{kind}_deleted"}
    row["kind"] = kind
    if isinstance(decoded, consumer_records.GroupMetadataValue):
        row["group_epoch"] = decoded.epoch
    elif isinstance(decoded, consumer_records.PartitionMetadataValue):
        row["topics"] = sorted(t.topic_name for t in decoded.topics)
    elif isinstance(decoded, consumer_records.MemberMetadataValue):
        row.update(
            instance_id=decoded.instance_id,
            client_id=decoded.client_id,
            client_host=decoded.client_host,
            subscribed_topics=sorted(decoded.subscribed_topic_names),
            subscribed_regex=decoded.subscribed_topic_regex or None,
            server_assignor=decoded.server_assignor,
            rebalance_timeout_ms=decoded.rebalance_timeout_ms,
        )
    elif isinstance(decoded, consumer_records.TargetAssignmentMetadataValue):
        row["assignment_epoch"] = decoded.assignment_epoch
    elif isinstance(decoded, consumer_records.TargetAssignmentMemberValue):
        row["target"] = _partitions(decoded.partitions, topic_names)
    elif isinstance(decoded, consumer_records.CurrentMemberAssignmentValue):
        row.update(
            member_epoch=decoded.member_epoch,
            previous_member_epoch=decoded.previous_member_epoch,
            member_state=_state_name(decoded.state),
            assigned=_partitions(decoded.assigned_partitions, topic_names),
            pending_revocation=_partitions(decoded.partitions_pending_revocation, topic_names),
        )
    else:
        row["topics"] = sorted(decoded.topics)
    return row


def _share_group_record(
    key: bytes, value: bytes | None, topic_names: Mapping[str, str]
) -> dict[str, Any]:
    """A share group record's columns, through the share coordinator's codec."""
    decoded_key, decoded = share_records.decode_record(key, value)
    row: dict[str, Any] = {"group": decoded_key.group_id}
    kind = _SHARE_KINDS[decoded_key.record_type]
    if decoded_key.member_id is not None:
        row["member_id"] = decoded_key.member_id
    if decoded is None:
        return {**row, "kind": f"{kind}_deleted"}
    row["kind"] = kind
    if isinstance(decoded, share_records.GroupMetadataValue):
        row["group_epoch"] = decoded.epoch
    elif isinstance(decoded, share_records.MemberMetadataValue):
        row.update(
            client_id=decoded.client_id,
            client_host=decoded.client_host,
            subscribed_topics=sorted(decoded.subscribed_topic_names),
        )
    elif isinstance(decoded, share_records.TargetAssignmentMetadataValue):
        row["assignment_epoch"] = decoded.assignment_epoch
    elif isinstance(decoded, share_records.TargetAssignmentMemberValue):
        row["target"] = _partitions(decoded.partitions, topic_names)
    elif isinstance(decoded, share_records.CurrentMemberAssignmentValue):
        row.update(
            member_epoch=decoded.member_epoch,
            previous_member_epoch=decoded.previous_member_epoch,
            member_state=_state_name(decoded.state),
            assigned=_partitions(decoded.assigned_partitions, topic_names),
            pending_revocation=[],
        )
    return row


def decode_record(
    key: bytes | None, value: bytes | None, topic_names: Mapping[str, str] | None = None
) -> dict[str, Any]:
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
        # Checked last: offset commits, nearly every record, pay nothing for it.
        if consumer_records.is_consumer_group_key(key):
            return {**row, **_consumer_group_record(key, value, topic_names or {})}
        if share_records.is_share_group_key(key):
            return {**row, **_share_group_record(key, value, topic_names or {})}
    except RecordFormatError as e:
        return {**row, "kind": "unknown", "error": f"value: {e}"}
    return {**row, "kind": "unknown", "error": f"key version {row['key_version']}"}


def decode_batches(
    batches: Iterator[pa.RecordBatch], topic_names: Mapping[str, str] | None = None
) -> Iterator[pa.RecordBatch]:
    """mapInArrow function: rows of the data source -> DECODED_SCHEMA rows;
    ``topic_names`` maps topic ids (as text) to names.

    Offset commits are decoded a batch at a time (commit_columns); the other
    records, and any commit it does not take, one by one through decode_record."""
    import numpy as np
    import pyarrow as pa

    arrow = arrow_of(DECODED_SCHEMA)
    for batch in batches:
        keys, values = batch.column("key"), batch.column("value")
        fast = offset_commit_columns(keys, values)
        slow = np.setdiff1d(np.arange(batch.num_rows), fast.rows, assume_unique=True)
        located = {
            "offsets_partition": batch.column("partition"),
            "offsets_offset": batch.column("offset"),
            "record_ms": pa.array(
                np.floor_divide(
                    batch.column("timestamp").cast(pa.int64()).to_numpy(zero_copy_only=False),
                    1000,
                )
            ),
        }
        taken = pa.array(fast.rows)
        columns = {**fast.columns, **{name: c.take(taken) for name, c in located.items()}}
        decoded = pa.RecordBatch.from_arrays(
            [
                columns[f.name] if f.name in columns else pa.nulls(len(fast.rows), f.type)
                for f in arrow
            ],
            schema=arrow,
        )
        if len(slow) == 0:
            yield decoded
            continue
        rows = []
        for key, value, partition, offset, record_ms in zip(
            keys.take(slow).to_pylist(),
            values.take(slow).to_pylist(),
            *(c.take(pa.array(slow)).to_pylist() for c in located.values()),
            strict=True,
        ):
            row = decode_record(key, value, topic_names)
            row.update(offsets_partition=partition, offsets_offset=offset, record_ms=record_ms)
            rows.append(row)
        others = pa.RecordBatch.from_pylist(rows, schema=arrow)
        # Back in the log's order.
        order = np.argsort(np.concatenate([fast.rows, slow]), kind="stable")
        together = pa.Table.from_batches([decoded, others]).take(pa.array(order))
        yield from together.combine_chunks().to_batches()
