"""IncrementalAlterConfigs and DescribeConfigs from a client, as Kafka's Admin
sends them: a broker's own configs to that broker, everything else (topics,
groups, the cluster-wide broker default) to the controller."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kio.schema.describe_configs.v4 import DescribeConfigsRequest
from kio.schema.describe_configs.v4.request import DescribeConfigsResource
from kio.schema.incremental_alter_configs.v1 import IncrementalAlterConfigsRequest
from kio.schema.incremental_alter_configs.v1.request import AlterableConfig, AlterConfigsResource
from kio.schema.list_config_resources.v0 import ListConfigResourcesRequest

from kgroups.client.cluster import ClusterClient
from kgroups.client.connection import BrokerConnection
from kgroups.errors import ErrorCode, KafkaError
from kgroups.protocol import apis
from kgroups.protocol.types import i8

__all__ = [
    "APPEND",
    "BROKER",
    "CLIENT_METRICS",
    "DELETE",
    "GROUP",
    "SET",
    "SUBTRACT",
    "TOPIC",
    "ConfigEntry",
    "describe_configs",
    "incremental_alter_configs",
    "list_client_metrics_resources",
]

# ConfigResource.Type and AlterConfigOp.OpType as Kafka numbers them.
TOPIC, BROKER, CLIENT_METRICS, GROUP = 2, 4, 16, 32
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3

Resource = tuple[int, str]  # (type, name)
Op = tuple[str, int, str | None]  # (key, operation, value)


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    name: str
    value: str | None
    source: int
    read_only: bool
    sensitive: bool


async def incremental_alter_configs(
    cluster: ClusterClient, changes: Mapping[Resource, Sequence[Op]], *, validate_only: bool = False
) -> dict[Resource, KafkaError | None]:
    """Apply each resource's operations; per resource None (done) or the error."""
    out: dict[Resource, KafkaError | None] = {}
    by_broker: dict[int | None, list[Resource]] = {}
    for resource in changes:
        by_broker.setdefault(_node(resource), []).append(resource)
    for node, resources in by_broker.items():
        request = IncrementalAlterConfigsRequest(
            resources=tuple(
                AlterConfigsResource(
                    resource_type=i8(rtype),
                    resource_name=name,
                    configs=tuple(
                        AlterableConfig(name=key, config_operation=i8(op), value=value)
                        for key, op, value in changes[(rtype, name)]
                    ),
                )
                for rtype, name in resources
            ),
            validate_only=validate_only,
        )
        conn = await _connection(cluster, node)
        version = conn.version_for(apis.INCREMENTAL_ALTER_CONFIGS, 0, 1)
        response = await conn.send(request, version=version)
        for r in response.responses:
            ok = r.error_code == ErrorCode.none
            out[(r.resource_type, r.resource_name)] = (
                None if ok else KafkaError(r.error_code, r.error_message)
            )
    return out


async def describe_configs(
    cluster: ClusterClient, resource: Resource, *, synonyms: bool = False
) -> list[ConfigEntry]:
    """Every config of the resource, or a KafkaError."""
    rtype, name = resource
    conn = await _connection(cluster, _node(resource))
    request = DescribeConfigsRequest(
        resources=(
            DescribeConfigsResource(
                resource_type=i8(rtype), resource_name=name, configuration_keys=None
            ),
        ),
        include_synonyms=synonyms,
        include_documentation=False,
    )
    response = await conn.send(request, version=conn.version_for(apis.DESCRIBE_CONFIGS, 1, 4))
    (result,) = response.results
    if result.error_code != ErrorCode.none:
        raise KafkaError(result.error_code, result.error_message)
    return [
        ConfigEntry(c.name, c.value, c.config_source, c.read_only, c.is_sensitive)
        for c in result.configs
    ]


async def list_client_metrics_resources(cluster: ClusterClient) -> list[str]:
    """The names of the client metrics subscriptions (ListConfigResources v0,
    Kafka 4.0's ListClientMetricsResources), or a KafkaError."""
    conn = await _connection(cluster, None)
    response = await conn.send(
        ListConfigResourcesRequest(), version=conn.version_for(apis.LIST_CONFIG_RESOURCES, 0, 0)
    )
    if response.error_code != ErrorCode.none:
        raise KafkaError(response.error_code)
    return sorted(r.resource_name for r in response.config_resources)


def _node(resource: Resource) -> int | None:
    rtype, name = resource
    if rtype == BROKER and name:
        try:
            return int(name)
        except ValueError:
            return None  # the broker answers INVALID_REQUEST
    return None


async def _connection(cluster: ClusterClient, node: int | None) -> BrokerConnection:
    if node is None:
        return await cluster.controller()
    await cluster.refresh([])
    return await cluster.connection(node)
