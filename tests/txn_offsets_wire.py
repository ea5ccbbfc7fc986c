"""Raw TxnOffsetCommit and OffsetFetch requests, for the tests of transactional
offset commits on the wire (blocking sockets, any thread)."""

from __future__ import annotations

import importlib
import socket
from datetime import timedelta
from typing import Any

from kio.schema.create_topics.v7 import CreateTopicsRequest
from kio.schema.create_topics.v7.request import CreatableTopic
from kio.schema.find_coordinator.v4 import FindCoordinatorRequest

from kgroups.errors import ErrorCode
from kgroups.protocol.types import GroupId, TopicName, i8, i16, i32, i64
from kgroups.topics.placement import partition_for_group

from raw_wire import call


def schema(api: str, version: int, name: str) -> Any:
    return getattr(importlib.import_module(f"kio.schema.{api}.v{version}.request"), name)


def create_topic(s: socket.socket, name: str, partitions: int) -> None:
    created, _ = call(
        s,
        CreateTopicsRequest(
            topics=(
                CreatableTopic(
                    name=TopicName(name),
                    num_partitions=i32(partitions),
                    replication_factor=i16(1),
                    assignments=(),
                    configs=(),
                ),
            ),
            timeout=timedelta(seconds=10),
            validate_only=False,
        ),
    )
    assert created.topics[0].error_code is ErrorCode.none


def find_coordinator(s: socket.socket, group: str) -> None:
    found, _ = call(s, FindCoordinatorRequest(key_type=i8(0), coordinator_keys=(GroupId(group),)))
    assert found.coordinators[0].error_code is ErrorCode.none


def offsets_partition(group: str, partitions: int = 5) -> int:
    return partition_for_group(group, partitions)


def txn_commit(
    s: socket.socket,
    group: str,
    offsets: dict[tuple[str, int], int],
    *,
    producer_id: int,
    version: int = 5,
    member_id: str = "",
    generation: int = -1,
) -> dict[tuple[str, int], ErrorCode]:
    partition_type = schema("txn_offset_commit", version, "TxnOffsetCommitRequestPartition")
    topic_type = schema("txn_offset_commit", version, "TxnOffsetCommitRequestTopic")
    request_type = schema("txn_offset_commit", version, "TxnOffsetCommitRequest")
    by_topic: dict[str, list[Any]] = {}
    for (topic, partition), offset in offsets.items():
        fields: dict[str, Any] = {
            "partition_index": i32(partition),
            "committed_offset": i64(offset),
            "committed_metadata": "m",
        }
        if version >= 2:
            fields["committed_leader_epoch"] = i32(-1)
        by_topic.setdefault(topic, []).append(partition_type(**fields))
    fields = {
        "transactional_id": "tx",
        "group_id": GroupId(group),
        "producer_id": producer_id,
        "producer_epoch": i16(0),
        "topics": tuple(
            topic_type(name=TopicName(t), partitions=tuple(ps)) for t, ps in by_topic.items()
        ),
    }
    if version >= 3:
        fields.update(generation_id=i32(generation), member_id=member_id, group_instance_id=None)
    response, _ = call(s, request_type(**fields))
    return {
        (t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions
    }


def fetch(
    s: socket.socket,
    group: str,
    partitions: dict[str, list[int]],
    *,
    version: int = 9,
    require_stable: bool = False,
) -> tuple[ErrorCode, dict[tuple[str, int], tuple[int, ErrorCode]]]:
    """(group error, {(topic, partition): (offset, error)})."""
    if version >= 8:
        group_type = schema("offset_fetch", version, "OffsetFetchRequestGroup")
        topics_type = schema("offset_fetch", version, "OffsetFetchRequestTopics")
        extra = {"member_id": None, "member_epoch": i32(-1)} if version >= 9 else {}
        request = schema("offset_fetch", version, "OffsetFetchRequest")(
            groups=(
                group_type(
                    group_id=GroupId(group),
                    topics=tuple(
                        topics_type(name=TopicName(t), partition_indexes=tuple(i32(p) for p in ps))
                        for t, ps in partitions.items()
                    ),
                    **extra,
                ),
            ),
            require_stable=require_stable,
        )
        response, _ = call(s, request)
        (entry,) = response.groups
        return entry.error_code, {
            (t.name, p.partition_index): (p.committed_offset, p.error_code)
            for t in entry.topics
            for p in t.partitions
        }
    topic_type = schema("offset_fetch", version, "OffsetFetchRequestTopic")
    extra = {"require_stable": require_stable} if version >= 7 else {}
    request = schema("offset_fetch", version, "OffsetFetchRequest")(
        group_id=GroupId(group),
        topics=tuple(
            topic_type(name=TopicName(t), partition_indexes=tuple(i32(p) for p in ps))
            for t, ps in partitions.items()
        ),
        **extra,
    )
    response, _ = call(s, request)
    return response.error_code, {
        (t.name, p.partition_index): (p.committed_offset, p.error_code)
        for t in response.topics
        for p in t.partitions
    }
