"""The records of ``__share_group_state`` (KIP-932's share coordinator), as
Kafka 4.x lays them out.

A key is an int16 record type (0: ShareSnapshot, 1: ShareUpdate) then, not
flexible, the group id (string), the topic id (uuid) and the partition
(int32). A value starts with version 0 and is flexible:

- ShareSnapshot: snapshot_epoch int32, state_epoch int32, leader_epoch int32,
  start_offset int64, create_timestamp int64, write_timestamp int64,
  [state batch];
- ShareUpdate: snapshot_epoch int32, leader_epoch int32, start_offset int64
  (-1: unchanged), [state batch];

a state batch being first_offset int64, last_offset int64, delivery_state
int8 (0 available, 2 acknowledged, 4 archived) and delivery_count int16. A
snapshot holds a share partition's whole state; an update, the batches that
changed since the snapshot. The share coordinator writes and reads both.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from kgroups.coordinator.record_codec import Reader, RecordFormatError, Writer

SHARE_SNAPSHOT = 0
SHARE_UPDATE = 1
_VALUE_VERSION = 0
UNCHANGED_START_OFFSET = -1


@dataclass(frozen=True, slots=True)
class ShareStateKey:
    record_type: int
    group_id: str
    topic_id: uuid.UUID
    partition: int


@dataclass(frozen=True, slots=True)
class StateBatch:
    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class ShareSnapshotValue:
    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    create_timestamp: int
    write_timestamp: int
    state_batches: tuple[StateBatch, ...]


@dataclass(frozen=True, slots=True)
class ShareUpdateValue:
    snapshot_epoch: int
    leader_epoch: int
    start_offset: int
    state_batches: tuple[StateBatch, ...]


def encode_key(key: ShareStateKey) -> bytes:
    writer = Writer(key.record_type, flexible=False)
    writer.string(key.group_id)
    writer.uuid(key.topic_id)
    writer.int32(key.partition)
    return writer.getvalue()


def decode_key(data: bytes) -> ShareStateKey:
    reader = Reader(data)
    record_type = reader.int16()
    if record_type not in (SHARE_SNAPSHOT, SHARE_UPDATE):
        raise RecordFormatError(f"record type {record_type} is not a share state record")
    key = ShareStateKey(record_type, reader.string(), reader.uuid(), reader.int32())
    if not reader.at_end():
        raise RecordFormatError("bytes after the key")
    return key


def encode_snapshot(value: ShareSnapshotValue) -> bytes:
    writer = Writer(_VALUE_VERSION, flexible=True)
    writer.int32(value.snapshot_epoch)
    writer.int32(value.state_epoch)
    writer.int32(value.leader_epoch)
    writer.int64(value.start_offset)
    writer.int64(value.create_timestamp)
    writer.int64(value.write_timestamp)
    _write_batches(writer, value.state_batches)
    writer.uvarint(0)  # no tagged fields
    return writer.getvalue()


def decode_snapshot(data: bytes) -> ShareSnapshotValue:
    reader = _value_reader(data)
    value = ShareSnapshotValue(
        reader.int32(),
        reader.int32(),
        reader.int32(),
        reader.int64(),
        reader.int64(),
        reader.int64(),
        _read_batches(reader),
    )
    reader.tagged_fields()
    return value


def decode_update(data: bytes) -> ShareUpdateValue:
    reader = _value_reader(data)
    value = ShareUpdateValue(reader.int32(), reader.int32(), reader.int64(), _read_batches(reader))
    reader.tagged_fields()
    return value


def _value_reader(data: bytes) -> Reader:
    reader = Reader(data, flexible=True)
    version = reader.int16()
    if version != _VALUE_VERSION:
        raise RecordFormatError(f"share state value version {version} is not known")
    return reader


def _write_batches(writer: Writer, batches: tuple[StateBatch, ...]) -> None:
    writer.array_length(len(batches))
    for batch in batches:
        writer.int64(batch.first_offset)
        writer.int64(batch.last_offset)
        writer.int8(batch.delivery_state)
        writer.raw(batch.delivery_count.to_bytes(2, "big", signed=True))
        writer.uvarint(0)


def _read_batches(reader: Reader) -> tuple[StateBatch, ...]:
    batches = []
    for _ in range(reader.array_length()):
        batch = StateBatch(reader.int64(), reader.int64(), reader.int8(), reader.int16())
        reader.tagged_fields()
        batches.append(batch)
    return tuple(batches)


def encode_update(value: ShareUpdateValue) -> bytes:
    writer = Writer(_VALUE_VERSION, flexible=True)
    writer.int32(value.snapshot_epoch)
    writer.int32(value.leader_epoch)
    writer.int64(value.start_offset)
    _write_batches(writer, value.state_batches)
    writer.uvarint(0)  # no tagged fields
    return writer.getvalue()
