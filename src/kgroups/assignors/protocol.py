"""The "consumer" protocol's member metadata: subscriptions and assignments.

A consumer joins a group with a ConsumerProtocolSubscription (the topics it
wants, opaque user data and, from v1 on, the partitions it owns, from v2 its
generation, from v3 its rack) and the leader answers each member with a
ConsumerProtocolAssignment. Both are an int16 version followed by the struct of
that version, whose layouts only ever append fields. A reader therefore accepts
any version it knows and reads a newer one as the newest it knows, leaving the
unknown tail alone -- as the Java client does.

The structs themselves are kio's entities; this module only maps them to plain
dataclasses that the assignors work with.
"""

from __future__ import annotations

import functools
import io
import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, cast

from kio.schema.types import TopicName
from kio.serial import entity_writer
from kio.static.primitive import i32

from kgroups.protocol.bounds import bounded_reader

__all__ = [
    "LATEST_VERSION",
    "NO_GENERATION",
    "Assignment",
    "ProtocolError",
    "Subscription",
    "TopicPartition",
    "decode_assignment",
    "decode_subscription",
    "encode_assignment",
    "encode_subscription",
]

LATEST_VERSION = 3
NO_GENERATION = -1

_VERSION = struct.Struct(">h")


class TopicPartition(NamedTuple):
    topic: str
    partition: int


@dataclass(slots=True)
class Subscription:
    topics: list[str]
    user_data: bytes | None = None
    owned_partitions: list[TopicPartition] = field(default_factory=list)
    generation_id: int = NO_GENERATION
    rack_id: str | None = None
    # Not part of the metadata: the JoinGroup response carries it beside the
    # metadata, and the range and roundrobin assignors order static members by it.
    group_instance_id: str | None = None


@dataclass(slots=True)
class Assignment:
    partitions: list[TopicPartition]
    user_data: bytes | None = None


class ProtocolError(ValueError):
    """Bytes that are not consumer protocol metadata."""


class _Tables(NamedTuple):
    """kio's entities, readers and writers by version (index = version)."""

    subscriptions: tuple[Any, ...]
    subscription_partitions: tuple[Any, ...]  # v0 subscriptions own no partitions
    assignments: tuple[Any, ...]
    assignment_partitions: tuple[Any, ...]
    subscription_readers: tuple[Any, ...]
    subscription_writers: tuple[Any, ...]
    assignment_readers: tuple[Any, ...]
    assignment_writers: tuple[Any, ...]


@functools.cache
def _tables() -> _Tables:
    # Built at the first subscription or assignment read or written, not when
    # the coordinator is imported: a broker whose groups never form skips them.
    from kio.schema.consumer_protocol_assignment.v0 import data as assignment_v0
    from kio.schema.consumer_protocol_assignment.v1 import data as assignment_v1
    from kio.schema.consumer_protocol_assignment.v2 import data as assignment_v2
    from kio.schema.consumer_protocol_assignment.v3 import data as assignment_v3
    from kio.schema.consumer_protocol_subscription.v0 import data as subscription_v0
    from kio.schema.consumer_protocol_subscription.v1 import data as subscription_v1
    from kio.schema.consumer_protocol_subscription.v2 import data as subscription_v2
    from kio.schema.consumer_protocol_subscription.v3 import data as subscription_v3

    subscription_schemas = (subscription_v0, subscription_v1, subscription_v2, subscription_v3)
    assignment_schemas = (assignment_v0, assignment_v1, assignment_v2, assignment_v3)
    subscriptions = tuple(m.ConsumerProtocolSubscription for m in subscription_schemas)
    assignments = tuple(m.ConsumerProtocolAssignment for m in assignment_schemas)
    return _Tables(
        subscriptions=subscriptions,
        subscription_partitions=(None, *(m.TopicPartition for m in subscription_schemas[1:])),
        assignments=assignments,
        assignment_partitions=tuple(m.TopicPartition for m in assignment_schemas),
        subscription_readers=tuple(bounded_reader(entity) for entity in subscriptions),
        subscription_writers=tuple(entity_writer(entity) for entity in subscriptions),
        assignment_readers=tuple(bounded_reader(entity) for entity in assignments),
        assignment_writers=tuple(entity_writer(entity) for entity in assignments),
    )


