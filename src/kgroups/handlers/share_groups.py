"""ShareGroupHeartbeat and ShareGroupDescribe (KIP-932): routed to the shard
that coordinates each group, like the consumer group APIs."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kio.schema.share_group_describe.v1 import (
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
)
from kio.schema.share_group_describe.v1.response import DescribedGroup
from kio.schema.share_group_heartbeat.v1 import (
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)

from kgroups.coordinator.context import RequestContext as CoordinatorContext
from kgroups.coordinator.result import Result
from kgroups.coordinator.shard import GroupCoordinatorShard as Shard
from kgroups.coordinator.share.messages import (
    described_error,
    share_heartbeat_error,
    share_heartbeat_response,
)
from kgroups.errors import ErrorCode, KafkaError
from kgroups.handlers.common import NO_THROTTLE, with_every_group_operation
from kgroups.handlers.share_group_state import initialize_assigned
from kgroups.protocol.types import GroupId

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.context import RequestContext


def share_protocol_enabled(broker: BrokerApi) -> bool:
    return broker.coordinator.share_protocol_enabled


async def heartbeat(
    broker: BrokerApi, ctx: RequestContext, request: ShareGroupHeartbeatRequest
) -> ShareGroupHeartbeatResponse:
    if not share_protocol_enabled(broker):
        return share_heartbeat_response(
            share_heartbeat_error(ErrorCode.unsupported_version, "Share groups are not enabled.")
        )
    if not request.group_id.strip():
        return share_heartbeat_response(
            share_heartbeat_error(ErrorCode.invalid_request, "GroupId can't be empty.")
        )
    try:
        response: ShareGroupHeartbeatResponse = await broker.coordinator.call(
            request.group_id,
            ctx,
            lambda shard, c, now: shard.share_group_heartbeat(request, c, now),
        )
    except KafkaError as e:
        return share_heartbeat_response(share_heartbeat_error(e.error_code))
    if response.error_code is ErrorCode.none and response.member_epoch >= 0:
        # Newly assigned partitions have their share state before they are fetched.
        await initialize_assigned(broker, ctx, request.group_id)
    return response


async def describe(
    broker: BrokerApi, ctx: RequestContext, request: ShareGroupDescribeRequest
) -> ShareGroupDescribeResponse:
    described: dict[str, DescribedGroup] = {}
    by_partition: dict[int, list[str]] = {}
    for g in dict.fromkeys(request.group_ids):
        if not g:
            described[g] = described_error(g, ErrorCode.invalid_group_id, None)
            continue
        by_partition.setdefault(broker.coordinator.partition_for(g), []).append(g)
    for partition, group_ids in by_partition.items():
        part = ShareGroupDescribeRequest(
            group_ids=tuple(GroupId(g) for g in group_ids),
            include_authorized_operations=request.include_authorized_operations,
        )
        try:
            response: ShareGroupDescribeResponse = await broker.coordinator.call_partition(
                partition, ctx, _describe_on_shard(part)
            )
            described.update((g.group_id, g) for g in response.groups)
        except KafkaError as e:
            for group_id in group_ids:
                described[group_id] = described_error(group_id, e.error_code, None)
    groups = tuple(described[g] for g in request.group_ids)
    return ShareGroupDescribeResponse(
        throttle_time=NO_THROTTLE,
        groups=with_every_group_operation(groups, request.include_authorized_operations),
    )


def _describe_on_shard(
    request: ShareGroupDescribeRequest,
) -> Callable[[Shard, CoordinatorContext, int], Result]:
    return lambda shard, c, now: shard.share_group_describe(request, c, now)
