"""ListOffsets: earliest (-2), latest (-1), max timestamp (-3), or by timestamp."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.list_offsets.v7 import ListOffsetsRequest, ListOffsetsResponse
from kio.schema.list_offsets.v7.response import (
    ListOffsetsPartitionResponse,
    ListOffsetsTopicResponse,
)

from kgroups.errors import ErrorCode, KafkaError
from kgroups.handlers.common import NO_THROTTLE
from kgroups.partitions.log import NotInMemory
from kgroups.protocol.types import i32, i64

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.context import RequestContext

LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3
READ_COMMITTED = 1


async def handle(
    broker: BrokerApi, ctx: RequestContext, request: ListOffsetsRequest
) -> ListOffsetsResponse:
    topics = []
    committed = request.isolation_level == READ_COMMITTED
    for topic in request.topics:
        partitions = []
        for p in topic.partitions:
            error = ErrorCode.none
            offset = timestamp = -1
            try:
                try:
                    offset, timestamp = _lookup(
                        broker, topic.name, p.partition_index, p.timestamp, committed
                    )
                except NotInMemory:
                    offset, timestamp = await _lookup_in_home(
                        broker, topic.name, p.partition_index, p.timestamp
                    )
            except KafkaError as e:
                error = e.error_code
            partitions.append(
                ListOffsetsPartitionResponse(
                    partition_index=p.partition_index,
                    error_code=error,
                    timestamp=i64(timestamp),
                    offset=i64(offset),
                    leader_epoch=i32(0 if error == ErrorCode.none else -1),
                )
            )
        topics.append(ListOffsetsTopicResponse(name=topic.name, partitions=tuple(partitions)))
    return ListOffsetsResponse(throttle_time=NO_THROTTLE, topics=tuple(topics))


def _lookup(
    broker: BrokerApi, topic: str, partition: int, timestamp: int, committed: bool
) -> tuple[int, int]:
    log = broker.partitions.log(topic, partition)
    if timestamp == LATEST:
        # read_committed consumers start no further than the last stable offset.
        return (log.last_stable_offset if committed else log.high_watermark), -1
    if timestamp == EARLIEST:
        return log.log_start_offset, -1
    if timestamp == MAX_TIMESTAMP:
        found = log.max_timestamp_offset()
    elif timestamp < 0:
        raise KafkaError(ErrorCode.invalid_request, f"Unsupported timestamp {timestamp}")
    else:
        found = log.offset_for_timestamp(timestamp)
    if found is None:
        return -1, -1
    offset, ts = found
    return offset, ts


async def _lookup_in_home(
    broker: BrokerApi, topic: str, partition: int, timestamp: int
) -> tuple[int, int]:
    """A lookup by timestamp the log cannot answer from memory (cluster mode:
    the store holds the batches)."""
    if timestamp == MAX_TIMESTAMP:
        found = await broker.partitions.max_timestamp_offset(topic, partition)
    else:
        found = await broker.partitions.offset_for_timestamp(topic, partition, timestamp)
    return (-1, -1) if found is None else (found.offset, found.timestamp)
