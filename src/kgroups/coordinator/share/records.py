"""The share group (KIP-932) records of ``__consumer_offsets``, as Kafka 4.x
writes them.

Keys are the consumer groups' layout (an int16 record type, then the group
id and, for a member's records, the member id); values start with version 0
and are flexible.

==== ===================================== ===================================
type key fields                            value v0 fields
==== ===================================== ===================================
10   ShareGroupMemberMetadata: group,      rack_id?, client_id, client_host,
     member                                [subscribed topic names]
11   ShareGroupMetadata: group             epoch int32, metadata_hash int64
12   ShareGroupTargetAssignmentMetadata:   assignment_epoch int32
     group
13   ShareGroupTargetAssignmentMember:     [topic_id uuid, [partition int32]]
     group, member
14   ShareGroupCurrentMemberAssignment:    member_epoch int32, previous int32,
     group, member                         state int8, [assigned]
15   ShareGroupStatePartitionMetadata:     [initializing: topic_id, topic_name,
     group                                 [partition], create_timestamp],
                                           [initialized: the same],
                                           [deleting: topic_id, topic_name]
==== ===================================== ===================================

A ``None`` value is a tombstone.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeAlias

from kgroups.coordinator.consumer.records import (
    _read_assignment,
    _read_strings,
    _write_assignment,
    _write_strings,
)
from kgroups.coordinator.consumer_assignors.spec import Assignment
from kgroups.coordinator.record_codec import Reader, RecordFormatError, Writer

MEMBER_METADATA = 10
GROUP_METADATA = 11
TARGET_ASSIGNMENT_METADATA = 12
TARGET_ASSIGNMENT_MEMBER = 13
CURRENT_MEMBER_ASSIGNMENT = 14
STATE_PARTITION_METADATA = 15

_GROUP_KEYS = frozenset({GROUP_METADATA, TARGET_ASSIGNMENT_METADATA, STATE_PARTITION_METADATA})
_MEMBER_KEYS = frozenset({MEMBER_METADATA, TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT})
RECORD_TYPES = _GROUP_KEYS | _MEMBER_KEYS

VALUE_VERSION = 0


@dataclass(frozen=True, slots=True)
class ShareGroupKey:
    record_type: int
    group_id: str
    member_id: str | None = None  # set for the member records (10, 13, 14)


@dataclass(frozen=True, slots=True)
class MemberMetadataValue:
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    epoch: int
    metadata_hash: int


@dataclass(frozen=True, slots=True)
class TargetAssignmentMetadataValue:
    assignment_epoch: int


@dataclass(frozen=True, slots=True)
class TargetAssignmentMemberValue:
    partitions: Assignment


@dataclass(frozen=True, slots=True)
class CurrentMemberAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned_partitions: Assignment


@dataclass(frozen=True, slots=True)
class StatePartitionMetadataValue:
    """Kept as bytes (``state_partitions`` reads them): which partitions'
    share state the group coordinator initialized, or is initializing."""

    raw: bytes


@dataclass(frozen=True, slots=True)
class TopicPartitions:
    topic_id: uuid.UUID
    topic_name: str
    partitions: tuple[int, ...]
    create_timestamp: int = 0


@dataclass(frozen=True, slots=True)
class StatePartitions:
    """Record 15's value, decoded."""

    initializing: tuple[TopicPartitions, ...] = ()
    initialized: tuple[TopicPartitions, ...] = ()
    deleting: tuple[tuple[uuid.UUID, str], ...] = ()

    def encode(self) -> bytes:
        writer = Writer(VALUE_VERSION, flexible=True)
        for topics in (self.initializing, self.initialized):
            writer.array_length(len(topics))
            for t in topics:
                writer.uuid(t.topic_id)
                writer.string(t.topic_name)
                writer.array_length(len(t.partitions))
                for p in t.partitions:
                    writer.int32(p)
                writer.int64(t.create_timestamp)
                writer.uvarint(0)
        writer.array_length(len(self.deleting))
        for topic_id, name in self.deleting:
            writer.uuid(topic_id)
            writer.string(name)
            writer.uvarint(0)
        writer.uvarint(0)  # no tagged fields
        return writer.getvalue()

    @classmethod
    def decode(cls, data: bytes | None) -> StatePartitions:
        if data is None:
            return cls()
        reader = Reader(data, flexible=True)
        version = reader.int16()
        if version != VALUE_VERSION:
            raise RecordFormatError(f"record type 15: unknown value version {version}")
        lists = []
        for _ in range(2):
            topics = []
            for _ in range(reader.array_length()):
                topic_id, name = reader.uuid(), reader.string()
                partitions = tuple(reader.int32() for _ in range(reader.array_length()))
                created = reader.int64()
                reader.tagged_fields()
                topics.append(TopicPartitions(topic_id, name, partitions, created))
            lists.append(tuple(topics))
        deleting = []
        for _ in range(reader.array_length()):
            deleting.append((reader.uuid(), reader.string()))
            reader.tagged_fields()
        reader.tagged_fields()
        return cls(lists[0], lists[1], tuple(deleting))


