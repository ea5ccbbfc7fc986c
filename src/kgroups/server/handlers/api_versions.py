"""ApiVersions: the ranges of the API-version table."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.api_versions.v3 import ApiVersionsRequest, ApiVersionsResponse
from kio.schema.api_versions.v3.response import ApiVersion

from kgroups.errors import ErrorCode
from kgroups.protocol import apis
from kgroups.protocol.types import i16
from kgroups.server.handlers.common import NO_THROTTLE

if TYPE_CHECKING:
    from kgroups.server.broker_api import BrokerApi
    from kgroups.server.context import RequestContext

_ENTRIES = tuple(
    ApiVersion(api_key=i16(r.key), min_version=i16(r.min_version), max_version=i16(r.max_version))
    for r in apis.SUPPORTED.values()
)


async def handle(
    broker: BrokerApi, ctx: RequestContext, request: ApiVersionsRequest
) -> ApiVersionsResponse:
    return ApiVersionsResponse(
        error_code=ErrorCode.none, api_keys=_ENTRIES, throttle_time=NO_THROTTLE
    )
