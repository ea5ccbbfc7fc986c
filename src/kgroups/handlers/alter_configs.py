"""IncrementalAlterConfigs and AlterConfigs: change resources' dynamic configs.

Both are checked as Kafka's ConfigAdminManager does first (a resource named
twice, a key named twice, a null value: INVALID_REQUEST), then each resource
is changed on its own: IncrementalAlterConfigs applies SET, DELETE, APPEND and
SUBTRACT to the resource's overrides; AlterConfigs replaces them whole, as in
Kafka. ``validate_only`` checks without changing anything.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING

from kio.schema.alter_configs.v2 import AlterConfigsRequest, AlterConfigsResponse
from kio.schema.alter_configs.v2.response import (
    AlterConfigsResourceResponse as LegacyResult,
)
from kio.schema.incremental_alter_configs.v1 import (
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)
from kio.schema.incremental_alter_configs.v1.response import AlterConfigsResourceResponse

from kgroups.config.client_metrics import CLIENT_METRICS
from kgroups.errors import ErrorCode, KafkaError
from kgroups.handlers.broker_configs import alter_broker_configs, check_broker_name
from kgroups.handlers.client_metrics_configs import alter_client_metrics_configs
from kgroups.handlers.common import NO_THROTTLE
from kgroups.handlers.config_ops import ConfigOp, apply_ops, check_ops
from kgroups.handlers.group_configs import GROUP, alter_group_configs
from kgroups.handlers.topic_configs import Change, alter_topic_configs

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.context import RequestContext

__all__ = ["alter", "incremental_alter"]

# ConfigResource.Type as Kafka numbers them.
TOPIC = 2
BROKER = 4

# Change a resource's configs (raising KafkaError), or only check with validate_only.
ResourceAlter = Callable[..., Awaitable[None]]

_ALTERS: dict[int, ResourceAlter] = {
    TOPIC: alter_topic_configs,
    GROUP: alter_group_configs,
    BROKER: alter_broker_configs,
    CLIENT_METRICS: alter_client_metrics_configs,
}


async def incremental_alter(
    broker: BrokerApi, ctx: RequestContext, request: IncrementalAlterConfigsRequest
) -> IncrementalAlterConfigsResponse:
    seen = Counter((r.resource_type, r.resource_name) for r in request.resources)
    results = []
    for r in request.resources:
        ops = [ConfigOp(c.name, c.config_operation, c.value) for c in r.configs]

        def change(
            overrides: Mapping[str, str],
            effective: Mapping[str, str],
            list_keys: frozenset[str],
            ops: list[ConfigOp] = ops,
        ) -> dict[str, str]:
            return apply_ops(overrides, effective, ops, list_keys)

        error, message = await _alter_one(
            broker,
            r.resource_type,
            r.resource_name,
            seen[(r.resource_type, r.resource_name)] > 1,
            ops,
            change,
            request.validate_only,
        )
        results.append(
            AlterConfigsResourceResponse(
                error_code=error,
                error_message=message,
                resource_type=r.resource_type,
                resource_name=r.resource_name,
            )
        )
    return IncrementalAlterConfigsResponse(throttle_time=NO_THROTTLE, responses=tuple(results))


async def alter(
    broker: BrokerApi, ctx: RequestContext, request: AlterConfigsRequest
) -> AlterConfigsResponse:
    seen = Counter((r.resource_type, r.resource_name) for r in request.resources)
    results = []
    for r in request.resources:
        ops = [ConfigOp(c.name, 0, c.value) for c in r.configs]
        wanted = {c.name: c.value or "" for c in r.configs}

        def replace(
            overrides: Mapping[str, str],
            effective: Mapping[str, str],
            list_keys: frozenset[str],
            wanted: dict[str, str] = wanted,
        ) -> dict[str, str]:
            return dict(wanted)

        error, message = await _alter_one(
            broker,
            r.resource_type,
            r.resource_name,
            seen[(r.resource_type, r.resource_name)] > 1,
            ops,
            replace,
            request.validate_only,
            legacy=True,
        )
        results.append(
            LegacyResult(
                error_code=error,
                error_message=message,
                resource_type=r.resource_type,
                resource_name=r.resource_name,
            )
        )
    return AlterConfigsResponse(throttle_time=NO_THROTTLE, responses=tuple(results))


async def _alter_one(
    broker: BrokerApi,
    rtype: int,
    name: str,
    duplicated: bool,
    ops: list[ConfigOp],
    change: Change,
    validate_only: bool,
    *,
    legacy: bool = False,
) -> tuple[ErrorCode, str | None]:
    if duplicated:
        return ErrorCode.invalid_request, "Each resource must appear at most once."
    try:
        if legacy:  # AlterConfigs knows topics, brokers (each its own only) and
            # client metrics subscriptions, which Kafka's controller takes whole too
            if rtype == BROKER:
                check_broker_name(broker, name)
            elif rtype not in (TOPIC, CLIENT_METRICS):
                raise KafkaError(ErrorCode.invalid_request, f"Unknown resource type {rtype}")
        check_ops(ops)
        alter_resource = _ALTERS.get(rtype)
        if alter_resource is None:
            raise KafkaError(ErrorCode.invalid_request, f"Unknown resource type {rtype}")
        await alter_resource(broker, name, change, validate_only=validate_only)
    except KafkaError as e:
        return e.error_code, e.message
    return ErrorCode.none, None
