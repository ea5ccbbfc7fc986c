"""DescribeTopicPartitions (KIP-966): topics by name, or all of them, with
their partitions in order, a page at a time.

A page holds at most ``response_partition_limit`` partitions (capped by
``max.request.partition.size.limit``, at least 1); when a topic does not fit,
``next_cursor`` names the topic and partition the next request starts from,
as Kafka's KRaftMetadataCache pages them. Topics are answered in name order,
from the cursor's topic on. A named topic that is unknown is answered
UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION for an illegal name); in
an all-topics request, topics the caller may not describe are left out, and
named ones are answered TOPIC_AUTHORIZATION_FAILED after the others.

There is one copy of each partition: its replicas and ISR are its leader,
its eligible leader replicas empty. A leader the client's listener does not
reach is answered as no leader (-1) and listed offline.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import TYPE_CHECKING

from kio.schema import types as schema_types
from kio.schema.describe_topic_partitions.v0 import (
    DescribeTopicPartitionsRequest,
    DescribeTopicPartitionsResponse,
)
from kio.schema.describe_topic_partitions.v0.response import (
    Cursor,
    DescribeTopicPartitionsResponsePartition,
    DescribeTopicPartitionsResponseTopic,
)

from kgroups.errors import ErrorCode
from kgroups.handlers.common import (
    NO_THROTTLE,
    OPERATIONS_OMITTED,
    every_operation,
    with_own_address,
)
from kgroups.protocol.types import BrokerId, TopicName, i32
from kgroups.security.authorizer import ResourceType
from kgroups.topics.names import is_legal_topic_name
from kgroups.topics.placement import INTERNAL_TOPICS

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.context import RequestContext

Visible = Callable[[str], bool]
Operations = Callable[[str], int]


async def handle(
    broker: BrokerApi, ctx: RequestContext, request: DescribeTopicPartitionsRequest
) -> DescribeTopicPartitionsResponse:
    every = int(every_operation(ResourceType.TOPIC))
    return await answer(broker, ctx, request, lambda _: True, lambda _: every)


async def answer(
    broker: BrokerApi,
    ctx: RequestContext,
    request: DescribeTopicPartitionsRequest,
    visible: Visible,
    operations: Operations,
) -> DescribeTopicPartitionsResponse:
    """The response, with only the topics ``visible`` says the caller may
    describe, each with ``operations`` as its authorized operations."""
    every_topic = not request.topics
    cursor = request.cursor
    start_name = "" if cursor is None else str(cursor.topic_name)
    if broker.cluster is not None and any(t.name not in broker.topics for t in request.topics):
        await broker.cluster.refresh()  # created through another broker?
    if every_topic:
        names = {t.name for t in broker.topics if t.name >= start_name}
    else:
        names = {str(t.name) for t in request.topics if t.name >= start_name}
        if cursor is not None and cursor.topic_name not in names:
            return _invalid(request)  # the cursor's topic must be one of those asked
    if cursor is not None and cursor.partition_index < 0:
        return _invalid(request)
    denied = [] if every_topic else sorted(n for n in names if not visible(n))
    allowed = sorted(n for n in names if visible(n))
    limit = max(
        min(
            broker.config.get_int("max.request.partition.size.limit"),
            request.response_partition_limit,
        ),
        1,
    )
    page = _Page(broker, ctx.listener, limit)
    for name in allowed:
        first = cursor.partition_index if cursor is not None and name == start_name else 0
        if not page.add(name, first, report_unknown=not every_topic):
            break
    topics = [
        _with_operations(t, operations(str(t.name))) if t.name is not None else t
        for t in page.topics
    ]
    topics += [_topic(name, ErrorCode.topic_authorization_failed) for name in denied]
    return DescribeTopicPartitionsResponse(
        throttle_time=NO_THROTTLE, topics=tuple(topics), next_cursor=page.next_cursor
    )


class _Page:
    """Topics added in order until ``limit`` partitions are in."""

    def __init__(self, broker: BrokerApi, listener: str, limit: int) -> None:
        self._broker = broker
        self._remaining = limit
        self._reached: Collection[int] = (broker.broker_id,)
        if broker.cluster is not None:
            self._reached = with_own_address(
                broker, listener, broker.cluster.addresses(listener)
            ).keys()
        self.topics: list[DescribeTopicPartitionsResponseTopic] = []
        self.next_cursor: Cursor | None = None

    def add(self, name: str, first: int, *, report_unknown: bool) -> bool:
        """Add the topic from partition ``first``; False once the page is full."""
        if self._remaining == 0:
            # Every partition of the topics before is in: the next page starts here.
            self.next_cursor = Cursor(topic_name=TopicName(name), partition_index=i32(0))
            return False
        topic = self._broker.topics.get(name)
        if topic is None:
            if report_unknown:
                error = ErrorCode.unknown_topic_or_partition
                if not is_legal_topic_name(name):
                    error = ErrorCode.invalid_topic_exception
                self.topics.append(_topic(name, error))
            return True
        upper = min(topic.partitions, first + self._remaining)
        partitions = tuple(self._partition(name, p) for p in range(first, upper))
        self.topics.append(
            DescribeTopicPartitionsResponseTopic(
                error_code=ErrorCode.none,
                name=TopicName(name),
                topic_id=topic.topic_id,
                is_internal=topic.internal,
                partitions=partitions,
            )
        )
        if upper < topic.partitions:
            self.next_cursor = Cursor(topic_name=TopicName(name), partition_index=i32(upper))
            return False
        self._remaining -= len(partitions)
        return True

    def _partition(self, topic: str, partition: int) -> DescribeTopicPartitionsResponsePartition:
        leader, epoch = self._broker.broker_id, 0
        if self._broker.cluster is not None:
            leader, epoch = self._broker.cluster.leader(topic, partition)
        replicas = (BrokerId(leader),) if leader >= 0 else ()
        offline: tuple[schema_types.BrokerId, ...] = ()
        if leader >= 0 and leader not in self._reached:
            offline, leader = replicas, -1
        return DescribeTopicPartitionsResponsePartition(
            error_code=ErrorCode.none,
            partition_index=i32(partition),
            leader_id=BrokerId(leader),
            leader_epoch=i32(epoch),
            replica_nodes=replicas,
            isr_nodes=replicas,
            eligible_leader_replicas=(),
            last_known_elr=(),
            offline_replicas=offline,
        )


def _topic(name: str, error: ErrorCode) -> DescribeTopicPartitionsResponseTopic:
    return DescribeTopicPartitionsResponseTopic(
        error_code=error,
        name=TopicName(name),
        topic_id=None,
        is_internal=name in INTERNAL_TOPICS,
        partitions=(),
        topic_authorized_operations=OPERATIONS_OMITTED,
    )


def _with_operations(
    topic: DescribeTopicPartitionsResponseTopic, bits: int
) -> DescribeTopicPartitionsResponseTopic:
    return DescribeTopicPartitionsResponseTopic(
        error_code=topic.error_code,
        name=topic.name,
        topic_id=topic.topic_id,
        is_internal=topic.is_internal,
        partitions=topic.partitions,
        topic_authorized_operations=i32(bits),
    )


def _invalid(request: DescribeTopicPartitionsRequest) -> DescribeTopicPartitionsResponse:
    """Kafka's answer to an InvalidRequestException: each topic asked, INVALID_REQUEST."""
    return DescribeTopicPartitionsResponse(
        throttle_time=NO_THROTTLE,
        topics=tuple(
            DescribeTopicPartitionsResponseTopic(
                error_code=ErrorCode.invalid_request,
                name=t.name,
                topic_id=None,
                is_internal=False,
                partitions=(),
            )
            for t in request.topics
        ),
    )


__all__ = ["answer", "handle"]
