"""`__consumer_offsets` belongs to the broker: clients cannot create it with
settings of their own, nor delete it; the broker creates it with its
offsets.topic.* settings."""

from __future__ import annotations

import datetime
from typing import Any

from kio.schema.create_topics.v7 import CreateTopicsRequest
from kio.schema.create_topics.v7.request import CreatableTopic, CreatableTopicConfig
from kio.schema.delete_topics.v6 import DeleteTopicsRequest
from kio.schema.delete_topics.v6.request import DeleteTopicState
from kio.schema.metadata.v12 import MetadataRequest
from kio.schema.metadata.v12.request import MetadataRequestTopic
from kio.static.primitive import i32Timedelta

from kgroups.client.cluster import ClusterClient
from kgroups.errors import ErrorCode
from kgroups.protocol.types import TopicName, i16, i32
from kgroups.topics.placement import OFFSETS_TOPIC

from broker_thread import BrokerThread


def _send(broker: BrokerThread, request: Any) -> Any:
    async def go() -> Any:
        cluster = ClusterClient(broker.bootstrap)
        try:
            conn = await cluster.any_connection()
            return await conn.send(request)
        finally:
            await cluster.close()

    return broker.run(go())


def _create(broker: BrokerThread, name: str, partitions: int, **configs: str) -> Any:
    return _send(
        broker,
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
            timeout=i32Timedelta.parse(datetime.timedelta(seconds=5)),
            validate_only=False,
        ),
    ).topics[0]


def _metadata(broker: BrokerThread, name: str) -> Any:
    return _send(
        broker,
        MetadataRequest(
            topics=(MetadataRequestTopic(topic_id=None, name=TopicName(name)),),
            allow_auto_topic_creation=True,
            include_topic_authorized_operations=False,
        ),
    ).topics[0]


def _offsets_topic(broker: BrokerThread) -> tuple[int, dict[str, str]]:
    assert broker.broker is not None
    topic = broker.broker.topics.get(OFFSETS_TOPIC)
    assert topic is not None
    return topic.partitions, topic.configs


def test_create_topics_cannot_create_the_offsets_topic(broker: BrokerThread) -> None:
    result = _create(broker, OFFSETS_TOPIC, 3, cleanup_policy="delete", retention_ms="1000")
    assert result.error_code == ErrorCode.invalid_request
    assert broker.broker is not None
    assert broker.broker.topics.get(OFFSETS_TOPIC) is None

    # Once the broker made it (first FindCoordinator), it simply exists.
    assert broker.broker is not None
    broker.call(lambda: broker.broker.coordinator.ensure_offsets_topic())  # type: ignore[union-attr]
    again = _create(broker, OFFSETS_TOPIC, 3, cleanup_policy="delete")
    assert again.error_code == ErrorCode.topic_already_exists
    assert _offsets_topic(broker) == (
        5,
        {"cleanup.policy": "compact", "segment.bytes": "104857600"},
    )


def test_metadata_auto_creates_the_offsets_topic_with_the_brokers_settings(
    broker: BrokerThread,
) -> None:
    topic = _metadata(broker, OFFSETS_TOPIC)
    assert topic.error_code == ErrorCode.none
    assert topic.is_internal
    assert len(topic.partitions) == 5  # offsets.topic.num.partitions, not num.partitions
    assert _offsets_topic(broker)[1]["cleanup.policy"] == "compact"
    # Its groups are served (no NOT_COORDINATOR from shards that were never made).
    assert broker.broker is not None
    assert broker.broker.coordinator.loaded_partitions() == [0, 1, 2, 3, 4]


def test_delete_topics_cannot_delete_the_offsets_topic(broker: BrokerThread) -> None:
    assert broker.broker is not None
    broker.call(lambda: broker.broker.coordinator.ensure_offsets_topic())  # type: ignore[union-attr]
    topic_id = broker.broker.topics.get(OFFSETS_TOPIC).topic_id  # type: ignore[union-attr]
    response = _send(
        broker,
        DeleteTopicsRequest(
            topics=(
                DeleteTopicState(name=TopicName(OFFSETS_TOPIC), topic_id=None),
                DeleteTopicState(name=None, topic_id=topic_id),
            ),
            timeout=i32Timedelta.parse(datetime.timedelta(seconds=5)),
        ),
    )
    assert [r.error_code for r in response.responses] == [ErrorCode.invalid_topic_exception] * 2
    assert broker.broker.topics.get(OFFSETS_TOPIC) is not None
