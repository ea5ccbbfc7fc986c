"""GetTelemetrySubscriptions and PushTelemetry (KIP-714): the broker's
client telemetry (metrics/client_telemetry.py) answers both; a push's
metrics are read on a worker thread."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from kio.schema.get_telemetry_subscriptions.v0 import (
    GetTelemetrySubscriptionsRequest,
    GetTelemetrySubscriptionsResponse,
)
from kio.schema.push_telemetry.v0 import PushTelemetryRequest, PushTelemetryResponse

from kgroups.metrics.client_telemetry import ClientIdentity, decode

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
    telemetry = broker.client_telemetry
    checked = telemetry.check_push(request, _identity(ctx), ctx.connection)
    if isinstance(checked, PushTelemetryResponse):
        return checked
    # Decompressing and reading protobuf is pure Python work proportional to
    # the payload: on a worker thread, not the loop.
    return telemetry.take(checked, await asyncio.to_thread(decode, checked))


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
