"""ListOffsets: earliest (-2), latest (-1), max timestamp (-3), or by timestamp.

Each partition's current leader epoch is checked first (v4+), and the answer
carries the leader epoch of what was found, as Kafka's does: latest, the
partition's own; earliest, the epoch at the log start; by time, the epoch of
the batch holding the record; -1 when nothing was found.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.list_offsets.v7 import ListOffsetsRequest, ListOffsetsResponse
from kio.schema.list_offsets.v7.request import ListOffsetsPartition
from kio.schema.list_offsets.v7.response import (
    ListOffsetsPartitionResponse,
    ListOffsetsTopicResponse,
)

from kgroups.errors import ErrorCode, KafkaError
from kgroups.handlers.common import NO_THROTTLE
from kgroups.handlers.current_leader_epoch import check_current_leader_epoch
from kgroups.partitions.log import NotInMemory, TimestampOffset
from kgroups.protocol.types import i32, i64

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.context import RequestContext

LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3
READ_COMMITTED = 1
_NOT_FOUND = TimestampOffset(-1, -1)


async def handle(
    broker: BrokerApi, ctx: RequestContext, request: ListOffsetsRequest
) -> ListOffsetsResponse:
    topics = []
    committed = request.isolation_level == READ_COMMITTED
    for topic in request.topics:
        partitions = []
        for p in topic.partitions:
            error = ErrorCode.none
            found = _NOT_FOUND
            try:
                try:
                    found = _lookup(broker, topic.name, p, committed)
                except NotInMemory:
                    found = await _lookup_in_home(broker, topic.name, p)
            except KafkaError as e:
                error = e.error_code
            partitions.append(
                ListOffsetsPartitionResponse(
                    partition_index=p.partition_index,
                    error_code=error,
                    timestamp=i64(found.timestamp),
                    offset=i64(found.offset),
                    leader_epoch=i32(found.leader_epoch),
                )
            )
        topics.append(ListOffsetsTopicResponse(name=topic.name, partitions=tuple(partitions)))
    return ListOffsetsResponse(throttle_time=NO_THROTTLE, topics=tuple(topics))


def _lookup(
    broker: BrokerApi, topic: str, p: ListOffsetsPartition, committed: bool
) -> TimestampOffset:
    log = broker.partitions.log(topic, p.partition_index)
    check_current_leader_epoch(log, p.current_leader_epoch)
    timestamp = p.timestamp
    if timestamp == LATEST:
        # read_committed consumers start no further than the last stable offset.
        offset = log.last_stable_offset if committed else log.high_watermark
        return TimestampOffset(offset, -1, log.leader_epoch)
    if timestamp == EARLIEST:
        return TimestampOffset(log.log_start_offset, -1, log.log_start_epoch())
    if timestamp == MAX_TIMESTAMP:
        found = log.max_timestamp_offset()
    elif timestamp < 0:
        raise KafkaError(ErrorCode.invalid_request, f"Unsupported timestamp {timestamp}")
    else:
        found = log.offset_for_timestamp(timestamp)
    return _NOT_FOUND if found is None else found


async def _lookup_in_home(
    broker: BrokerApi, topic: str, p: ListOffsetsPartition
) -> TimestampOffset:
    """A lookup the log cannot answer from memory (cluster mode: the store holds
    the batches)."""
    home = broker.partitions
    partition, timestamp = p.partition_index, p.timestamp
    if timestamp == EARLIEST:
        start = home.log(topic, partition).log_start_offset
        return TimestampOffset(start, -1, await home.log_start_epoch(topic, partition))
    if timestamp == MAX_TIMESTAMP:
        found = await home.max_timestamp_offset(topic, partition)
    else:
        found = await home.offset_for_timestamp(topic, partition, timestamp)
    return _NOT_FOUND if found is None else found
