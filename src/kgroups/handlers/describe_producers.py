"""DescribeProducers: the active idempotent and transactional producers of
partitions led here, from each partition's producer state (what
`kafka-transactions.sh describe-producers` shows).

A partition led elsewhere is NOT_LEADER_OR_FOLLOWER (the admin client asks
its leader), an unknown topic or partition UNKNOWN_TOPIC_OR_PARTITION, an
illegal topic name INVALID_TOPIC_EXCEPTION, each per partition as Kafka
answers them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.describe_producers.v0 import DescribeProducersRequest, DescribeProducersResponse
from kio.schema.describe_producers.v0.response import (
    PartitionResponse,
    ProducerState,
    TopicResponse,
)

from kgroups.errors import ErrorCode, KafkaError
from kgroups.handlers.common import NO_THROTTLE
from kgroups.partitions.producer_state import ProducerStateManager
from kgroups.protocol.types import ProducerId, i32, i64
from kgroups.topics.names import validate_topic_name

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.context import RequestContext


async def handle(
    broker: BrokerApi, ctx: RequestContext, request: DescribeProducersRequest
) -> DescribeProducersResponse:
    if broker.cluster is not None and any(t.name not in broker.topics for t in request.topics):
        await broker.cluster.refresh()  # created through another broker?
    return DescribeProducersResponse(
        throttle_time=NO_THROTTLE,
        topics=tuple(
            TopicResponse(
                name=t.name,
                partitions=tuple(_partition(broker, t.name, p) for p in t.partition_indexes),
            )
            for t in request.topics
        ),
    )


def _partition(broker: BrokerApi, topic: str, partition: int) -> PartitionResponse:
    try:
        validate_topic_name(topic)
        if topic not in broker.topics:
            raise KafkaError(ErrorCode.unknown_topic_or_partition, None)
        producers = broker.partitions.log(topic, partition).producers
    except KafkaError as e:
        return refused(partition, e.error_code, e.message)
    return PartitionResponse(
        partition_index=i32(partition),
        error_code=ErrorCode.none,
        error_message=None,
        active_producers=active_producers(producers),
    )


def refused(partition: int, error: ErrorCode, message: str | None = None) -> PartitionResponse:
    return PartitionResponse(
        partition_index=i32(partition),
        error_code=error,
        error_message=message,
        active_producers=(),
    )


def active_producers(producers: ProducerStateManager) -> tuple[ProducerState, ...]:
    return tuple(
        ProducerState(
            producer_id=ProducerId(entry.producer_id),
            producer_epoch=i32(entry.epoch),
            last_sequence=i32(entry.last_seq),
            last_timestamp=i64(entry.last_timestamp),
            coordinator_epoch=i32(entry.coordinator_epoch),
            current_txn_start_offset=i64(entry.txn_first_offset),
        )
        for entry in sorted(producers.producers.values(), key=lambda e: e.producer_id)
    )
