"""ConsumerGroupHeartbeat and ConsumerGroupDescribe (KIP-848): routed to the
shard that coordinates each group, like the classic group APIs."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kio.schema.consumer_group_describe.v1 import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
)
from kio.schema.consumer_group_describe.v1.response import DescribedGroup
from kio.schema.consumer_group_heartbeat.v1 import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)

from kgroups.coordinator.consumer_messages import (
    consumer_heartbeat_response,
    described_group,
    heartbeat_error,
)
from kgroups.coordinator.context import RequestContext as CoordinatorContext
from kgroups.coordinator.result import Result
from kgroups.coordinator.shard import GroupCoordinatorShard as Shard
from kgroups.errors import ErrorCode, KafkaError
from kgroups.handlers.common import NO_THROTTLE, with_every_group_operation
from kgroups.protocol.types import GroupId

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.context import RequestContext


def consumer_protocol_enabled(broker: BrokerApi) -> bool:
    return broker.coordinator.consumer_protocol_enabled


async def heartbeat(
    broker: BrokerApi, ctx: RequestContext, request: ConsumerGroupHeartbeatRequest
) -> ConsumerGroupHeartbeatResponse:
    if not consumer_protocol_enabled(broker):
        return consumer_heartbeat_response(
            heartbeat_error(
                ErrorCode.unsupported_version, "The consumer group protocol is not enabled."
            )
        )
    if not request.group_id:
        return consumer_heartbeat_response(
            heartbeat_error(ErrorCode.invalid_request, "GroupId can't be empty.")
        )
    try:
        response: ConsumerGroupHeartbeatResponse = await broker.coordinator.call(
            request.group_id,
            ctx,
            lambda shard, c, now: shard.consumer_group_heartbeat(request, c, now),
        )
    except KafkaError as e:
        return consumer_heartbeat_response(heartbeat_error(e.error_code))
    return response


async def describe(
    broker: BrokerApi, ctx: RequestContext, request: ConsumerGroupDescribeRequest
) -> ConsumerGroupDescribeResponse:
    described: dict[str, DescribedGroup] = {}
    by_partition: dict[int, list[str]] = {}
    for g in dict.fromkeys(request.group_ids):
        if not g:  # as Kafka 4.x's GroupCoordinatorService, before any shard
            described[g] = described_group(g, None, "", lambda _: None, ErrorCode.invalid_group_id)
            continue
        by_partition.setdefault(broker.coordinator.partition_for(g), []).append(g)
    for partition, group_ids in by_partition.items():
        part = ConsumerGroupDescribeRequest(
            group_ids=tuple(GroupId(g) for g in group_ids),
            include_authorized_operations=request.include_authorized_operations,
        )
        try:
            response: ConsumerGroupDescribeResponse = await broker.coordinator.call_partition(
                partition, ctx, _describe_on_shard(part)
            )
            described.update((g.group_id, g) for g in response.groups)
        except KafkaError as e:
            for group_id in group_ids:
                described[group_id] = described_group(
                    group_id, None, "", lambda _: None, e.error_code
                )
    groups = tuple(described[g] for g in request.group_ids)
    return ConsumerGroupDescribeResponse(
        throttle_time=NO_THROTTLE,
        groups=with_every_group_operation(groups, request.include_authorized_operations),
    )


def _describe_on_shard(
    request: ConsumerGroupDescribeRequest,
) -> Callable[[Shard, CoordinatorContext, int], Result]:
    return lambda shard, c, now: shard.consumer_group_describe(request, c, now)
