"""ApiVersions: the ranges of the API-version table."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.api_versions.v3 import ApiVersionsRequest, ApiVersionsResponse
from kio.schema.api_versions.v3.response import ApiVersion

from kgroups.errors import ErrorCode
from kgroups.handlers.common import NO_THROTTLE
from kgroups.handlers.consumer_groups import consumer_protocol_enabled
from kgroups.protocol import apis
from kgroups.protocol.types import i16

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.context import RequestContext

_ENTRIES = tuple(
    ApiVersion(api_key=i16(r.key), min_version=i16(r.min_version), max_version=i16(r.max_version))
    for r in apis.SUPPORTED.values()
)
# Without the consumer group protocol (group.coordinator.rebalance.protocols),
# its APIs are not advertised, as in Kafka.
_CONSUMER_PROTOCOL_APIS = frozenset((apis.CONSUMER_GROUP_HEARTBEAT, apis.CONSUMER_GROUP_DESCRIBE))
# Without a receiver of client telemetry (the Prometheus endpoint), its APIs
# are not advertised, as in Kafka without a ClientTelemetryReceiver, so
# clients do not collect metrics nobody reads.
_TELEMETRY_APIS = frozenset((apis.GET_TELEMETRY_SUBSCRIPTIONS, apis.PUSH_TELEMETRY))
# Nor, without "share" there, the share group APIs.
_SHARE_APIS = frozenset(
    (
        apis.SHARE_GROUP_HEARTBEAT,
        apis.SHARE_GROUP_DESCRIBE,
        apis.SHARE_FETCH,
        apis.SHARE_ACKNOWLEDGE,
        apis.DESCRIBE_SHARE_GROUP_OFFSETS,
        apis.ALTER_SHARE_GROUP_OFFSETS,
        apis.DELETE_SHARE_GROUP_OFFSETS,
    )
)
_LEFT_OUT = {
    (consumer, telemetry, share): tuple(
        e
        for e in _ENTRIES
        if (consumer or e.api_key not in _CONSUMER_PROTOCOL_APIS)
        and (telemetry or e.api_key not in _TELEMETRY_APIS)
        and (share or e.api_key not in _SHARE_APIS)
    )
    for consumer in (False, True)
    for telemetry in (False, True)
    for share in (False, True)
}


async def handle(
    broker: BrokerApi, ctx: RequestContext, request: ApiVersionsRequest
) -> ApiVersionsResponse:
    if ctx.connection is not None:
        # KIP-511: what a client telemetry subscription may match on.
        ctx.connection.software_name = request.client_software_name or None
        ctx.connection.software_version = request.client_software_version or None
    telemetry = broker.client_telemetry.receiver is not None
    share = broker.coordinator.share_protocol_enabled
    entries = _LEFT_OUT[(consumer_protocol_enabled(broker), telemetry, share)]
    return ApiVersionsResponse(
        error_code=ErrorCode.none, api_keys=entries, throttle_time=NO_THROTTLE
    )
