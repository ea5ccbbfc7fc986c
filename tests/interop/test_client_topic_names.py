"""Subscribing to a topic name Kafka does not allow: poll() says so, naming the topic,
instead of joining the group with nothing to consume (the Java client's
InvalidTopicException)."""

from __future__ import annotations

import asyncio

import pytest

from kgroups.client import AsyncConsumer, Consumer, InvalidTopicError, TopicPartition
from kgroups.errors import ErrorCode

from broker_thread import BrokerThread
from interop.test_client_support import create_topic

pytestmark = pytest.mark.interop

INVALID = ["bad topic!", "a/b", "x" * 250, ".", ".."]


def _config(broker: BrokerThread, **extra: object) -> dict[str, object]:
    return {
        "bootstrap.servers": broker.bootstrap,
        "group.id": "names",
        "auto.offset.reset": "earliest",
        **extra,
    }


@pytest.mark.parametrize("auto_create", [True, False])
def test_poll_raises_naming_each_invalid_topic(broker: BrokerThread, auto_create: bool) -> None:
    create_topic(broker.bootstrap, "fine", 2)
    consumer = Consumer(_config(broker, **{"allow.auto.create.topics": auto_create}))
    try:
        # A valid topic in the same subscription does not hide the invalid ones.
        consumer.subscribe(["fine", *INVALID])
        with pytest.raises(InvalidTopicError) as caught:
            consumer.poll(5)
        assert caught.value.error_code == ErrorCode.invalid_topic_exception
        assert caught.value.topics == sorted(INVALID)
        for name in INVALID:
            assert repr(name) in str(caught.value)
        # Every later poll says so again; the consumer never joined the group.
        with pytest.raises(InvalidTopicError):
            consumer.poll(0.5)
        assert consumer.assignment() == set()
        assert consumer.generation_id == -1
    finally:
        consumer.close()


def test_the_asyncio_edition_raises_too(broker: BrokerThread) -> None:
    async def scenario() -> None:
        consumer = AsyncConsumer(_config(broker))
        try:
            consumer.subscribe(["fine", "bad topic!"])
            with pytest.raises(InvalidTopicError, match="'bad topic!'") as caught:
                await consumer.poll(5)
            assert caught.value.topics == ["bad topic!"]
        finally:
            await consumer.close()

    asyncio.run(scenario())


def test_a_corrected_subscription_consumes(broker: BrokerThread) -> None:
    create_topic(broker.bootstrap, "fine", 2)
    consumer = Consumer(_config(broker))
    try:
        consumer.subscribe(["fine", "bad topic!"])
        with pytest.raises(InvalidTopicError):
            consumer.poll(5)
        consumer.subscribe(["fine"])
        for _ in range(50):
            consumer.poll(0.2)
            if consumer.assignment():
                break
        assert {tp.topic for tp in consumer.assignment()} == {"fine"}
    finally:
        consumer.close()


@pytest.mark.parametrize("topics", [[""], ["fine", "  "]])
def test_subscribe_refuses_empty_names_at_once(broker: BrokerThread, topics: list[str]) -> None:
    consumer = Consumer(_config(broker))
    try:
        with pytest.raises(ValueError, match="empty"):
            consumer.subscribe(topics)
        assert consumer.subscription() == set()
    finally:
        consumer.close()


def test_manually_assigned_partitions_of_an_invalid_topic_fail_the_poll(
    broker: BrokerThread,
) -> None:
    consumer = Consumer({"bootstrap.servers": broker.bootstrap})
    try:
        with pytest.raises(ValueError, match="empty"):
            consumer.assign([TopicPartition(" ", 0)])
        assert consumer.assignment() == set()
        consumer.assign([TopicPartition("a/b", 0)])
        with pytest.raises(InvalidTopicError, match="'a/b'"):
            consumer.poll(5)
    finally:
        consumer.close()
