"""Offsets sent to a transaction by a member of a group whose coordinator
fails to store them: the client is told (it sends them again once the
coordinator can store them), so the transaction commits with them and a
consumer restarting from the group's offsets does not process its input
again (exactly-once).

The append fails as it does when the coordinator loses its partition while
writing (a store cut, a lease lost): here through the broker's append fault,
cleared a moment later.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Message, Producer, TopicPartition

from kgroups.testing import EmbeddedBroker
from kgroups.testing.helpers import KafkaHelpers

INPUTS = 10


@pytest.fixture
def broker() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker() as b:
        yield b


def _consume(consumer: Consumer, count: int) -> list[Message]:
    got: list[Message] = []
    deadline = time.monotonic() + 30
    while len(got) < count:
        assert time.monotonic() < deadline, f"{len(got)} of {count} inputs"
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            got.append(message)
    return got


def test_offsets_the_coordinator_failed_to_store_are_sent_again(
    broker: EmbeddedBroker,
) -> None:
    helpers = KafkaHelpers(broker.bootstrap_servers)
    helpers.create_topic("in")
    helpers.create_topic("out")
    helpers.produce("in", [f"in-{i}".encode() for i in range(INPUTS)])
    settings = {
        "bootstrap.servers": broker.bootstrap_servers,
        "group.id": "eo",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "isolation.level": "read_committed",
        "session.timeout.ms": 6000,
    }
    consumer = Consumer(settings)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": "eo-1"})
    try:
        producer.init_transactions(30)
        consumer.subscribe(["in"])
        inputs = _consume(consumer, INPUTS)  # a member of the group, with its generation
        producer.begin_transaction()
        for m in inputs:
            producer.produce("out", m.value() + b"-out", partition=0)

        broker.faults.fail_appends("__consumer_offsets")
        cleared = threading.Timer(1.0, broker.faults.clear)
        cleared.start()
        try:
            producer.send_offsets_to_transaction(
                [TopicPartition("in", 0, INPUTS)], consumer.consumer_group_metadata(), 30
            )
        finally:
            cleared.join()
        producer.commit_transaction(30)
    finally:
        consumer.close()

    fresh = Consumer(settings)
    try:
        (committed,) = fresh.committed([TopicPartition("in", 0)], 30)
        assert committed.offset == INPUTS
    finally:
        fresh.close()
    assert len(helpers.read("out", INPUTS, timeout=10)) == INPUTS
