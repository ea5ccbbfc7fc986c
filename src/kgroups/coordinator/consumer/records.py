"""The consumer group (KIP-848) records of ``__consumer_offsets``, as Kafka 4.x
writes them.

A key starts with an int16 record type, then the key's fields (not
flexible). A value starts with an int16 version (0 for all of these), then
its fields, flexible (compact strings and arrays, tagged fields).

==== ====================================== ==================================
type key fields                             value v0 fields
==== ====================================== ==================================
3    ConsumerGroupMetadata: group           epoch int32; tag 0: metadata_hash
                                            int64 (4.1+, omitted when 0)
4    ConsumerGroupPartitionMetadata: group  [topic_id uuid, topic_name,
                                            num_partitions int32, [partition
                                            int32, [racks]]] (read; 4.1 no
                                            longer writes it)
5    ConsumerGroupMemberMetadata:           instance_id?, rack_id?, client_id,
     group, member                          client_host, [subscribed names],
                                            regex?, rebalance_timeout int32,
                                            server_assignor?; tag 0: classic
                                            member metadata (nullable struct)
6    ConsumerGroupTargetAssignmentMetadata: assignment_epoch int32
     group
7    ConsumerGroupTargetAssignmentMember:   [topic_id uuid, [partition int32]]
     group, member
8    ConsumerGroupCurrentMemberAssignment:  member_epoch int32, previous
     group, member                          int32, state int8, [assigned],
                                            [pending revocation]
16   ConsumerGroupRegularExpression:        [topics], version int64,
     group, regex                           timestamp int64
==== ====================================== ==================================

A ``None`` value is a tombstone. Topics in an assignment are written in topic
id order and partitions ascending, so the same state gives the same bytes.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TypeAlias

from kgroups.coordinator.consumer_assignors.spec import EMPTY_ASSIGNMENT, Assignment
from kgroups.coordinator.record_codec import Reader, RecordFormatError, Writer

GROUP_METADATA = 3
PARTITION_METADATA = 4
MEMBER_METADATA = 5
TARGET_ASSIGNMENT_METADATA = 6
TARGET_ASSIGNMENT_MEMBER = 7
CURRENT_MEMBER_ASSIGNMENT = 8
REGULAR_EXPRESSION = 16

RECORD_TYPES = frozenset(
    {
        GROUP_METADATA,
        PARTITION_METADATA,
        MEMBER_METADATA,
        TARGET_ASSIGNMENT_METADATA,
        TARGET_ASSIGNMENT_MEMBER,
        CURRENT_MEMBER_ASSIGNMENT,
        REGULAR_EXPRESSION,
    }
)

VALUE_VERSION = 0


# -- keys --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GroupKey:
    """A key naming a group: types 3, 4 and 6."""

    record_type: int
    group_id: str


@dataclass(frozen=True, slots=True)
class MemberKey:
    """A key naming a member of a group: types 5, 7 and 8."""

    record_type: int
    group_id: str
    member_id: str


@dataclass(frozen=True, slots=True)
class RegularExpressionKey:
    group_id: str
    regex: str
    record_type: int = REGULAR_EXPRESSION


ConsumerGroupKey: TypeAlias = GroupKey | MemberKey | RegularExpressionKey

_GROUP_KEYS = frozenset({GROUP_METADATA, PARTITION_METADATA, TARGET_ASSIGNMENT_METADATA})
_MEMBER_KEYS = frozenset({MEMBER_METADATA, TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT})


def encode_key(key: ConsumerGroupKey) -> bytes:
    writer = Writer(key.record_type, flexible=False)
    writer.string(key.group_id)
    if isinstance(key, MemberKey):
        writer.string(key.member_id)
    elif isinstance(key, RegularExpressionKey):
        writer.string(key.regex)
    return writer.getvalue()


def decode_key(data: bytes) -> ConsumerGroupKey:
    reader = Reader(data)
    record_type = reader.int16()
    group_id = reader.string()
    if record_type in _GROUP_KEYS:
        key: ConsumerGroupKey = GroupKey(record_type, group_id)
    elif record_type in _MEMBER_KEYS:
        key = MemberKey(record_type, group_id, reader.string())
    elif record_type == REGULAR_EXPRESSION:
        key = RegularExpressionKey(group_id, reader.string())
    else:
        raise RecordFormatError(f"record type {record_type} is not a consumer group record")
    if not reader.at_end():
        raise RecordFormatError("bytes after the key")
    return key


def is_consumer_group_key(data: bytes) -> bool:
    return len(data) >= 2 and int.from_bytes(data[:2], "big", signed=True) in RECORD_TYPES


# -- values ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    epoch: int
    metadata_hash: int = 0
    """A hash of the subscribed topics' metadata (Kafka 4.1, KIP-1101): when
    it no longer matches the topics, the group epoch moves on."""


@dataclass(frozen=True, slots=True)
class TopicMetadataEntry:
    topic_id: uuid.UUID
    topic_name: str
    num_partitions: int
    partition_racks: tuple[tuple[int, tuple[str, ...]], ...] = ()


@dataclass(frozen=True, slots=True)
class PartitionMetadataValue:
    topics: tuple[TopicMetadataEntry, ...]


@dataclass(frozen=True, slots=True)
class ClassicMemberMetadata:
    """Set for a classic-protocol member inside a consumer group."""

    session_timeout_ms: int
    supported_protocols: tuple[tuple[str, bytes], ...]


# Kafka's type 5 value: a wire schema apart from the classic member's in coordinator/records.py.
@dataclass(frozen=True, slots=True)
class MemberMetadataValue:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: int
    server_assignor: str | None
    classic_member_metadata: ClassicMemberMetadata | None = None


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
    """A MemberState value (Kafka's byte)."""
    assigned_partitions: Assignment
    partitions_pending_revocation: Assignment


@dataclass(frozen=True, slots=True)
class RegularExpressionValue:
    topics: tuple[str, ...]
    version: int
    """The topic metadata version the regex was resolved against."""
    timestamp: int


ConsumerGroupValue: TypeAlias = (
    GroupMetadataValue
    | PartitionMetadataValue
    | MemberMetadataValue
    | TargetAssignmentMetadataValue
    | TargetAssignmentMemberValue
    | CurrentMemberAssignmentValue
    | RegularExpressionValue
)

Emit = Callable[[ConsumerGroupKey, ConsumerGroupValue | None], None]
"""Writes one record, applied at once (the coordinator's ``_emit``)."""


def _write_assignment(writer: Writer, assignment: Assignment) -> None:
    writer.array_length(len(assignment))
    for topic_id in sorted(assignment):
        partitions = sorted(assignment[topic_id])
        writer.uuid(topic_id)
        writer.array_length(len(partitions))
        for partition in partitions:
            writer.int32(partition)
        writer.uvarint(0)  # tagged fields


def _read_assignment(reader: Reader) -> Assignment:
    topics: dict[uuid.UUID, frozenset[int]] = {}
    for _ in range(reader.array_length()):
        topic_id = reader.uuid()
        topics[topic_id] = frozenset(reader.int32() for _ in range(reader.array_length()))
        reader.tagged_fields()
    return MappingProxyType(topics) if topics else EMPTY_ASSIGNMENT


def _write_strings(writer: Writer, values: tuple[str, ...]) -> None:
    writer.array_length(len(values))
    for value in values:
        writer.string(value)


def _read_strings(reader: Reader) -> tuple[str, ...]:
    return tuple(reader.string() for _ in range(reader.array_length()))


def _uvarint_bytes(value: int) -> bytes:
    out = Writer(0, flexible=True)
    out.uvarint(value)
    return out.getvalue()[2:]


def encode_value(value: ConsumerGroupValue) -> bytes:
    writer = Writer(VALUE_VERSION, flexible=True)
    if isinstance(value, GroupMetadataValue):
        writer.int32(value.epoch)
        if value.metadata_hash:
            writer.uvarint(1)  # one tagged field
            writer.uvarint(0)  # tag 0
            writer.uvarint(8)
            writer.int64(value.metadata_hash)
            return writer.getvalue()
    elif isinstance(value, PartitionMetadataValue):
        writer.array_length(len(value.topics))
        for topic in value.topics:
            writer.uuid(topic.topic_id)
            writer.string(topic.topic_name)
            writer.int32(topic.num_partitions)
            writer.array_length(len(topic.partition_racks))
            for partition, racks in topic.partition_racks:
                writer.int32(partition)
                _write_strings(writer, racks)
                writer.uvarint(0)
            writer.uvarint(0)
    elif isinstance(value, MemberMetadataValue):
        writer.string(value.instance_id)
        writer.string(value.rack_id)
        writer.string(value.client_id)
        writer.string(value.client_host)
        _write_strings(writer, value.subscribed_topic_names)
        writer.string(value.subscribed_topic_regex)
        writer.int32(value.rebalance_timeout_ms)
        writer.string(value.server_assignor)
        classic = value.classic_member_metadata
        if classic is not None:
            body = Writer(0, flexible=True)
            body.uvarint(1)  # a nullable struct: present
            body.int32(classic.session_timeout_ms)
            body.array_length(len(classic.supported_protocols))
            for name, metadata in classic.supported_protocols:
                body.string(name)
                body.uvarint(len(metadata) + 1)
                body.raw(metadata)
                body.uvarint(0)
            body.uvarint(0)
            encoded = body.getvalue()[2:]
            writer.uvarint(1)
            writer.uvarint(0)
            writer.raw(_uvarint_bytes(len(encoded)))
            writer.raw(encoded)
            return writer.getvalue()
    elif isinstance(value, TargetAssignmentMetadataValue):
        writer.int32(value.assignment_epoch)
    elif isinstance(value, TargetAssignmentMemberValue):
        _write_assignment(writer, value.partitions)
    elif isinstance(value, CurrentMemberAssignmentValue):
        writer.int32(value.member_epoch)
        writer.int32(value.previous_member_epoch)
        writer.int8(value.state)
        _write_assignment(writer, value.assigned_partitions)
        _write_assignment(writer, value.partitions_pending_revocation)
    else:
        _write_strings(writer, value.topics)
        writer.int64(value.version)
        writer.int64(value.timestamp)
    writer.uvarint(0)  # no tagged fields
    return writer.getvalue()


def decode_value(record_type: int, data: bytes) -> ConsumerGroupValue:
    reader = Reader(data, flexible=True)
    version = reader.int16()
    if version != VALUE_VERSION:
        raise RecordFormatError(f"record type {record_type}: unknown value version {version}")
    value: ConsumerGroupValue
    if record_type == GROUP_METADATA:
        epoch = reader.int32()
        found: dict[int, int] = {}

        def read_hash(tag: int, body: Reader) -> None:
            if tag == 0:
                found[0] = body.int64()

        reader.tagged_fields(read_hash)
        return GroupMetadataValue(epoch, found.get(0, 0))
    if record_type == PARTITION_METADATA:
        topics = []
        for _ in range(reader.array_length()):
            topic_id = reader.uuid()
            name = reader.string()
            num_partitions = reader.int32()
            racks = []
            for _ in range(reader.array_length()):
                partition = reader.int32()
                racks.append((partition, _read_strings(reader)))
                reader.tagged_fields()
            reader.tagged_fields()
            topics.append(TopicMetadataEntry(topic_id, name, num_partitions, tuple(racks)))
        value = PartitionMetadataValue(tuple(topics))
    elif record_type == MEMBER_METADATA:
        instance_id = reader.nullable_string()
        rack_id = reader.nullable_string()
        client_id = reader.string()
        client_host = reader.string()
        names = _read_strings(reader)
        regex = reader.nullable_string()
        rebalance_timeout_ms = reader.int32()
        server_assignor = reader.nullable_string()
        classic: list[ClassicMemberMetadata] = []

        def read_classic(tag: int, body: Reader) -> None:
            # A tagged nullable struct starts with varint 1 when present.
            if tag != 0 or body.uvarint() == 0:
                return
            session_timeout_ms = body.int32()
            protocols = []
            for _ in range(body.array_length()):
                name = body.string()
                protocols.append((name, body.bytes_()))
                body.tagged_fields()
            body.tagged_fields()
            classic.append(ClassicMemberMetadata(session_timeout_ms, tuple(protocols)))

        reader.tagged_fields(read_classic)
        return MemberMetadataValue(
            instance_id=instance_id,
            rack_id=rack_id,
            client_id=client_id,
            client_host=client_host,
            subscribed_topic_names=names,
            subscribed_topic_regex=regex,
            rebalance_timeout_ms=rebalance_timeout_ms,
            server_assignor=server_assignor,
            classic_member_metadata=classic[0] if classic else None,
        )
    elif record_type == TARGET_ASSIGNMENT_METADATA:
        value = TargetAssignmentMetadataValue(reader.int32())
    elif record_type == TARGET_ASSIGNMENT_MEMBER:
        value = TargetAssignmentMemberValue(_read_assignment(reader))
    elif record_type == CURRENT_MEMBER_ASSIGNMENT:
        member_epoch = reader.int32()
        previous = reader.int32()
        state = reader.int8()
        assigned = _read_assignment(reader)
        pending = _read_assignment(reader)
        value = CurrentMemberAssignmentValue(member_epoch, previous, state, assigned, pending)
    elif record_type == REGULAR_EXPRESSION:
        topics_ = _read_strings(reader)
        value = RegularExpressionValue(topics_, reader.int64(), reader.int64())
    else:
        raise RecordFormatError(f"record type {record_type} is not a consumer group record")
    reader.tagged_fields()
    return value


def encode_record(
    key: ConsumerGroupKey, value: ConsumerGroupValue | None
) -> tuple[bytes, bytes | None]:
    return encode_key(key), None if value is None else encode_value(value)


def decode_record(
    key: bytes, value: bytes | None
) -> tuple[ConsumerGroupKey, ConsumerGroupValue | None]:
    decoded = decode_key(key)
    return decoded, None if value is None else decode_value(decoded.record_type, value)


def assignment_of(partitions: Mapping[uuid.UUID, frozenset[int]]) -> Assignment:
    """An immutable assignment without empty topics."""
    kept = {t: p for t, p in partitions.items() if p}
    return MappingProxyType(kept) if kept else EMPTY_ASSIGNMENT
