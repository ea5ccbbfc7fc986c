"""A confluent-kafka consumer with ``group.protocol=consumer`` subscribed to a
pattern: librdkafka sends it as the heartbeat's regex, the broker resolves
it, and a topic created after the group formed is assigned and consumed."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from broker_thread import BrokerThread
from interop.test_consumer_protocol import FAST_HEARTBEATS

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


def test_a_pattern_subscription_picks_up_a_topic_created_later(tmp_path: Path) -> None:
    from confluent_kafka import Consumer
    from confluent_kafka.admin import AdminClient

    broker = BrokerThread(tmp_path / "data", **FAST_HEARTBEATS).start()
    consumer = None
    try:
        admin: Any = AdminClient({"bootstrap.servers": broker.bootstrap})
        _create(admin, "events-a")
        _create(admin, "other")  # does not match: never assigned
        consumer = Consumer(
            {
                "bootstrap.servers": broker.bootstrap,
                "group.id": "by-pattern",
                "group.protocol": "consumer",
                "auto.offset.reset": "earliest",
            }
        )
        consumer.subscribe(["^events-.*"])
        expected = _produce(broker.bootstrap, "events-a")
        read: dict[str, set[bytes]] = {}

        def poll_until(done: Any, what: str) -> None:
            deadline = time.monotonic() + 90
            while not done():
                assert time.monotonic() < deadline, what
                message = consumer.poll(0.1)
                if message is None:
                    continue
                assert message.error() is None, message.error()
                read.setdefault(message.topic(), set()).add(message.value())

        poll_until(lambda: read.get("events-a") == expected, "the records of events-a")

        _create(admin, "events-b")
        later = _produce(broker.bootstrap, "events-b")
        # Resolved again within Kafka's 10 s minimum interval plus a heartbeat.
        poll_until(lambda: read.get("events-b") == later, "the records of events-b")
        assert {tp.topic for tp in consumer.assignment()} == {"events-a", "events-b"}
        assert "other" not in read

        described = admin.describe_consumer_groups(["by-pattern"])["by-pattern"].result(20)
        (member,) = described.members
        assigned = {tp.topic for tp in member.assignment.topic_partitions}
        assert assigned == {"events-a", "events-b"}
    finally:
        if consumer is not None:
            consumer.close()
        broker.stop()
