"""A confluent-kafka consumer with ``group.protocol=consumer`` subscribed to a
pattern: librdkafka sends it as the heartbeat's regex, the broker resolves
it, and a topic created after the group formed is assigned and consumed; the
resolution survives a kill -9 of the broker."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from broker_thread import BrokerThread
from interop.test_consumer_protocol import FAST_HEARTBEATS
from process_broker import BrokerProcess

pytestmark = pytest.mark.interop

PARTITIONS = 2


def _create(admin: Any, name: str) -> None:
    from confluent_kafka.admin import NewTopic

    admin.create_topics([NewTopic(name, PARTITIONS, 1)])[name].result(20)


def _produce(bootstrap: str, topic: str) -> set[bytes]:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap})
    values = {f"{topic}-{p}-{i}".encode() for p in range(PARTITIONS) for i in range(10)}
    for value in sorted(values):
        producer.produce(topic, value=value, partition=int(value.split(b"-")[-2]))
    assert producer.flush(20) == 0
    return values


class PatternConsumer:
    """A consumer subscribed to ``^events-.*``, keeping what it read by topic."""

    def __init__(self, bootstrap: str) -> None:
        from confluent_kafka import Consumer

        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "by-pattern",
                "group.protocol": "consumer",
                "auto.offset.reset": "earliest",
                "reconnect.backoff.max.ms": 200,
            }
        )
        self.consumer.subscribe(["^events-.*"])
        self.read: dict[str, set[bytes]] = {}

    def poll_until(self, topic: str, values: set[bytes], seconds: float = 90) -> None:
        deadline = time.monotonic() + seconds
        while not values <= self.read.get(topic, set()):
            assert time.monotonic() < deadline, f"the records of {topic}"
            message = self.consumer.poll(0.1)
            if message is None or message.error() is not None:
                continue  # a broker being restarted shows as transport errors
            self.read.setdefault(message.topic(), set()).add(message.value())


def _assigned(admin: Any) -> set[str]:
    described = admin.describe_consumer_groups(["by-pattern"])["by-pattern"].result(20)
    (member,) = described.members
    return {tp.topic for tp in member.assignment.topic_partitions}


def test_a_pattern_subscription_picks_up_a_topic_created_later(tmp_path: Path) -> None:
    from confluent_kafka.admin import AdminClient

    broker = BrokerThread(tmp_path / "data", **FAST_HEARTBEATS).start()
    consumer = None
    try:
        admin: Any = AdminClient({"bootstrap.servers": broker.bootstrap})
        _create(admin, "events-a")
        _create(admin, "other")  # does not match: never assigned
        consumer = PatternConsumer(broker.bootstrap)
        consumer.poll_until("events-a", _produce(broker.bootstrap, "events-a"))

        _create(admin, "events-b")
        # Resolved again within Kafka's 10 s minimum interval plus a heartbeat.
        consumer.poll_until("events-b", _produce(broker.bootstrap, "events-b"))
        assignment = consumer.consumer.assignment()
        assert {tp.topic for tp in assignment} == {"events-a", "events-b"}
        assert _assigned(admin) == {"events-a", "events-b"}
        assert set(consumer.read) == {"events-a", "events-b"}
    finally:
        if consumer is not None:
            consumer.consumer.close()
        broker.stop()


def test_the_resolution_survives_a_kill_9(tmp_path: Path) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient

    overrides = [f"{k}={v}" for k, v in FAST_HEARTBEATS.items()]
    broker = BrokerProcess(tmp_path / "data", None, *overrides).start()
    consumer = None
    try:
        admin: Any = AdminClient({"bootstrap.servers": broker.bootstrap})
        _create(admin, "events-a")
        consumer = PatternConsumer(broker.bootstrap)
        consumer.poll_until("events-a", _produce(broker.bootstrap, "events-a"))
        _create(admin, "events-b")
        consumer.poll_until("events-b", _produce(broker.bootstrap, "events-b"))

        broker.kill()
        broker.start()
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        # The replayed resolution: the same topics, before any new one is due.
        assert _assigned(admin) == {"events-a", "events-b"}
        # The consumer goes on reading the topic it got by pattern.
        producer = Producer({"bootstrap.servers": broker.bootstrap})
        producer.produce("events-b", value=b"after-restart", partition=0)
        assert producer.flush(20) == 0
        consumer.poll_until("events-b", {b"after-restart"})
        assert _assigned(admin) == {"events-a", "events-b"}
    finally:
        if consumer is not None:
            consumer.consumer.close()
        broker.stop()
