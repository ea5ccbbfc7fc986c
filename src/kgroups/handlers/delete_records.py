"""DeleteRecords: move partitions' log start forward, as Kafka's
ReplicaManager.deleteRecords and Partition.deleteRecordsOnLeader do.

Each partition is answered with its new low watermark (the log start) once the
move is durable: checkpointed on a broker alone, committed to the store in a
cluster. Offset -1 means the high watermark. Clients send each partition to
its leader; elsewhere it is NOT_LEADER_OR_FOLLOWER. Internal topics are
refused (INVALID_TOPIC_EXCEPTION), and so are topics whose cleanup.policy
lacks ``delete`` (POLICY_VIOLATION).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.delete_records.v2 import DeleteRecordsRequest, DeleteRecordsResponse
from kio.schema.delete_records.v2.response import (
    DeleteRecordsPartitionResult,
    DeleteRecordsTopicResult,
)

from kgroups.errors import ErrorCode, KafkaError
from kgroups.handlers.common import NO_THROTTLE
from kgroups.protocol.types import i32, i64
from kgroups.topics.placement import INTERNAL_TOPICS

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.context import RequestContext

HIGH_WATERMARK = -1
INVALID_LOW_WATERMARK = -1

TopicPartition = tuple[str, int]


async def handle(
    broker: BrokerApi, ctx: RequestContext, request: DeleteRecordsRequest
) -> DeleteRecordsResponse:
    outcomes: dict[TopicPartition, int | KafkaError] = {}
    wanted: dict[TopicPartition, int] = {}
    for topic in request.topics:
        for p in topic.partitions:
            tp = (topic.name, p.partition_index)
            try:
                wanted[tp] = _offset(broker, topic.name, p.partition_index, p.offset)
            except KafkaError as e:
                outcomes[tp] = e
    if wanted:
        outcomes |= await broker.partitions.delete_records(wanted)
    return DeleteRecordsResponse(
        throttle_time=NO_THROTTLE,
        topics=tuple(
            DeleteRecordsTopicResult(
                name=topic.name,
                partitions=tuple(
                    _result(p.partition_index, outcomes[(topic.name, p.partition_index)])
                    for p in topic.partitions
                ),
            )
            for topic in request.topics
        ),
    )


def _offset(broker: BrokerApi, topic: str, partition: int, offset: int) -> int:
    """The offset to move the log start to, if the partition may be cut there."""
    if not broker.topics.partition_exists(topic, partition):
        raise KafkaError(
            ErrorCode.unknown_topic_or_partition,
            f"This server does not host this topic-partition: {topic}-{partition}",
        )
    if topic in INTERNAL_TOPICS:
        raise KafkaError(
            ErrorCode.invalid_topic_exception, f"Cannot delete records of internal topic {topic}"
        )
    plog = broker.partitions.log(topic, partition)  # NOT_LEADER_OR_FOLLOWER if not led here
    if not plog.config.delete:
        raise KafkaError(
            ErrorCode.policy_violation,
            f"Records of partition {topic}-{partition} can not be deleted due to the "
            "configured policy",
        )
    if offset == HIGH_WATERMARK:
        return plog.high_watermark
    if offset < 0:
        raise KafkaError(
            ErrorCode.offset_out_of_range,
            f"The offset {offset} for partition {topic}-{partition} is not valid",
        )
    return offset


def _result(partition: int, outcome: int | KafkaError) -> DeleteRecordsPartitionResult:
    if isinstance(outcome, KafkaError):
        code, low = outcome.error_code, INVALID_LOW_WATERMARK
    else:
        code, low = ErrorCode.none, outcome
    return DeleteRecordsPartitionResult(
        partition_index=i32(partition), low_watermark=i64(low), error_code=code
    )
