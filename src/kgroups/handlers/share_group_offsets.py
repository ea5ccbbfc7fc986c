"""A share group's start offsets for admins (KIP-932).

DescribeShareGroupOffsets (v1 adds the lag, KIP-1226): each share
partition's start offset and lag, from the broker's share partitions, or
else from its state at the share coordinator (ReadShareGroupStateSummary,
in process or at the broker leading its ``__share_group_state`` partition).

AlterShareGroupOffsets sets start offsets, DeleteShareGroupOffsets forgets a
topic's share partitions (the next fetch starts them where
``share.auto.offset.reset`` says); both only on an empty share group
(NON_EMPTY_GROUP otherwise), a missing one made by AlterShareGroupOffsets,
and both move the group epoch on, as Kafka does. A group of another kind is
GROUP_ID_NOT_FOUND, ``Group <id> is not a share group.``, for the whole
request and each of its partitions.

A group that is not a share group answers GROUP_ID_NOT_FOUND (``Group <id>
is not a share group.`` or ``Group <id> not found.``), as the coordinator's
ShareGroupDescribe would. Asked for every topic (``topics`` null), the
partitions with state are answered; a partition named without state has
start offset -1. The lag is the records between the start offset and the
high watermark not yet acknowledged or archived (-1 when not known).
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from typing import TYPE_CHECKING

from kio.schema.alter_share_group_offsets.v0 import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsResponse,
)
from kio.schema.alter_share_group_offsets.v0.response import (
    AlterShareGroupOffsetsResponsePartition,
    AlterShareGroupOffsetsResponseTopic,
)
from kio.schema.delete_share_group_offsets.v0 import (
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsResponse,
)
from kio.schema.delete_share_group_offsets.v0.response import DeleteShareGroupOffsetsResponseTopic
from kio.schema.describe_share_group_offsets.v1 import (
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse,
)
from kio.schema.describe_share_group_offsets.v1.response import (
    DescribeShareGroupOffsetsResponseGroup,
    DescribeShareGroupOffsetsResponsePartition,
    DescribeShareGroupOffsetsResponseTopic,
)
from kio.schema.share_group_describe.v1 import ShareGroupDescribeRequest

from kgroups.coordinator.share.records import ShareStatePlan
from kgroups.errors import ErrorCode, KafkaError
from kgroups.handlers.common import NO_THROTTLE
from kgroups.handlers.share_group_state import delete_topics_state
from kgroups.protocol.types import GroupId, TopicName, i32, i64
from kgroups.share_partitions.state_records import StateBatch
from kgroups.share_partitions.states import RecordState

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.context import RequestContext

_UNINITIALIZED = -1


async def describe(
    broker: BrokerApi, ctx: RequestContext, request: DescribeShareGroupOffsetsRequest
) -> DescribeShareGroupOffsetsResponse:
    groups = []
    for group in request.groups:
        error, message = await _share_group_error(broker, ctx, group.group_id)
        if error is not ErrorCode.none:
            groups.append(
                DescribeShareGroupOffsetsResponseGroup(
                    group_id=group.group_id, topics=(), error_code=error, error_message=message
                )
            )
            continue
        wanted = (
            _stored_partitions(broker, group.group_id)
            | await _initialized_partitions(broker, ctx, group.group_id)
            if group.topics is None
            else {(str(t.topic_name), int(p)) for t in group.topics for p in t.partitions}
        )
        groups.append(
            DescribeShareGroupOffsetsResponseGroup(
                group_id=group.group_id,
                topics=await _topics(broker, group.group_id, wanted),
                error_code=ErrorCode.none,
            )
        )
    return DescribeShareGroupOffsetsResponse(throttle_time=NO_THROTTLE, groups=tuple(groups))


async def _share_group_error(
    broker: BrokerApi, ctx: RequestContext, group_id: str
) -> tuple[ErrorCode, str | None]:
    if not group_id:
        return ErrorCode.invalid_group_id, None
    describe = ShareGroupDescribeRequest(
        group_ids=(GroupId(group_id),), include_authorized_operations=False
    )
    try:
        response = await broker.coordinator.call(
            group_id, ctx, lambda shard, c, now: shard.share_group_describe(describe, c, now)
        )
    except KafkaError as e:
        return e.error_code, None
    (described,) = response.groups
    return described.error_code, described.error_message


async def _initialized_partitions(
    broker: BrokerApi, ctx: RequestContext, group_id: str
) -> set[tuple[str, int]]:
    """The partitions whose share state the group coordinator initialized
    (record 15): in a cluster, most share partitions live at other brokers."""
    try:
        plan: ShareStatePlan = await broker.coordinator.call(
            group_id, ctx, lambda shard, c, now: shard.share_state_partitions(group_id, c, now)
        )
    except KafkaError:
        return set()
    out: set[tuple[str, int]] = set()
    for t in plan.partitions:
        topic = broker.topics.by_id(t.topic_id)
        if topic is not None:
            out.update((topic.name, p) for p in t.partitions)
    return out


def _stored_partitions(broker: BrokerApi, group_id: str) -> set[tuple[str, int]]:
    manager = broker.share_partitions
    keys = [key for key, _sp in manager.of_group(group_id)]
    keys += [key for key in manager.stored if key[0] == group_id]
    out: set[tuple[str, int]] = set()
    for _group, topic_id, partition in keys:
        topic = broker.topics.by_id(topic_id)
        if topic is not None:
            out.add((topic.name, partition))
    return out


async def _topics(
    broker: BrokerApi, group_id: str, wanted: set[tuple[str, int]]
) -> tuple[DescribeShareGroupOffsetsResponseTopic, ...]:
    by_topic: dict[str, list[int]] = {}
    for name, partition in sorted(wanted):
        by_topic.setdefault(name, []).append(partition)
    topics = []
    for name, partitions in by_topic.items():
        topic = broker.topics.get(name)
        topics.append(
            DescribeShareGroupOffsetsResponseTopic(
                topic_name=TopicName(name),
                topic_id=None if topic is None else topic.topic_id,
                partitions=tuple(
                    await asyncio.gather(
                        *(
                            _partition(
                                broker, group_id, None if topic is None else topic.topic_id, name, p
                            )
                            for p in partitions
                        )
                    )
                ),
            )
        )
    return tuple(topics)


async def _partition(
    broker: BrokerApi, group_id: str, topic_id: uuid.UUID | None, name: str, partition: int
) -> DescribeShareGroupOffsetsResponsePartition:
    if topic_id is None or not broker.topics.partition_exists(name, partition):
        return DescribeShareGroupOffsetsResponsePartition(
            partition_index=i32(partition),
            start_offset=i64(_UNINITIALIZED),
            leader_epoch=i32(-1),
            error_code=ErrorCode.unknown_topic_or_partition,
            error_message="This server does not host this topic-partition.",
        )
    manager = broker.share_partitions
    key = (group_id, topic_id, partition)
    start, done = _UNINITIALIZED, 0
    sp = manager.get(key)
    if sp is not None:
        start = sp.start_offset
        done = sp.tally.delivery_complete
    elif (stored := manager.stored.get(key)) is not None:
        start = stored[0]
        done = _done_in(stored[1], start)
    else:
        summary = await broker.share_state.persister.summary(key)
        if summary.error is ErrorCode.none and summary.start_offset != _UNINITIALIZED:
            start = summary.start_offset
            done = max(0, summary.delivery_complete_count)
    lag = -1
    if start != _UNINITIALIZED:
        high_watermark = await _high_watermark(broker, name, partition)
        if high_watermark is not None:
            lag = max(0, high_watermark - start - done)
    return DescribeShareGroupOffsetsResponsePartition(
        partition_index=i32(partition),
        start_offset=i64(start),
        leader_epoch=i32(-1 if start == _UNINITIALIZED else 0),
        lag=i64(lag),
        error_code=ErrorCode.none,
    )


def _done_in(batches: tuple[StateBatch, ...], start: int) -> int:
    final = (int(RecordState.ACKNOWLEDGED), int(RecordState.ARCHIVED))
    return sum(
        b.last_offset - max(b.first_offset, start) + 1
        for b in batches
        if b.delivery_state in final and b.last_offset >= start
    )


async def alter(
    broker: BrokerApi, ctx: RequestContext, request: AlterShareGroupOffsetsRequest
) -> AlterShareGroupOffsetsResponse:
    group_id = request.group_id
    answer = await _change_allowed(broker, ctx, group_id, create=True)
    assert isinstance(answer, AlterShareGroupOffsetsResponse)
    topics = []
    for t in request.topics:
        topic = broker.topics.get(t.topic_name)
        partitions = []
        for p in t.partitions:
            error, message = answer.error_code, answer.error_message
            if error is ErrorCode.none and (
                topic is None or not broker.topics.partition_exists(topic.name, p.partition_index)
            ):
                error, message = ErrorCode.unknown_topic_or_partition, _NOT_HOSTED
            if error is ErrorCode.none and topic is not None:
                key = (group_id, topic.topic_id, int(p.partition_index))
                broker.share_partitions.set_start(key, int(p.start_offset))
            partitions.append(
                AlterShareGroupOffsetsResponsePartition(
                    partition_index=p.partition_index, error_code=error, error_message=message
                )
            )
        topics.append(
            AlterShareGroupOffsetsResponseTopic(
                topic_name=t.topic_name,
                topic_id=None if topic is None else topic.topic_id,
                partitions=tuple(partitions),
            )
        )
    stored = await broker.share_state.persist_changes()
    return dataclasses.replace(
        answer,
        error_code=answer.error_code if stored is ErrorCode.none else stored,
        responses=tuple(topics),
    )


async def delete(
    broker: BrokerApi, ctx: RequestContext, request: DeleteShareGroupOffsetsRequest
) -> DeleteShareGroupOffsetsResponse:
    group_id = request.group_id
    answer = await _change_allowed(broker, ctx, group_id, create=False)
    assert isinstance(answer, DeleteShareGroupOffsetsResponse)
    topics = []
    for t in request.topics:
        topic = broker.topics.get(t.topic_name)
        error, message = answer.error_code, answer.error_message
        if error is ErrorCode.none and topic is None:
            error, message = ErrorCode.unknown_topic_or_partition, _NOT_HOSTED
        if error is ErrorCode.none and topic is not None:
            broker.share_partitions.forget_topic(group_id, topic.topic_id)
        topics.append(
            DeleteShareGroupOffsetsResponseTopic(
                topic_name=t.topic_name,
                topic_id=None if topic is None else topic.topic_id,
                error_code=error,
                error_message=message,
            )
        )
    stored = await broker.share_state.persist_changes()
    if answer.error_code is ErrorCode.none and stored is ErrorCode.none:
        forgotten = [
            topic.topic_id
            for t in request.topics
            if (topic := broker.topics.get(t.topic_name)) is not None
        ]
        stored = await delete_topics_state(broker, ctx, group_id, forgotten)
    return dataclasses.replace(
        answer,
        error_code=answer.error_code if stored is ErrorCode.none else stored,
        responses=tuple(topics),
    )


_NOT_HOSTED = "This server does not host this topic-partition."


async def _change_allowed(
    broker: BrokerApi, ctx: RequestContext, group_id: str, create: bool
) -> AlterShareGroupOffsetsResponse | DeleteShareGroupOffsetsResponse:
    """The coordinator's word on the group (its epoch moved on if allowed)."""
    kind = AlterShareGroupOffsetsResponse if create else DeleteShareGroupOffsetsResponse
    if not group_id:
        return kind(throttle_time=NO_THROTTLE, error_code=ErrorCode.invalid_group_id, responses=())
    try:
        answer: (
            AlterShareGroupOffsetsResponse | DeleteShareGroupOffsetsResponse
        ) = await broker.coordinator.call(
            group_id,
            ctx,
            lambda shard, c, now: shard.share_group_offsets_change(group_id, create, c, now),
        )
    except KafkaError as e:
        return kind(throttle_time=NO_THROTTLE, error_code=e.error_code, responses=())
    return answer


async def _high_watermark(broker: BrokerApi, name: str, partition: int) -> int | None:
    """The partition's high watermark: this broker's if it leads it, else, in
    a cluster, the store's (another broker leads it); None if unknown."""
    try:
        return broker.partitions.log(name, partition).high_watermark
    except KafkaError:
        pass
    if broker.cluster is None:
        return None
    try:
        return await broker.cluster.high_watermark(name, partition)
    except KafkaError:
        return None
