"""Config administration as a client sends it, one raw request per call:
IncrementalAlterConfigs, AlterConfigs and DescribeConfigs, for tests of what a
broker alone or a cluster member answers."""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import Any

from kio.schema.describe_configs.v4 import DescribeConfigsRequest
from kio.schema.describe_configs.v4.request import DescribeConfigsResource

from kgroups.errors import ErrorCode
from kgroups.protocol.types import i8

from raw_wire import call_once

TOPIC, BROKER, GROUP = 2, 4, 32
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3

Op = tuple[str, int, str | None]
Answer = tuple[str, ErrorCode, str | None]


def incremental(
    port: int,
    resources: Sequence[tuple[int, str, Sequence[Op]]],
    *,
    validate_only: bool = False,
    version: int = 1,
) -> list[Answer]:
    """IncrementalAlterConfigs; (name, error, message) per resource, in order."""
    schema = importlib.import_module(f"kio.schema.incremental_alter_configs.v{version}.request")
    request = schema.IncrementalAlterConfigsRequest(
        resources=tuple(
            schema.AlterConfigsResource(
                resource_type=i8(rtype),
                resource_name=name,
                configs=tuple(
                    schema.AlterableConfig(name=k, config_operation=i8(op), value=v)
                    for k, op, v in ops
                ),
            )
            for rtype, name, ops in resources
        ),
        validate_only=validate_only,
    )
    return _answers(call_once(port, request, timeout=30))


def legacy(
    port: int,
    resources: Sequence[tuple[int, str, Mapping[str, str | None]]],
    *,
    validate_only: bool = False,
    version: int = 2,
) -> list[Answer]:
    """AlterConfigs (the whole set of each resource); (name, error, message) each."""
    schema = importlib.import_module(f"kio.schema.alter_configs.v{version}.request")
    request = schema.AlterConfigsRequest(
        resources=tuple(
            schema.AlterConfigsResource(
                resource_type=i8(rtype),
                resource_name=name,
                configs=tuple(schema.AlterableConfig(name=k, value=v) for k, v in configs.items()),
            )
            for rtype, name, configs in resources
        ),
        validate_only=validate_only,
    )
    return _answers(call_once(port, request, timeout=30))


def _answers(response: Any) -> list[Answer]:
    return [(r.resource_name, r.error_code, r.error_message) for r in response.responses]


def described(
    port: int,
    rtype: int,
    name: str,
    *,
    synonyms: bool = False,
    keys: Sequence[str] | None = None,
    documentation: bool = False,
) -> Any:
    """The DescribeConfigs result of one resource."""
    response = call_once(
        port,
        DescribeConfigsRequest(
            resources=(
                DescribeConfigsResource(
                    resource_type=i8(rtype),
                    resource_name=name,
                    configuration_keys=None if keys is None else tuple(keys),
                ),
            ),
            include_synonyms=synonyms,
            include_documentation=documentation,
        ),
        timeout=20,
    )
    (result,) = response.results
    return result


def configs(port: int, rtype: int, name: str) -> dict[str, tuple[str | None, int]]:
    """Each config of the resource: (value, source)."""
    result = described(port, rtype, name)
    assert result.error_code == ErrorCode.none, result.error_message
    return {c.name: (c.value, c.config_source) for c in result.configs}
