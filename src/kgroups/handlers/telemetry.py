"""GetTelemetrySubscriptions and PushTelemetry (KIP-714): the broker's
client telemetry (metrics/client_telemetry.py) answers both."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.get_telemetry_subscriptions.v0 import (
    GetTelemetrySubscriptionsRequest,
    GetTelemetrySubscriptionsResponse,
)
from kio.schema.push_telemetry.v0 import PushTelemetryRequest, PushTelemetryResponse

from kgroups.metrics.client_telemetry import ClientIdentity

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.context import RequestContext

__all__ = ["get_subscriptions", "push"]


async def get_subscriptions(
    broker: BrokerApi, ctx: RequestContext, request: GetTelemetrySubscriptionsRequest
) -> GetTelemetrySubscriptionsResponse:
    return broker.client_telemetry.get_subscriptions(request, _identity(ctx), ctx.connection)


async def push(
    broker: BrokerApi, ctx: RequestContext, request: PushTelemetryRequest
) -> PushTelemetryResponse:
    return broker.client_telemetry.push(request, _identity(ctx), ctx.connection)


def _identity(ctx: RequestContext) -> ClientIdentity:
    connection = ctx.connection
    if connection is None:
        return ClientIdentity(ctx.client_id, None, None, ctx.client_host, None)
    return ClientIdentity(
        ctx.client_id,
        connection.software_name,
        connection.software_version,
        connection.host,
        connection.port,
    )
