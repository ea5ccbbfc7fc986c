"""DescribeShareGroupOffsets (KIP-932; v1 adds the lag, KIP-1226): each share
partition's start offset and lag, from the broker's share partitions (and
the state stored in ``__share_group_state`` that none has taken up yet).

A group that is not a share group answers GROUP_ID_NOT_FOUND (``Group <id>
is not a share group.`` or ``Group <id> not found.``), as the coordinator's
ShareGroupDescribe would. Asked for every topic (``topics`` null), the
partitions with state are answered; a partition named without state has
start offset -1. The lag is the records between the start offset and the
high watermark not yet acknowledged or archived (-1 when not known).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

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

from kgroups.errors import ErrorCode, KafkaError
from kgroups.handlers.common import NO_THROTTLE
from kgroups.protocol.types import GroupId, TopicName, i32, i64
from kgroups.share_partitions.state_records import StateBatch
from kgroups.share_partitions.states import RecordState

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.context import RequestContext

_UNINITIALIZED = -1


async def handle(
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
            if group.topics is None
            else {(str(t.topic_name), int(p)) for t in group.topics for p in t.partitions}
        )
        groups.append(
            DescribeShareGroupOffsetsResponseGroup(
                group_id=group.group_id,
                topics=_topics(broker, group.group_id, wanted),
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


def _topics(
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
                    _partition(broker, group_id, None if topic is None else topic.topic_id, name, p)
                    for p in partitions
                ),
            )
        )
    return tuple(topics)


def _partition(
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
        done = sum(
            last - max(first, start) + 1
            for batch in sp.batches()
            for first, last, delivery in batch.deliveries()
            if delivery.state.final and last >= start
        )
    elif (stored := manager.stored.get(key)) is not None:
        start = stored[0]
        done = _done_in(stored[1], start)
    lag = -1
    if start != _UNINITIALIZED:
        try:
            lag = max(0, broker.partitions.log(name, partition).high_watermark - start - done)
        except KafkaError:
            lag = -1
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