def encode_subscription(subscription: Subscription, version: int = LATEST_VERSION) -> bytes:
    """Fields the chosen version lacks are left out; topics and owned partitions
    are written sorted, as the Java client writes them."""
    _check_version(version)
    fields: dict[str, Any] = {
        "topics": cast(tuple[str, ...], tuple(sorted(subscription.topics))),
        "user_data": subscription.user_data,
    }
    if version >= 1:
        entity = _tables().subscription_partitions[version]
        fields["owned_partitions"] = tuple(
            entity(topic=TopicName(topic), partitions=cast(tuple[i32, ...], tuple(partitions)))
            for topic, partitions in _group_by_topic(sorted(subscription.owned_partitions))
        )
    if version >= 2:
        fields["generation_id"] = i32(subscription.generation_id)
    if version >= 3:
        fields["rack_id"] = subscription.rack_id
    tables = _tables()
    message = tables.subscriptions[version](**fields)
    return _encode(version, tables.subscription_writers[version], message)


def decode_subscription(data: bytes) -> Subscription:
    message = _decode(data, _tables().subscription_readers, "subscription")
    owned = [
        TopicPartition(tp.topic, partition)
        for tp in getattr(message, "owned_partitions", ())
        for partition in tp.partitions
    ]
    rack_id: str | None = getattr(message, "rack_id", None)
    return Subscription(
        topics=list(message.topics),
        user_data=message.user_data,
        owned_partitions=owned,
        generation_id=getattr(message, "generation_id", NO_GENERATION),
        # The Java client treats an empty rack like no rack.
        rack_id=rack_id or None,
    )


def encode_assignment(assignment: Assignment, version: int = LATEST_VERSION) -> bytes:
    """Partitions are grouped by topic in the order topics first appear."""
    _check_version(version)
    tables = _tables()
    entity = tables.assignment_partitions[version]
    by_topic: dict[str, list[int]] = {}
    for topic, partition in assignment.partitions:
        by_topic.setdefault(topic, []).append(partition)
    message = tables.assignments[version](
        assigned_partitions=tuple(
            entity(topic=TopicName(topic), partitions=cast(tuple[i32, ...], tuple(partitions)))
            for topic, partitions in by_topic.items()
        ),
        user_data=assignment.user_data,
    )
    return _encode(version, tables.assignment_writers[version], message)


def decode_assignment(data: bytes) -> Assignment:
    message = _decode(data, _tables().assignment_readers, "assignment")
    return Assignment(
        partitions=[
            TopicPartition(tp.topic, partition)
            for tp in message.assigned_partitions
            for partition in tp.partitions
        ],
        user_data=message.user_data,
    )


def _check_version(version: int) -> None:
    if not 0 <= version <= LATEST_VERSION:
        raise ValueError(f"consumer protocol version {version} is not in 0..{LATEST_VERSION}")


def _encode(version: int, writer: Callable[[io.BytesIO, Any], None], message: object) -> bytes:
    buffer = io.BytesIO()
    buffer.write(_VERSION.pack(version))
    writer(buffer, message)
    return buffer.getvalue()


def _decode(data: bytes, readers: Sequence[Callable[..., Any]], what: str) -> Any:
    if len(data) < _VERSION.size:
        raise ProtocolError(f"consumer protocol {what} of {len(data)} bytes has no version")
    (version,) = _VERSION.unpack_from(data)
    if version < 0:
        raise ProtocolError(f"unsupported consumer protocol {what} version {version}")
    # A newer version only appends fields: read what this version knows.
    version = min(version, LATEST_VERSION)
    try:
        message, _ = readers[version](data, _VERSION.size)
    except Exception as e:  # kio raises several kinds on malformed input
        raise ProtocolError(f"malformed consumer protocol {what} v{version}: {e}") from e
    return message


def _group_by_topic(
    partitions: Iterable[TopicPartition],
) -> list[tuple[str, list[int]]]:
    """Consecutive runs of one topic, in order."""
    runs: list[tuple[str, list[int]]] = []
    for topic, partition in partitions:
        if not runs or runs[-1][0] != topic:
            runs.append((topic, []))
        runs[-1][1].append(partition)
    return runs
