"""Metadata: brokers, the cluster id, and topics with their partitions.

Topics unknown to the broker are created on the spot when both the broker
(`auto.create.topics.enable`) and the request (v4+) allow it, with
`num.partitions` partitions; an internal topic is created as its coordinator
creates it (`__consumer_offsets` with offsets.topic.*, `__transaction_state`
with transaction.state.log.*), as Kafka does. Internal topics are flagged as
such. An illegal topic name is answered INVALID_TOPIC_EXCEPTION either way.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING
from uuid import UUID

from kio.schema.metadata.v12 import MetadataRequest, MetadataResponse
from kio.schema.metadata.v12.response import (
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)

from kgroups.errors import ErrorCode, KafkaError
from kgroups.handlers.common import (
    NO_THROTTLE,
    OPERATIONS_OMITTED,
    every_operation,
    own_address,
    with_own_address,
)
from kgroups.handlers.topic_changes import NewTopic, create_topics
from kgroups.protocol import apis
from kgroups.protocol.types import BrokerId, TopicName, i32
from kgroups.protocol.versions import build, metadata_request
from kgroups.security.authorizer import ResourceType
from kgroups.topics.names import Topic, is_legal_topic_name
from kgroups.topics.placement import OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.context import RequestContext


async def handle(broker: BrokerApi, ctx: RequestContext, request: object) -> MetadataResponse:
    return await _handle(broker, ctx, *metadata_request(request))


async def _handle(
    broker: BrokerApi, ctx: RequestContext, request: MetadataRequest, asked: bool
) -> MetadataResponse:
    node = BrokerId(broker.broker_id)
    host, port = own_address(broker, ctx.listener)
    brokers: tuple[MetadataResponseBroker, ...] = (
        MetadataResponseBroker(node_id=node, host=host, port=i32(port), rack=None),
    )
    if ctx.api_version < 12 and _names_a_topic_by_id(request):
        return _invalid_request(ctx, request)
    listed: Collection[int] = (broker.broker_id,)
    if broker.cluster is not None:
        if request.topics and any(t.name not in broker.topics for t in request.topics):
            await broker.cluster.refresh()  # created through another broker?
        # The brokers the client's listener reaches, each at its address there.
        addresses = with_own_address(broker, ctx.listener, broker.cluster.addresses(ctx.listener))
        brokers = tuple(
            MetadataResponseBroker(node_id=BrokerId(b), host=h, port=i32(p), rack=None)
            for b, (h, p) in sorted(addresses.items())
        )
        listed = addresses.keys()
        node = BrokerId(min(listed, default=broker.broker_id))
    partitions = _Partitions(broker, listed, ctx.api_version)
    if request.topics is None or (ctx.api_version == 0 and not request.topics):
        topics = [partitions.describe(t) for t in broker.topics]
    else:
        auto_create = ctx.api_version < 4 or request.allow_auto_topic_creation
        created = await _auto_create(broker, request, auto_create)
        topics = []
        for wanted in request.topics:
            topics.append(_lookup(broker, partitions, wanted.name, wanted.topic_id, created))
    if request.include_topic_authorized_operations:
        every = every_operation(ResourceType.TOPIC)
        topics = [dataclasses.replace(t, topic_authorized_operations=every) for t in topics]
    # v8-v10 carry cluster_authorized_operations, which later versions dropped;
    # the authorizer's guard narrows both to what the caller may do.
    response: MetadataResponse = build(
        apis.codec(apis.METADATA, ctx.api_version).response_type,
        throttle_time=NO_THROTTLE,
        brokers=brokers,
        cluster_id=broker.topics.cluster_id,
        controller_id=node,
        topics=tuple(topics),
        cluster_authorized_operations=(
            every_operation(ResourceType.CLUSTER) if asked else OPERATIONS_OMITTED
        ),
    )
    return response


def _names_a_topic_by_id(request: MetadataRequest) -> bool:
    """Before v12 a topic has a name and no id; Kafka refuses the request otherwise."""
    return request.topics is not None and any(
        t.name is None or (t.topic_id is not None and t.topic_id.int != 0) for t in request.topics
    )


def _invalid_request(ctx: RequestContext, request: MetadataRequest) -> MetadataResponse:
    """Kafka's error answer: every asked topic with INVALID_REQUEST, a missing
    name as "" (the response of those versions has no null name)."""
    response: MetadataResponse = build(
        apis.codec(apis.METADATA, ctx.api_version).response_type,
        throttle_time=NO_THROTTLE,
        brokers=(),
        controller_id=BrokerId(-1),
        topics=tuple(
            MetadataResponseTopic(
                error_code=ErrorCode.invalid_request,
                name=TopicName(t.name or ""),
                topic_id=None,
                is_internal=False,
                partitions=(),
                topic_authorized_operations=OPERATIONS_OMITTED,
            )
            for t in request.topics or ()
        ),
        cluster_authorized_operations=OPERATIONS_OMITTED,
    )
    return response


async def _auto_create(
    broker: BrokerApi, request: MetadataRequest, auto_create: bool
) -> dict[str, Topic | KafkaError]:
    """Create the unknown topics asked for, all at once, when allowed."""
    if not auto_create or not broker.config.get_bool("auto.create.topics.enable"):
        return {}
    names: list[str] = list(
        dict.fromkeys(
            str(t.name)
            for t in request.topics or ()
            if t.name is not None and t.name not in broker.topics and is_legal_topic_name(t.name)
        )
    )
    outcome: dict[str, Topic | KafkaError] = {}
    for name, make in _internal_topic_makers(broker).items():
        if name not in names:
            continue
        names.remove(name)  # made the coordinator's way, never with defaults
        try:
            make()
            made = broker.topics.get(name)
            assert made is not None
            outcome[name] = made
        except KafkaError as e:
            outcome[name] = e
    if names:
        results = await create_topics(broker, [NewTopic(name, None, {}) for name in names])
        outcome.update(zip(names, results, strict=True))
    return outcome


def _internal_topic_makers(broker: BrokerApi) -> dict[str, Callable[[], None]]:
    """Each internal topic and the coordinator call that creates it."""
    return {
        OFFSETS_TOPIC: broker.coordinator.ensure_offsets_topic,
        TRANSACTION_STATE_TOPIC: broker.txn_coordinator.ensure_topic,
    }


def _lookup(
    broker: BrokerApi,
    partitions: _Partitions,
    name: str | None,
    topic_id: UUID | None,
    created: dict[str, Topic | KafkaError],
) -> MetadataResponseTopic:
    topic = broker.topics.get(name) if name is not None else None
    if topic is None and name is None and topic_id is not None:
        topic = broker.topics.by_id(topic_id)
    if topic is not None:
        return partitions.describe(topic)
    error = ErrorCode.unknown_topic_or_partition
    if name is not None and not is_legal_topic_name(name):
        error = ErrorCode.invalid_topic_exception
    outcome = created.get(name) if name is not None else None
    if isinstance(outcome, Topic):
        return partitions.describe(outcome)
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


# Metadata v6 brought LISTENER_NOT_FOUND for a leader without the client's listener.
_LISTENER_NOT_FOUND_VERSION = 6


class _Partitions:
    """Topics' partitions as a client of one listener sees them: a leader that
    listener does not reach is answered as no leader, as Kafka does."""

    def __init__(self, broker: BrokerApi, listed: Collection[int], api_version: int) -> None:
        self._broker = broker
        self._listed = listed
        self._unreached = (
            ErrorCode.listener_not_found
            if api_version >= _LISTENER_NOT_FOUND_VERSION
            else ErrorCode.leader_not_available
        )

    def describe(self, topic: Topic) -> MetadataResponseTopic:
        return MetadataResponseTopic(
            error_code=ErrorCode.none,
            name=TopicName(topic.name),
            topic_id=topic.topic_id,
            is_internal=topic.internal,
            partitions=tuple(self._partition(topic.name, p) for p in range(topic.partitions)),
            topic_authorized_operations=OPERATIONS_OMITTED,
        )

    def _partition(self, topic: str, partition: int) -> MetadataResponsePartition:
        broker = self._broker
        leader, epoch = broker.broker_id, 0
        if broker.cluster is not None:
            # The store's view: the leader holds the only copy that takes writes.
            leader, epoch = broker.cluster.leader(topic, partition)
        replicas = (BrokerId(leader),) if leader >= 0 else ()
        error = ErrorCode.none if leader >= 0 else ErrorCode.leader_not_available
        if leader >= 0 and leader not in self._listed:
            error, leader = self._unreached, -1
        return MetadataResponsePartition(
            error_code=error,
            partition_index=i32(partition),
            leader_id=BrokerId(leader),
            leader_epoch=i32(epoch),
            replica_nodes=replicas,
            isr_nodes=replicas,
            offline_replicas=(),
        )
