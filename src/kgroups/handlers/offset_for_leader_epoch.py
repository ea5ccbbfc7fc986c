"""OffsetForLeaderEpoch (KIP-320): where a leader epoch ends, so that a
consumer can tell whether the log it read was cut back under it after a
change of leader.

For each partition: its current leader epoch checked, then the largest epoch
up to the asked one that the log knows, and the offset where that epoch ends
(the log end for the partition's own epoch): see ``partitions/leader_epochs``.
A partition not led here answers as Fetch does (UNKNOWN_TOPIC_OR_PARTITION,
NOT_LEADER_OR_FOLLOWER). Brokers send it to their leaders too, with their id as
``replica_id``; kgroups has no followers, and answers every caller alike, as
Kafka does from the leader.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.offset_for_leader_epoch.v4 import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
)
from kio.schema.offset_for_leader_epoch.v4.request import OffsetForLeaderPartition
from kio.schema.offset_for_leader_epoch.v4.response import (
    EpochEndOffset,
    OffsetForLeaderTopicResult,
)

from kgroups.errors import ErrorCode, KafkaError
from kgroups.handlers.common import NO_THROTTLE
from kgroups.handlers.current_leader_epoch import check_current_leader_epoch
from kgroups.partitions.log import NotInMemory
from kgroups.protocol.types import i32, i64

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.context import RequestContext


async def handle(
    broker: BrokerApi, ctx: RequestContext, request: OffsetForLeaderEpochRequest
) -> OffsetForLeaderEpochResponse:
    topics = []
    for topic in request.topics:
        partitions = [await _answer(broker, topic.topic, p) for p in topic.partitions]
        topics.append(OffsetForLeaderTopicResult(topic=topic.topic, partitions=tuple(partitions)))
    return OffsetForLeaderEpochResponse(throttle_time=NO_THROTTLE, topics=tuple(topics))


async def _answer(broker: BrokerApi, topic: str, p: OffsetForLeaderPartition) -> EpochEndOffset:
    try:
        log = broker.partitions.log(topic, p.partition)
        check_current_leader_epoch(log, p.current_leader_epoch)
        try:
            found = log.end_offset_for_epoch(p.leader_epoch)
        except NotInMemory:
            found = await broker.partitions.end_offset_for_epoch(topic, p.partition, p.leader_epoch)
    except KafkaError as e:
        return EpochEndOffset(error_code=e.error_code, partition=p.partition)
    return EpochEndOffset(
        error_code=ErrorCode.none,
        partition=p.partition,
        leader_epoch=i32(found.leader_epoch),
        end_offset=i64(found.end_offset),
    )
