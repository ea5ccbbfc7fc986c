"""Kafka's ``__transaction_state`` record formats, byte for byte.

Key (TransactionLogKey, v0 only, not flexible): int16 version, then the
transactional id as a string.

Value (TransactionLogValue): int16 version, then
    producer_id int64, producer_epoch int16, transaction_timeout_ms int32,
    state int8, partitions nullable [topic string, partition_ids [int32]],
    last_update_timestamp_ms int64, start_timestamp_ms int64.
v1 is flexible (compact lengths, tagged fields) and carries in tagged fields
the previous producer id (tag 0), the next producer id (tag 1) and the
client's transaction version (tag 2).

Kafka writes v0 while the cluster's ``transaction.version`` is 0 (as on
Kafka 3.x), which is the protocol this coordinator speaks; both versions are
read. A ``None`` value is a tombstone: the
transactional id expired.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass

from kgroups.coordinator.record_codec import Reader, RecordFormatError, Writer
from kgroups.topics.placement import java_string_hash, kafka_abs

TRANSACTION_LOG_KEY_VERSION = 0
TRANSACTION_LOG_VALUE_VERSION = 0
_FLEXIBLE_VALUE_VERSION = 1

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_TIMESTAMP = -1

_INT16 = struct.Struct(">h")

_TAG_PREVIOUS_PRODUCER_ID = 0
_TAG_NEXT_PRODUCER_ID = 1
_TAG_CLIENT_TRANSACTION_VERSION = 2


def partition_for_transactional_id(transactional_id: str, partitions: int) -> int:
    """Kafka's placement: ``Utils.abs(transactionalId.hashCode()) % partitions``."""
    return kafka_abs(java_string_hash(transactional_id)) % partitions


@dataclass(frozen=True, slots=True)
class TransactionLogValue:
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: int  # the state's byte (state.py)
    # (topic, partition) pairs; None for a state stored without them (Empty).
    partitions: frozenset[tuple[str, int]] | None
    last_update_timestamp_ms: int
    start_timestamp_ms: int
    previous_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    client_transaction_version: int = 0


def encode_key(transactional_id: str) -> bytes:
    writer = Writer(TRANSACTION_LOG_KEY_VERSION, flexible=False)
    writer.string(transactional_id)
    return writer.getvalue()


def decode_key(data: bytes) -> str:
    reader = Reader(data)
    version = reader.int16()
    if version != TRANSACTION_LOG_KEY_VERSION:
        raise RecordFormatError(f"unknown transaction log key version {version}")
    return reader.string()


def encode_value(value: TransactionLogValue, version: int = TRANSACTION_LOG_VALUE_VERSION) -> bytes:
    if version not in (0, _FLEXIBLE_VALUE_VERSION):
        raise RecordFormatError(f"no transaction log value version {version}")
    flexible = version >= _FLEXIBLE_VALUE_VERSION
    writer = Writer(version, flexible=flexible)
    writer.int64(value.producer_id)
    writer.raw(_INT16.pack(value.producer_epoch))
    writer.int32(value.timeout_ms)
    writer.int8(value.state)
    if value.partitions is None:
        writer.array_length(-1)
    else:
        by_topic = _by_topic(value.partitions)
        writer.array_length(len(by_topic))
        for topic, partitions in by_topic:
            writer.string(topic)
            writer.array_length(len(partitions))
            for partition in partitions:
                writer.int32(partition)
            writer.no_tagged_fields()
    writer.int64(value.last_update_timestamp_ms)
    writer.int64(value.start_timestamp_ms)
    if flexible:
        _write_tags(writer, value)
    return writer.getvalue()


def decode_value(data: bytes) -> TransactionLogValue:
    reader = Reader(data)
    version = reader.int16()
    if version not in (0, _FLEXIBLE_VALUE_VERSION):
        raise RecordFormatError(f"unknown transaction log value version {version}")
    reader.flexible = version >= _FLEXIBLE_VALUE_VERSION
    producer_id = reader.int64()
    producer_epoch = reader.int16()
    timeout_ms = reader.int32()
    state = reader.int8()
    count = reader.uvarint() - 1 if reader.flexible else reader.int32()
    partitions: frozenset[tuple[str, int]] | None = None
    if count >= 0:
        pairs: list[tuple[str, int]] = []
        for _ in range(count):
            topic = reader.string()
            pairs.extend((topic, reader.int32()) for _ in range(reader.array_length()))
            reader.tagged_fields()
        partitions = frozenset(pairs)
    last_update = reader.int64()
    start = reader.int64()
    tags: dict[int, int] = {}

    def read_tag(tag: int, tag_reader: Reader) -> None:
        if tag in (_TAG_PREVIOUS_PRODUCER_ID, _TAG_NEXT_PRODUCER_ID):
            tags[tag] = tag_reader.int64()
        elif tag == _TAG_CLIENT_TRANSACTION_VERSION:
            tags[tag] = tag_reader.int16()

    reader.tagged_fields(read_tag)
    return TransactionLogValue(
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        timeout_ms=timeout_ms,
        state=state,
        partitions=partitions,
        last_update_timestamp_ms=last_update,
        start_timestamp_ms=start,
        previous_producer_id=tags.get(_TAG_PREVIOUS_PRODUCER_ID, NO_PRODUCER_ID),
        next_producer_id=tags.get(_TAG_NEXT_PRODUCER_ID, NO_PRODUCER_ID),
        client_transaction_version=tags.get(_TAG_CLIENT_TRANSACTION_VERSION, 0),
    )


def _by_topic(partitions: Iterable[tuple[str, int]]) -> list[tuple[str, list[int]]]:
    grouped: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        grouped.setdefault(topic, []).append(partition)
    return list(grouped.items())


def _write_tags(writer: Writer, value: TransactionLogValue) -> None:
    """The tagged fields that differ from their defaults, by tag."""
    tags: list[tuple[int, bytes]] = []
    if value.previous_producer_id != NO_PRODUCER_ID:
        tags.append((_TAG_PREVIOUS_PRODUCER_ID, struct.pack(">q", value.previous_producer_id)))
    if value.next_producer_id != NO_PRODUCER_ID:
        tags.append((_TAG_NEXT_PRODUCER_ID, struct.pack(">q", value.next_producer_id)))
    if value.client_transaction_version != 0:
        tags.append(
            (_TAG_CLIENT_TRANSACTION_VERSION, _INT16.pack(value.client_transaction_version))
        )
    writer.uvarint(len(tags))
    for tag, body in tags:
        writer.uvarint(tag)
        writer.uvarint(len(body))
        writer.raw(body)
