"""Kafka's ``__consumer_offsets`` record formats, byte for byte.

Every key and value starts with a big-endian int16 version. Keys of version
0 and 1 name a committed offset (group, topic, partition), version 2 names a
group's metadata. Values:

OffsetCommitValue
    v0, v2: offset int64, metadata string, commit_timestamp int64
    v1:     offset int64, metadata string, commit_timestamp int64, expire_timestamp int64
    v3:     offset int64, leader_epoch int32, metadata string, commit_timestamp int64
    v4:     as v3, flexible (compact strings, tagged fields)

GroupMetadataValue
    protocol_type string, generation int32, protocol nullable string,
    leader nullable string, current_state_timestamp int64 (v2+), members [
        member_id string, group_instance_id nullable string (v3+),
        client_id string, client_host string, rebalance_timeout int32 (v1+),
        session_timeout int32, subscription bytes, assignment bytes ]
    v4 is flexible.

Kafka 3.x writes offset keys as v1, group keys as v2, group values as v3 and
offset values as v3 — or v1 when the commit carries an explicit expiry. All
versions are read. A ``None`` value is a tombstone.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import lru_cache

from kgroups.coordinator.record_codec import Reader, Writer
from kgroups.coordinator.record_codec import RecordFormatError as RecordFormatError

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
GROUP_METADATA_VALUE_VERSION = 3
OFFSET_COMMIT_VALUE_VERSION = 3
OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY = 1

NO_TIMESTAMP = -1
NO_LEADER_EPOCH = -1

_FLEXIBLE_VALUE_VERSION = 4


@dataclass(frozen=True, slots=True)
class OffsetCommitKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    group: str


@dataclass(frozen=True, slots=True)
class UnknownKey:
    """A key of a version this coordinator does not own; skipped on load."""

    version: int


@dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    offset: int
    metadata: str
    commit_timestamp: int
    leader_epoch: int = NO_LEADER_EPOCH
    expire_timestamp: int = NO_TIMESTAMP


@dataclass(frozen=True, slots=True)
class MemberMetadataValue:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int
    members: tuple[MemberMetadataValue, ...]


RecordKey = OffsetCommitKey | GroupMetadataKey | UnknownKey


# -- keys --------------------------------------------------------------------


# Offset commit keys and v3 values are most of `__consumer_offsets`: they are
# packed and unpacked with precompiled structs instead of the general reader.
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_TWO_INT16 = struct.Struct(">hh")
_VALUE_V3_HEAD = struct.Struct(">hqih")
_VALUE_V3_NO_METADATA = struct.Struct(">hqihq")


@lru_cache(maxsize=65536)  # a group commits the same partitions again and again
def encode_offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    g = group.encode()
    t = topic.encode()
    return b"".join(
        (
            _TWO_INT16.pack(OFFSET_COMMIT_KEY_VERSION, len(g)),
            g,
            _INT16.pack(len(t)),
            t,
            _INT32.pack(partition),
        )
    )


def encode_group_metadata_key(group: str) -> bytes:
    writer = Writer(GROUP_METADATA_KEY_VERSION, flexible=False)
    writer.string(group)
    return writer.getvalue()


def decode_key(data: bytes) -> RecordKey:
    if len(data) >= 4 and data[:2] in (b"\x00\x00", b"\x00\x01"):
        return _decode_offset_commit_key(data)
    reader = Reader(data)
    version = reader.int16()
    if version in (0, 1):
        return OffsetCommitKey(reader.string(), reader.string(), reader.int32())
    if version == GROUP_METADATA_KEY_VERSION:
        return GroupMetadataKey(reader.string())
    return UnknownKey(version)


def _decode_offset_commit_key(data: bytes) -> OffsetCommitKey:
    try:
        (group_length,) = _INT16.unpack_from(data, 2)
        topic_at = 4 + group_length
        (topic_length,) = _INT16.unpack_from(data, topic_at)
        partition_at = topic_at + 2 + topic_length
        (partition,) = _INT32.unpack_from(data, partition_at)
        if group_length < 0 or topic_length < 0 or len(data) < partition_at + 4:
            raise RecordFormatError("malformed offset commit key")
        group = data[4:topic_at].decode()
        topic = data[topic_at + 2 : partition_at].decode()
    except struct.error:
        raise RecordFormatError("record ends early") from None
    except UnicodeDecodeError as e:
        raise RecordFormatError("string is not UTF-8") from e
    return OffsetCommitKey(group, topic, partition)


# -- offset commit values ----------------------------------------------------


def offset_commit_value_version(value: OffsetCommitValue) -> int:
    """The version Kafka 3.x writes: v1 only to keep an explicit expiry."""
    if value.expire_timestamp != NO_TIMESTAMP:
        return OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY
    return OFFSET_COMMIT_VALUE_VERSION


def encode_offset_commit_value(value: OffsetCommitValue, version: int | None = None) -> bytes:
    if version is None:
        version = offset_commit_value_version(value)
    if not 0 <= version <= _FLEXIBLE_VALUE_VERSION:
        raise RecordFormatError(f"no offset commit value version {version}")
    if version == 3:
        return encode_offset_commit_value_v3(
            value.offset, value.leader_epoch, value.metadata, value.commit_timestamp
        )
    writer = Writer(version, flexible=version >= _FLEXIBLE_VALUE_VERSION)
    writer.int64(value.offset)
    if version >= 3:
        writer.int32(value.leader_epoch)
    writer.string(value.metadata)
    writer.int64(value.commit_timestamp)
    if version == 1:
        writer.int64(value.expire_timestamp)
    writer.no_tagged_fields()
    return writer.getvalue()


def encode_offset_commit_value_v3(
    offset: int, leader_epoch: int, metadata: str, commit_timestamp: int
) -> bytes:
    """The usual value (v3), from its fields: the commit path writes one per
    partition and needs no OffsetCommitValue for it."""
    if not metadata:  # nearly every commit
        return _VALUE_V3_NO_METADATA.pack(3, offset, leader_epoch, 0, commit_timestamp)
    encoded = metadata.encode()
    return b"".join(
        (
            _VALUE_V3_HEAD.pack(3, offset, leader_epoch, len(encoded)),
            encoded,
            _INT64.pack(commit_timestamp),
        )
    )


def decode_offset_commit_value(data: bytes) -> OffsetCommitValue:
    if data[:2] == b"\x00\x03":
        return _decode_offset_commit_value_v3(data)
    reader = Reader(data)
    version = reader.int16()
    if not 0 <= version <= _FLEXIBLE_VALUE_VERSION:
        raise RecordFormatError(f"unknown offset commit value version {version}")
    reader.flexible = version >= _FLEXIBLE_VALUE_VERSION
    offset = reader.int64()
    leader_epoch = reader.int32() if version >= 3 else NO_LEADER_EPOCH
    metadata = reader.string()
    commit_timestamp = reader.int64()
    expire_timestamp = reader.int64() if version == 1 else NO_TIMESTAMP
    reader.tagged_fields()
    return OffsetCommitValue(
        offset=offset,
        metadata=metadata,
        commit_timestamp=commit_timestamp,
        leader_epoch=leader_epoch,
        expire_timestamp=expire_timestamp,
    )


def _decode_offset_commit_value_v3(data: bytes) -> OffsetCommitValue:
    try:
        _version, offset, leader_epoch, length = _VALUE_V3_HEAD.unpack_from(data)
        if length < 0:
            raise RecordFormatError("null where a string is required")
        end = 16 + length
        (commit_timestamp,) = _INT64.unpack_from(data, end)
        metadata = data[16:end].decode()
    except struct.error:
        raise RecordFormatError("record ends early") from None
    except UnicodeDecodeError as e:
        raise RecordFormatError("string is not UTF-8") from e
    return OffsetCommitValue(
        offset=offset,
        metadata=metadata,
        commit_timestamp=commit_timestamp,
        leader_epoch=leader_epoch,
    )


# -- group metadata values ---------------------------------------------------


def encode_group_metadata_value(
    value: GroupMetadataValue, version: int = GROUP_METADATA_VALUE_VERSION
) -> bytes:
    if not 0 <= version <= _FLEXIBLE_VALUE_VERSION:
        raise RecordFormatError(f"no group metadata value version {version}")
    writer = Writer(version, flexible=version >= _FLEXIBLE_VALUE_VERSION)
    writer.string(value.protocol_type)
    writer.int32(value.generation)
    writer.string(value.protocol)
    writer.string(value.leader)
    if version >= 2:
        writer.int64(value.current_state_timestamp)
    writer.array_length(len(value.members))
    for member in value.members:
        writer.string(member.member_id)
        if version >= 3:
            writer.string(member.group_instance_id)
        writer.string(member.client_id)
        writer.string(member.client_host)
        if version >= 1:
            writer.int32(member.rebalance_timeout)
        writer.int32(member.session_timeout)
        writer.bytes_(member.subscription)
        writer.bytes_(member.assignment)
        writer.no_tagged_fields()
    writer.no_tagged_fields()
    return writer.getvalue()


def decode_group_metadata_value(data: bytes) -> GroupMetadataValue:
    reader = Reader(data)
    version = reader.int16()
    if not 0 <= version <= _FLEXIBLE_VALUE_VERSION:
        raise RecordFormatError(f"unknown group metadata value version {version}")
    reader.flexible = version >= _FLEXIBLE_VALUE_VERSION
    protocol_type = reader.string()
    generation = reader.int32()
    protocol = reader.nullable_string()
    leader = reader.nullable_string()
    current_state_timestamp = reader.int64() if version >= 2 else NO_TIMESTAMP
    members = []
    for _ in range(reader.array_length()):
        member_id = reader.string()
        group_instance_id = reader.nullable_string() if version >= 3 else None
        client_id = reader.string()
        client_host = reader.string()
        rebalance_timeout = reader.int32() if version >= 1 else -1
        session_timeout = reader.int32()
        subscription = reader.bytes_()
        assignment = reader.bytes_()
        reader.tagged_fields()
        members.append(
            MemberMetadataValue(
                member_id=member_id,
                group_instance_id=group_instance_id,
                client_id=client_id,
                client_host=client_host,
                rebalance_timeout=rebalance_timeout,
                session_timeout=session_timeout,
                subscription=subscription,
                assignment=assignment,
            )
        )
    reader.tagged_fields()
    return GroupMetadataValue(
        protocol_type=protocol_type,
        generation=generation,
        protocol=protocol,
        leader=leader,
        current_state_timestamp=current_state_timestamp,
        members=tuple(members),
    )
