"""Creating and deleting topics from a client: CreateTopics and DeleteTopics
sent to the controller, as the newest version both sides know."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from kio.schema.create_topics.v7 import CreateTopicsRequest
from kio.schema.create_topics.v7.request import CreatableTopic, CreatableTopicConfig
from kio.schema.delete_topics.v6 import DeleteTopicsRequest
from kio.schema.delete_topics.v6.request import DeleteTopicState
from kio.static.primitive import i32Timedelta

from kgroups.client.cluster import ClusterClient
from kgroups.client.security import PLAINTEXT, ClientSecurity
from kgroups.errors import ErrorCode, KafkaError
from kgroups.protocol import apis
from kgroups.protocol.types import TopicName, i16, i32

__all__ = ["create", "delete"]

_TIMEOUT = i32Timedelta.parse(timedelta(seconds=30))


async def create(
    bootstrap: str,
    name: str,
    partitions: int | None,
    configs: list[str],
    security: ClientSecurity = PLAINTEXT,
) -> str:
    overrides = []
    for item in configs:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"--config {item!r} is not of the form key=value")
        overrides.append(CreatableTopicConfig(name=key, value=value))
    request = CreateTopicsRequest(
        topics=(
            CreatableTopic(
                name=TopicName(name),
                num_partitions=i32(partitions if partitions is not None else -1),
                replication_factor=i16(-1),
                assignments=(),
                configs=tuple(overrides),
            ),
        ),
        timeout=_TIMEOUT,
        validate_only=False,
    )
    response = await _ask_controller(bootstrap, security, request, apis.CREATE_TOPICS, 2, 7)
    result = _succeeded(response.topics[0])
    return f"Created topic {name} with {result.num_partitions} partition(s)."


async def delete(bootstrap: str, name: str, security: ClientSecurity = PLAINTEXT) -> str:
    request = DeleteTopicsRequest(
        topics=(DeleteTopicState(name=TopicName(name), topic_id=None),), timeout=_TIMEOUT
    )
    response = await _ask_controller(bootstrap, security, request, apis.DELETE_TOPICS, 6, 6)
    _succeeded(response.responses[0])
    return f"Deleted topic {name}."


async def _ask_controller(
    bootstrap: str,
    security: ClientSecurity,
    request: Any,
    api_key: int,
    lowest: int,
    highest: int,
) -> Any:
    """Send ``request`` to the controller, as the newest version both sides know."""
    client = ClusterClient(bootstrap, "kgroups-cli", security)
    try:
        conn = await client.controller()
        return await conn.send(request, version=conn.version_for(api_key, lowest, highest))
    finally:
        await client.close()


def _succeeded(result: Any) -> Any:
    """A topic's result, raised as a KafkaError if it failed."""
    if result.error_code != ErrorCode.none:
        raise KafkaError(result.error_code, result.error_message)
    return result
