"""A consumer commits and closes; a new consumer of the same group resumes at
exactly the committed offsets: nothing read twice, nothing skipped."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest

from broker_thread import BrokerThread

pytestmark = pytest.mark.interop

TOTAL = 400
FIRST = 150


def _prepare(bootstrap: str, topic: str) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(20)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(TOTAL):
        producer.produce(topic, key=str(i).encode(), value=str(i).encode())
    assert producer.flush(20) == 0


def confluent_read(bootstrap: str, topic: str, limit: int) -> list[bytes]:
    from confluent_kafka import Consumer

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "resume",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    c.subscribe([topic])
    out: list[bytes] = []
    deadline = time.time() + 30
    while len(out) < limit and time.time() < deadline:
        m = c.poll(0.2)
        if m is not None and m.error() is None:
            out.append(m.value())
            c.commit(message=m, asynchronous=False)
    c.close()
    return out


def kafka_python_read(bootstrap: str, topic: str, limit: int) -> list[bytes]:
    from kafka import KafkaConsumer, OffsetAndMetadata, TopicPartition

    c = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id="resume",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    c.subscribe([topic])
    out: list[bytes] = []
    deadline = time.time() + 30
    while len(out) < limit and time.time() < deadline:
        for tp, messages in c.poll(200, max_records=1).items():
            for m in messages:
                out.append(m.value)
                c.commit(
                    {
                        TopicPartition(tp.topic, tp.partition): OffsetAndMetadata(
                            m.offset + 1, "", -1
                        )
                    }
                )
    c.close()
    return out


def aiokafka_read(bootstrap: str, topic: str, limit: int) -> list[bytes]:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def go() -> list[bytes]:
        c = AIOKafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id="resume",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
        )
        await c.start()
        out: list[bytes] = []
        try:
            deadline = time.time() + 30
            while len(out) < limit and time.time() < deadline:
                batch = await c.getmany(timeout_ms=200, max_records=1)
                for tp, messages in batch.items():
                    for m in messages:
                        out.append(m.value)
                        await c.commit({TopicPartition(tp.topic, tp.partition): m.offset + 1})
        finally:
            await c.stop()
        return out

    return asyncio.run(go())


READERS: dict[str, Callable[[str, str, int], list[bytes]]] = {
    "confluent": confluent_read,
    "kafka-python": kafka_python_read,
    "aiokafka": aiokafka_read,
}


@pytest.mark.parametrize("client", sorted(READERS))
def test_new_consumer_resumes_at_the_committed_offsets(broker: BrokerThread, client: str) -> None:
    topic = f"resume-{client}"
    _prepare(broker.bootstrap, topic)
    read = READERS[client]
    first = read(broker.bootstrap, topic, FIRST)
    assert len(first) == FIRST
    rest = read(broker.bootstrap, topic, TOTAL - FIRST)
    assert len(rest) == TOTAL - FIRST
    assert set(first).isdisjoint(rest), "a message was read again after resuming"
    assert sorted(map(int, first + rest)) == list(range(TOTAL))
