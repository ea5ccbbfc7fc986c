"""CreateTopics, with Kafka's checks and error codes."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from kio.schema.create_topics.v7 import CreateTopicsRequest, CreateTopicsResponse
from kio.schema.create_topics.v7.request import CreatableTopic
from kio.schema.create_topics.v7.response import CreatableTopicConfigs, CreatableTopicResult

from kgroups.errors import ErrorCode, KafkaError
from kgroups.handlers.common import NO_THROTTLE
from kgroups.handlers.topic_changes import NewTopic, create_topics
from kgroups.protocol.types import TopicName, i8, i16, i32
from kgroups.topics.names import Topic
from kgroups.topics.placement import INTERNAL_TOPICS

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.context import RequestContext

# DescribeConfigs config sources.
TOPIC_CONFIG = 1
DEFAULT_CONFIG = 5


async def handle(
    broker: BrokerApi, ctx: RequestContext, request: CreateTopicsRequest
) -> CreateTopicsResponse:
    counts = Counter(t.name for t in request.topics)
    results: list[CreatableTopicResult | NewTopic] = []
    for topic in request.topics:
        if counts[topic.name] > 1:
            results.append(_error(topic.name, ErrorCode.invalid_request, "Duplicate topic name."))
            continue
        try:
            results.append(_parse(broker, topic))
        except KafkaError as e:
            results.append(_error(topic.name, e.error_code, e.message))
    wanted = [r for r in results if isinstance(r, NewTopic)]
    created = iter(await create_topics(broker, wanted, validate_only=request.validate_only))
    return CreateTopicsResponse(
        throttle_time=NO_THROTTLE,
        topics=tuple(
            _result(broker, r, next(created)) if isinstance(r, NewTopic) else r for r in results
        ),
    )


def _parse(broker: BrokerApi, topic: CreatableTopic) -> NewTopic:
    if topic.name in INTERNAL_TOPICS and broker.topics.get(topic.name) is None:
        # Its coordinator creates it with offsets.topic.* or transaction.state.log.*:
        # a client's partition count or retention would cost every group its
        # offsets, or strand open transactions.
        raise KafkaError(
            ErrorCode.invalid_request,
            f"Creation of internal topic {topic.name} is prohibited; the broker creates it.",
        )
    if topic.replication_factor not in (-1, 1) and not topic.assignments:
        raise KafkaError(
            ErrorCode.invalid_replication_factor,
            f"Replication factor: {topic.replication_factor} larger than available brokers: 1.",
        )
    partitions: int | None = topic.num_partitions
    if topic.assignments:
        if topic.num_partitions != -1 or topic.replication_factor != -1:
            raise KafkaError(
                ErrorCode.invalid_request,
                "Both numPartitions or replicationFactor and replicasAssignments were set.",
            )
        indexes = sorted(a.partition_index for a in topic.assignments)
        if indexes != list(range(len(indexes))):
            raise KafkaError(
                ErrorCode.invalid_replica_assignment, "Partitions must be numbered from 0."
            )
        for a in topic.assignments:
            if list(a.broker_ids) != [broker.broker_id]:
                raise KafkaError(
                    ErrorCode.invalid_replica_assignment,
                    f"Replica assignment {list(a.broker_ids)} is not this broker's only id.",
                )
        partitions = len(indexes)
    elif partitions == -1:
        partitions = None
    elif partitions is not None and partitions <= 0:
        raise KafkaError(
            ErrorCode.invalid_partitions, "Number of partitions must be larger than 0."
        )
    overrides: dict[str, str] = {}
    for c in topic.configs:
        if c.value is None:
            raise KafkaError(ErrorCode.invalid_config, f"Null value not supported for {c.name}")
        overrides[c.name] = c.value
    return NewTopic(topic.name, partitions, overrides)


def _result(
    broker: BrokerApi, wanted: NewTopic, created: Topic | KafkaError
) -> CreatableTopicResult:
    if isinstance(created, KafkaError):
        return _error(wanted.name, created.error_code, created.message)
    overrides = wanted.configs
    effective = broker.topic_config(created).to_topic_configs()
    return CreatableTopicResult(
        name=TopicName(wanted.name),
        topic_id=created.topic_id,
        error_code=ErrorCode.none,
        error_message=None,
        topic_config_error_code=i16(0),
        num_partitions=i32(created.partitions),
        replication_factor=i16(1),
        configs=tuple(
            CreatableTopicConfigs(
                name=name,
                value=value,
                read_only=False,
                config_source=i8(TOPIC_CONFIG if name in overrides else DEFAULT_CONFIG),
                is_sensitive=False,
            )
            for name, value in sorted(effective.items())
        ),
    )


def _error(name: str, error: ErrorCode, message: str | None) -> CreatableTopicResult:
    return CreatableTopicResult(
        name=name,  # type: ignore[arg-type]
        topic_id=None,
        error_code=error,
        error_message=message,
        topic_config_error_code=i16(0),
        num_partitions=i32(-1),
        replication_factor=i16(-1),
        configs=None,
    )
