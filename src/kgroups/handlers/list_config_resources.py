"""ListConfigResources v0, Kafka 4.0's ListClientMetricsResources: the
names of the client metrics subscriptions (kafka-client-metrics.sh --list)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.list_config_resources.v0 import (
    ListConfigResourcesRequest,
    ListConfigResourcesResponse,
)
from kio.schema.list_config_resources.v0.response import ConfigResource

from kgroups.errors import ErrorCode
from kgroups.handlers.common import NO_THROTTLE

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.context import RequestContext

__all__ = ["handle"]


async def handle(
    broker: BrokerApi, ctx: RequestContext, request: ListConfigResourcesRequest
) -> ListConfigResourcesResponse:
    names = sorted(broker.client_telemetry.subscriptions)
    return ListConfigResourcesResponse(
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        config_resources=tuple(ConfigResource(resource_name=name) for name in names),
    )
