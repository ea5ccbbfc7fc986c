"""DescribeConfigs for topics (effective log configs), groups, the broker and
client metrics subscriptions. Each entry carries its key's type (KIP-569) and,
when the request asks, what the key does."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kio.schema.describe_configs.v4 import DescribeConfigsRequest, DescribeConfigsResponse
from kio.schema.describe_configs.v4.response import (
    DescribeConfigsResourceResult,
    DescribeConfigsResult,
    DescribeConfigsSynonym,
)

from kgroups.config.broker_settings import SETTINGS, setting_kind
from kgroups.config.client_metrics import (
    CLIENT_METRICS,
    client_metrics_config_doc,
    client_metrics_config_kind,
)
from kgroups.config.config_types import PASSWORD, ConfigType
from kgroups.config.dynamic_broker import DYNAMIC_BROKER_KEYS
from kgroups.config.group_config import group_config_defaults, group_config_doc, group_config_kind
from kgroups.errors import ErrorCode
from kgroups.handlers.common import NO_THROTTLE
from kgroups.handlers.config_synonyms import broker_synonyms, topic_synonyms
from kgroups.partitions.config import topic_config_doc, topic_config_kind
from kgroups.protocol.types import i8

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.context import RequestContext

TOPIC = 2
BROKER = 4
GROUP = 32
# Config sources as Kafka numbers them.
DYNAMIC_BROKER_CONFIG = 2
DYNAMIC_DEFAULT_BROKER_CONFIG = 3
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5
CLIENT_METRICS_CONFIG = 7
GROUP_CONFIG = 8

# Each resource type's key -> (its type, what it does).
Described = Callable[[str], tuple[ConfigType, str | None]]


def _topic_key(key: str) -> tuple[ConfigType, str | None]:
    return topic_config_kind(key), topic_config_doc(key)


def _group_key(key: str) -> tuple[ConfigType, str | None]:
    return group_config_kind(key), group_config_doc(key)


def _client_metrics_key(key: str) -> tuple[ConfigType, str | None]:
    return client_metrics_config_kind(key), client_metrics_config_doc(key)


def _broker_key(key: str) -> tuple[ConfigType, str | None]:
    # A per-listener key has its base key's type but, as in Kafka, no documentation.
    setting = SETTINGS.get(key)
    return setting_kind(key), None if setting is None else setting.doc


def _unknown_key(key: str) -> tuple[ConfigType, str | None]:
    return ConfigType.UNKNOWN, None


async def handle(
    broker: BrokerApi, ctx: RequestContext, request: DescribeConfigsRequest
) -> DescribeConfigsResponse:
    results = []
    for resource in request.resources:
        error, message = ErrorCode.none, None
        entries: list[tuple[str, str | None, int]] = []
        synonyms: dict[str, list[tuple[str, str | None, int]]] = {}
        described: Described = _unknown_key
        if resource.resource_type == TOPIC:
            topic = broker.topics.get(resource.resource_name)
            if topic is None:
                error, message = ErrorCode.unknown_topic_or_partition, "Unknown topic"
            else:
                effective = broker.topic_config(topic).to_topic_configs()
                synonyms = {k: topic_synonyms(broker, k, topic.configs) for k in effective}
                described = _topic_key
                # The value's source is its first synonym's (the topic's own, a
                # dynamic broker default, server.properties, the built-in default).
                entries = [
                    (k, v, synonyms[k][0][2] if synonyms[k] else DEFAULT_CONFIG)
                    for k, v in sorted(effective.items())
                ]
        elif resource.resource_type == GROUP:
            own = broker.dynamic_configs.get(GROUP, resource.resource_name)
            entries = [
                (k, own.get(k, v), GROUP_CONFIG if k in own else DEFAULT_CONFIG)
                for k, v in group_config_defaults(broker.config).items()
            ]
            described = _group_key
        elif resource.resource_type == CLIENT_METRICS:
            # Only what the subscription sets, as Kafka describes it.
            if not resource.resource_name:
                error = ErrorCode.invalid_request
                message = "Client metrics subscription name must not be empty"
            else:
                own = broker.dynamic_configs.get(CLIENT_METRICS, resource.resource_name)
                entries = [(k, v, CLIENT_METRICS_CONFIG) for k, v in sorted(own.items())]
                described = _client_metrics_key
        elif resource.resource_type == BROKER:
            if resource.resource_name not in ("", str(broker.broker_id)):
                error, message = ErrorCode.invalid_request, "Unknown broker id"
            else:
                entries = _broker_entries(broker, resource.resource_name)
                synonyms = {k: broker_synonyms(broker, (k,)) for k, _v, _s in entries}
                described = _broker_key
        else:
            error, message = ErrorCode.invalid_request, "Unsupported resource type"
        keys = resource.configuration_keys
        results.append(
            DescribeConfigsResult(
                error_code=error,
                error_message=message,
                resource_type=resource.resource_type,
                resource_name=resource.resource_name,
                configs=tuple(
                    DescribeConfigsResourceResult(
                        name=k,
                        value=v,
                        read_only=resource.resource_type == BROKER and k not in DYNAMIC_BROKER_KEYS,
                        config_source=i8(source),
                        is_sensitive=sensitive,
                        synonyms=tuple(
                            DescribeConfigsSynonym(
                                name=name, value=None if sensitive else value, source=i8(origin)
                            )
                            for name, value, origin in synonyms.get(k, ())
                        )
                        if request.include_synonyms
                        else (),
                        config_type=i8(kind),
                        documentation=doc if request.include_documentation else None,
                    )
                    for k, v, source in entries
                    if keys is None or k in keys
                    for kind, doc in (described(k),)
                    for sensitive in (kind is PASSWORD,)
                ),
            )
        )
    return DescribeConfigsResponse(throttle_time=NO_THROTTLE, results=tuple(results))


def _broker_entries(broker: BrokerApi, name: str) -> list[tuple[str, str | None, int]]:
    """A broker's settings with their source, dynamic ones first (KIP-226);
    the cluster-wide default (empty name) lists only what it sets, as Kafka."""
    default = broker.dynamic_configs.get(BROKER, "")
    if not name:
        return [(k, v, DYNAMIC_DEFAULT_BROKER_CONFIG) for k, v in sorted(default.items())]
    own = broker.dynamic_configs.get(BROKER, name)
    return [
        (
            k,
            v,
            DYNAMIC_BROKER_CONFIG
            if k in own
            else DYNAMIC_DEFAULT_BROKER_CONFIG
            if k in default
            else STATIC_BROKER_CONFIG,
        )
        for k, v in broker.effective_config.describe().items()
    ]
