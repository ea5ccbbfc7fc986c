"""Topic administration as a client sends it, one raw request per call:
CreateTopics, DeleteTopics, Metadata with auto-creation and DescribeConfigs,
for tests of what a broker alone or a cluster member answers."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from uuid import UUID

from kio.schema.create_topics.v7 import CreateTopicsRequest
from kio.schema.create_topics.v7.request import CreatableTopic, CreatableTopicConfig
from kio.schema.delete_topics.v6 import DeleteTopicsRequest
from kio.schema.delete_topics.v6.request import DeleteTopicState
from kio.schema.describe_configs.v4 import DescribeConfigsRequest
from kio.schema.describe_configs.v4.request import DescribeConfigsResource
from kio.schema.metadata.v12 import MetadataRequest
from kio.schema.metadata.v12.request import MetadataRequestTopic
from kio.static.primitive import i32Timedelta

from kgroups.errors import ErrorCode
from kgroups.protocol.types import TopicName, i8, i16, i32

from raw_wire import call_once

TIMEOUT = i32Timedelta.parse(timedelta(seconds=10))
TOPIC_RESOURCE = i8(2)


def create(
    port: int, name: str, partitions: int, *, validate_only: bool = False, **configs: str
) -> Any:
    """CreateTopics of one topic (``configs`` with dots as underscores); its result."""
    response = call_once(
        port,
        CreateTopicsRequest(
            topics=(
                CreatableTopic(
                    name=TopicName(name),
                    num_partitions=i32(partitions),
                    replication_factor=i16(-1),
                    assignments=(),
                    configs=tuple(
                        CreatableTopicConfig(name=k.replace("_", "."), value=v)
                        for k, v in configs.items()
                    ),
                ),
            ),
            timeout=TIMEOUT,
            validate_only=validate_only,
        ),
        timeout=20,
    )
    return response.topics[0]


def delete(port: int, name: str) -> list[ErrorCode]:
    """DeleteTopics of one topic, named once by name and, if it exists, once by id."""
    states = [DeleteTopicState(name=TopicName(name), topic_id=None)]
    topic_id = described(port, name).topic_id
    if topic_id is not None and topic_id != UUID(int=0):
        states.append(DeleteTopicState(name=None, topic_id=topic_id))
    response = call_once(
        port, DeleteTopicsRequest(topics=tuple(states), timeout=TIMEOUT), timeout=20
    )
    return [r.error_code for r in response.responses]


def described(port: int, name: str, *, auto_create: bool = False) -> Any:
    """The topic as Metadata describes it, auto-created when asked (and allowed)."""
    response = call_once(
        port,
        MetadataRequest(
            topics=(MetadataRequestTopic(topic_id=None, name=TopicName(name)),),
            allow_auto_topic_creation=auto_create,
            include_topic_authorized_operations=False,
        ),
        timeout=20,
    )
    return response.topics[0]


def topic_configs(port: int, name: str) -> dict[str, str | None]:
    """The topic's effective configs, as DescribeConfigs lists them."""
    response = call_once(
        port,
        DescribeConfigsRequest(
            resources=(
                DescribeConfigsResource(
                    resource_type=TOPIC_RESOURCE, resource_name=name, configuration_keys=None
                ),
            ),
            include_synonyms=False,
            include_documentation=False,
        ),
        timeout=20,
    )
    (result,) = response.results
    assert result.error_code == ErrorCode.none, result.error_message
    return {c.name: c.value for c in result.configs}
