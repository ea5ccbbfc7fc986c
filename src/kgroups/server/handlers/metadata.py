"""Metadata: brokers, the cluster id, and topics with their partitions.

Topics unknown to the broker are created on the spot when both the broker
(`auto.create.topics.enable`) and the request (v4+) allow it, with
`num.partitions` partitions. Internal topics are flagged as such.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from uuid import UUID

from kio.schema.metadata.v12 import MetadataRequest, MetadataResponse
from kio.schema.metadata.v12.response import (
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)

from kgroups.cluster.topics import Topic
from kgroups.errors import ErrorCode, KafkaError
from kgroups.protocol import apis
from kgroups.protocol.types import BrokerId, TopicName, i32
from kgroups.protocol.versions import build
from kgroups.server.handlers.common import NO_THROTTLE, OPERATIONS_OMITTED
from kgroups.server.topic_changes import NewTopic, create_topics

if TYPE_CHECKING:
    from kgroups.server.broker import Broker
    from kgroups.server.context import RequestContext


async def handle(broker: Broker, ctx: RequestContext, request: MetadataRequest) -> MetadataResponse:
    node = BrokerId(broker.broker_id)
    host, port = broker.advertised
    if request.topics is None or (ctx.api_version == 0 and not request.topics):
        topics = [_describe(broker, t) for t in broker.topics]
    else:
        auto_create = ctx.api_version < 4 or request.allow_auto_topic_creation
        created = await _auto_create(broker, request, auto_create)
        topics = []
        for wanted in request.topics:
            topics.append(_lookup(broker, wanted.name, wanted.topic_id, created))
    # v8-v10 carry cluster_authorized_operations, which later versions dropped.
    response: MetadataResponse = build(
        apis.codec(apis.METADATA, ctx.api_version).response_type,
        throttle_time=NO_THROTTLE,
        brokers=(MetadataResponseBroker(node_id=node, host=host, port=i32(port), rack=None),),
        cluster_id=broker.topics.cluster_id,
        controller_id=node,
        topics=tuple(topics),
        cluster_authorized_operations=OPERATIONS_OMITTED,
    )
    return response


async def _auto_create(
    broker: Broker, request: MetadataRequest, auto_create: bool
) -> dict[str, Topic | KafkaError]:
    """Create the unknown topics asked for, all at once, when allowed."""
    if not auto_create or not broker.config.get_bool("auto.create.topics.enable"):
        return {}
    names = list(
        dict.fromkeys(
            t.name
            for t in request.topics or ()
            if t.name is not None and t.name not in broker.topics
        )
    )
    if not names:
        return {}
    results = await create_topics(broker, [NewTopic(name, None, {}) for name in names])
    return dict(zip(names, results, strict=True))


def _lookup(
    broker: Broker,
    name: str | None,
    topic_id: UUID | None,
    created: dict[str, Topic | KafkaError],
) -> MetadataResponseTopic:
    topic = broker.topics.get(name) if name is not None else None
    if topic is None and name is None and topic_id is not None:
        topic = broker.topics.by_id(topic_id)
    if topic is not None:
        return _describe(broker, topic)
    error = ErrorCode.unknown_topic_or_partition
    outcome = created.get(name) if name is not None else None
    if isinstance(outcome, Topic):
        return _describe(broker, outcome)
    if isinstance(outcome, KafkaError):
        error = outcome.error_code
    return MetadataResponseTopic(
        error_code=error,
        name=None if name is None else TopicName(name),
        topic_id=None,
        is_internal=False,
        partitions=(),
        topic_authorized_operations=OPERATIONS_OMITTED,
    )


def _describe(broker: Broker, topic: Topic) -> MetadataResponseTopic:
    node = BrokerId(broker.broker_id)
    replicas = (node,)
    return MetadataResponseTopic(
        error_code=ErrorCode.none,
        name=TopicName(topic.name),
        topic_id=topic.topic_id,
        is_internal=topic.internal,
        partitions=tuple(
            MetadataResponsePartition(
                error_code=ErrorCode.none,
                partition_index=i32(p),
                leader_id=node,
                leader_epoch=i32(0),
                replica_nodes=replicas,
                isr_nodes=replicas,
                offline_replicas=(),
            )
            for p in range(topic.partitions)
        ),
        topic_authorized_operations=OPERATIONS_OMITTED,
    )