@dataclass(frozen=True, slots=True)
class ShareStatePlan:
    """What the group coordinator's shell is told of a share group's share
    state: the partitions to initialize and the state epoch to use, or the
    partitions whose state exists (to delete); ``error`` if the group is
    not a share group here."""

    error: int = 0
    group_epoch: int = 0
    partitions: tuple[TopicPartitions, ...] = ()
    empty: bool = True


ShareGroupValue: TypeAlias = (
    MemberMetadataValue
    | GroupMetadataValue
    | TargetAssignmentMetadataValue
    | TargetAssignmentMemberValue
    | CurrentMemberAssignmentValue
    | StatePartitionMetadataValue
)

Record = tuple[bytes, bytes | None]
Emit = Callable[[ShareGroupKey, ShareGroupValue | None], None]


def is_share_group_key(data: bytes) -> bool:
    return len(data) >= 2 and int.from_bytes(data[:2], "big", signed=True) in RECORD_TYPES


def encode_key(key: ShareGroupKey) -> bytes:
    writer = Writer(key.record_type, flexible=False)
    writer.string(key.group_id)
    if key.record_type in _MEMBER_KEYS:
        assert key.member_id is not None
        writer.string(key.member_id)
    return writer.getvalue()


def decode_key(data: bytes) -> ShareGroupKey:
    reader = Reader(data)
    record_type = reader.int16()
    if record_type not in RECORD_TYPES:
        raise RecordFormatError(f"record type {record_type} is not a share group record")
    group_id = reader.string()
    member_id = reader.string() if record_type in _MEMBER_KEYS else None
    if not reader.at_end():
        raise RecordFormatError("bytes after the key")
    return ShareGroupKey(record_type, group_id, member_id)


def encode_value(value: ShareGroupValue) -> bytes:
    if isinstance(value, StatePartitionMetadataValue):
        return value.raw
    writer = Writer(VALUE_VERSION, flexible=True)
    if isinstance(value, MemberMetadataValue):
        writer.string(value.rack_id)
        writer.string(value.client_id)
        writer.string(value.client_host)
        _write_strings(writer, value.subscribed_topic_names)
    elif isinstance(value, GroupMetadataValue):
        writer.int32(value.epoch)
        writer.int64(value.metadata_hash)
    elif isinstance(value, TargetAssignmentMetadataValue):
        writer.int32(value.assignment_epoch)
    elif isinstance(value, TargetAssignmentMemberValue):
        _write_assignment(writer, value.partitions)
    else:
        writer.int32(value.member_epoch)
        writer.int32(value.previous_member_epoch)
        writer.int8(value.state)
        _write_assignment(writer, value.assigned_partitions)
    writer.uvarint(0)  # no tagged fields
    return writer.getvalue()


def decode_value(record_type: int, data: bytes) -> ShareGroupValue:
    if record_type == STATE_PARTITION_METADATA:
        return StatePartitionMetadataValue(data)
    reader = Reader(data, flexible=True)
    version = reader.int16()
    if version != VALUE_VERSION:
        raise RecordFormatError(f"record type {record_type}: unknown value version {version}")
    value: ShareGroupValue
    if record_type == MEMBER_METADATA:
        value = MemberMetadataValue(
            reader.nullable_string(), reader.string(), reader.string(), _read_strings(reader)
        )
    elif record_type == GROUP_METADATA:
        value = GroupMetadataValue(reader.int32(), reader.int64())
    elif record_type == TARGET_ASSIGNMENT_METADATA:
        value = TargetAssignmentMetadataValue(reader.int32())
    elif record_type == TARGET_ASSIGNMENT_MEMBER:
        value = TargetAssignmentMemberValue(_read_assignment(reader))
    else:
        value = CurrentMemberAssignmentValue(
            reader.int32(), reader.int32(), reader.int8(), _read_assignment(reader)
        )
    reader.tagged_fields()
    return value


def encode_record(key: ShareGroupKey, value: ShareGroupValue | None) -> Record:
    return encode_key(key), None if value is None else encode_value(value)


def decode_record(key: bytes, value: bytes | None) -> tuple[ShareGroupKey, ShareGroupValue | None]:
    decoded = decode_key(key)
    return decoded, None if value is None else decode_value(decoded.record_type, value)
