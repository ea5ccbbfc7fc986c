"""DescribeCluster: this broker alone, or in cluster mode every live broker
(the lowest id is named controller)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.describe_cluster.v1 import DescribeClusterRequest, DescribeClusterResponse
from kio.schema.describe_cluster.v1.response import DescribeClusterBroker

from kgroups.errors import ErrorCode
from kgroups.handlers.common import (
    NO_THROTTLE,
    OPERATIONS_OMITTED,
    every_operation,
    own_address,
    with_own_address,
)
from kgroups.protocol.types import BrokerId, i8, i32
from kgroups.security.authorizer import ResourceType

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.context import RequestContext

BROKERS_ENDPOINT = 1


async def handle(
    broker: BrokerApi, ctx: RequestContext, request: DescribeClusterRequest
) -> DescribeClusterResponse:
    host, port = own_address(broker, ctx.listener)
    node = BrokerId(broker.broker_id)
    brokers: tuple[DescribeClusterBroker, ...] = (
        DescribeClusterBroker(broker_id=node, host=host, port=i32(port), rack=None),
    )
    if broker.cluster is not None:
        # The brokers the client's listener reaches, each at its address there.
        live = with_own_address(broker, ctx.listener, broker.cluster.addresses(ctx.listener))
        brokers = tuple(
            DescribeClusterBroker(broker_id=BrokerId(b), host=h, port=i32(p), rack=None)
            for b, (h, p) in sorted(live.items())
        )
        node = BrokerId(min(live, default=broker.broker_id))
    return DescribeClusterResponse(
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        error_message=None,
        endpoint_type=i8(BROKERS_ENDPOINT),
        cluster_id=broker.topics.cluster_id,
        controller_id=node,
        brokers=brokers,
        # Every operation, as Kafka without an authorizer; the guard narrows it.
        cluster_authorized_operations=(
            every_operation(ResourceType.CLUSTER)
            if request.include_cluster_authorized_operations
            else OPERATIONS_OMITTED
        ),
    )
