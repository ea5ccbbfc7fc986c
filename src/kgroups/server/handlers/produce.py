"""Produce: validate and append record batches, acknowledge per partition.

An acknowledgement (acks=1 or -1; a single broker is its own ISR) is sent after
the batch is written to the operating system, so it survives kill -9 of the
broker; fsync follows the flush policy (`log.flush.interval.*`).
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, cast

from kio.schema.produce.v9 import ProduceRequest, ProduceResponse
from kio.schema.produce.v9.response import PartitionProduceResponse, TopicProduceResponse
from kio.static.primitive import TZAware

from kgroups.cluster.placement import INTERNAL_TOPICS
from kgroups.errors import ErrorCode, KafkaError
from kgroups.protocol.types import i32, i64
from kgroups.server.handlers.common import NO_THROTTLE

if TYPE_CHECKING:
    from kgroups.server.broker import Broker
    from kgroups.server.context import RequestContext


async def handle(
    broker: Broker, ctx: RequestContext, request: ProduceRequest
) -> ProduceResponse | None:
    request_error = ErrorCode.none
    message: str | None = None
    if request.acks not in (0, 1, -1):
        request_error = ErrorCode.invalid_required_acks
    elif request.transactional_id is not None:
        request_error = ErrorCode.transactional_id_authorization_failed
        message = "kgroups does not support transactions"
    now = broker.clock.now_ms()
    topics = []
    for topic in request.topic_data:
        partitions = []
        for data in topic.partition_data:
            if request_error != ErrorCode.none:
                partitions.append(_failed(data.index, request_error, message))
                continue
            partitions.append(_append(broker, topic.name, data.index, data.records, now))
        topics.append(TopicProduceResponse(name=topic.name, partition_responses=tuple(partitions)))
    if request.acks == 0:
        return None
    return ProduceResponse(responses=tuple(topics), throttle_time=NO_THROTTLE)


def _append(
    broker: Broker, topic: str, partition: int, records: bytes | None, now: int
) -> PartitionProduceResponse:
    try:
        if topic in INTERNAL_TOPICS:
            raise KafkaError(
                ErrorCode.invalid_topic_exception, f"Cannot append to internal topic {topic}"
            )
        log = broker.log(topic, partition)
        if not records:
            raise KafkaError(ErrorCode.corrupt_message, "Produce request without records")
        result = log.append(records, now)
    except KafkaError as e:
        return _failed(partition, e.error_code, e.message)
    broker.appended(topic, partition, log)
    append_time = (
        None
        if result.log_append_time < 0
        else cast(
            TZAware,
            datetime.datetime.fromtimestamp(result.log_append_time / 1000, datetime.UTC),
        )
    )
    return PartitionProduceResponse(
        index=i32(partition),
        error_code=ErrorCode.none,
        base_offset=i64(result.base_offset),
        log_append_time=append_time,
        log_start_offset=i64(result.log_start_offset),
        record_errors=(),
        error_message=None,
    )


def _failed(partition: int, error: ErrorCode, message: str | None) -> PartitionProduceResponse:
    return PartitionProduceResponse(
        index=i32(partition),
        error_code=error,
        base_offset=i64(-1),
        log_append_time=None,
        log_start_offset=i64(-1),
        record_errors=(),
        error_message=message,
    )
