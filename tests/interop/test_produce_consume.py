"""Real client libraries produce to and consume from a kgroups broker."""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict

import pytest

from broker_thread import BrokerThread

pytestmark = pytest.mark.interop

COUNT = 10_000
PARTITIONS = 3


def _expected(count: int) -> list[tuple[bytes, bytes, list[tuple[str, bytes]]]]:
    return [
        (f"key-{i % 97}".encode(), f"value-{i}".encode() * 3, [("h", str(i).encode())])
        for i in range(count)
    ]


def _check(
    received: dict[int, list[tuple[int, bytes, bytes, list[tuple[str, bytes]], int]]],
    count: int,
    started_ms: int,
) -> None:
    """Every message once, offsets in order per partition, payloads intact."""
    total = sum(len(v) for v in received.values())
    assert total == count
    seen = set()
    for _partition, records in received.items():
        offsets = [r[0] for r in records]
        assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)
        # Within one key (hence one partition) production order is kept.
        last_index: dict[bytes, int] = {}
        for _offset, key, value, headers, timestamp in records:
            index = int(value[len(b"value-") : len(value) // 3])
            assert key == f"key-{index % 97}".encode()
            assert headers == [("h", str(index).encode())]
            assert started_ms - 1000 <= timestamp <= int(time.time() * 1000) + 1000
            assert last_index.get(key, -1) < index
            last_index[key] = index
            seen.add(index)
    assert seen == set(range(count))


def _create_topic(bootstrap: str, name: str, partitions: int = PARTITIONS) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(20)


@pytest.mark.parametrize("compression", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_confluent_kafka(broker: BrokerThread, compression: str) -> None:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

    count = COUNT if compression == "none" else 2000
    topic = f"ck-{compression}"
    _create_topic(broker.bootstrap, topic)
    started = int(time.time() * 1000)
    producer = Producer(
        {"bootstrap.servers": broker.bootstrap, "compression.type": compression, "linger.ms": 5}
    )
    errors: list[object] = []
    for key, value, headers in _expected(count):
        producer.produce(
            topic,
            key=key,
            value=value,
            headers=headers,
            on_delivery=lambda err, _msg: err and errors.append(err),
        )
        producer.poll(0)
    assert producer.flush(30) == 0
    assert errors == []

    consumer = Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": "unused", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    received: dict[int, list[tuple[int, bytes, bytes, list[tuple[str, bytes]], int]]] = defaultdict(
        list
    )
    deadline = time.time() + 60
    got = 0
    while got < count and time.time() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        assert msg.error() is None, msg.error()
        received[msg.partition()].append(
            (msg.offset(), msg.key(), msg.value(), list(msg.headers() or []), msg.timestamp()[1])
        )
        got += 1
    consumer.close()
    _check(received, count, started)


def test_kafka_python(broker: BrokerThread) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    topic = "kp"
    _create_topic(broker.bootstrap, topic)
    started = int(time.time() * 1000)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=5)
    futures = [producer.send(topic, key=k, value=v, headers=h) for k, v, h in _expected(COUNT)]
    producer.flush(30)
    for f in futures:
        f.get(10)
    producer.close()

    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False)
    parts = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    consumer.assign(parts)
    consumer.seek_to_beginning(*parts)
    received: dict[int, list[tuple[int, bytes, bytes, list[tuple[str, bytes]], int]]] = defaultdict(
        list
    )
    deadline = time.time() + 60
    got = 0
    while got < COUNT and time.time() < deadline:
        for tp, messages in consumer.poll(500).items():
            for m in messages:
                received[tp.partition].append(
                    (m.offset, m.key, m.value, list(m.headers), m.timestamp)
                )
                got += 1
    consumer.close()
    _check(received, COUNT, started)


def test_aiokafka(broker: BrokerThread) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    topic = "aio"
    _create_topic(broker.bootstrap, topic)
    started = int(time.time() * 1000)

    async def scenario() -> dict[int, list[tuple[int, bytes, bytes, list[tuple[str, bytes]], int]]]:
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=5)
        await producer.start()
        try:
            futures = [
                await producer.send(topic, key=k, value=v, headers=h)
                for k, v, h in _expected(COUNT)
            ]
            await asyncio.gather(*futures)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False)
        await consumer.start()
        received: dict[int, list[tuple[int, bytes, bytes, list[tuple[str, bytes]], int]]] = (
            defaultdict(list)
        )
        try:
            parts = [TopicPartition(topic, p) for p in range(PARTITIONS)]
            consumer.assign(parts)
            await consumer.seek_to_beginning(*parts)
            got = 0
            deadline = time.time() + 60
            while got < COUNT and time.time() < deadline:
                batch = await consumer.getmany(timeout_ms=500)
                for tp, messages in batch.items():
                    for m in messages:
                        received[tp.partition].append(
                            (m.offset, m.key, m.value, list(m.headers), m.timestamp)
                        )
                        got += 1
        finally:
            await consumer.stop()
        return received

    _check(asyncio.run(scenario()), COUNT, started)


@pytest.mark.parametrize("compression", ["gzip", "snappy", "lz4", "zstd"])
def test_kafka_python_compression(broker: BrokerThread, compression: str) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    topic = f"kpc-{compression}"
    _create_topic(broker.bootstrap, topic, 1)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, compression_type=compression)
    for i in range(500):
        producer.send(topic, key=b"k", value=f"v{i}".encode() * 10)
    producer.flush(30)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False)
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    values: list[bytes] = []
    deadline = time.time() + 30
    while len(values) < 500 and time.time() < deadline:
        for messages in consumer.poll(500).values():
            values.extend(m.value for m in messages)
    consumer.close()
    assert values == [f"v{i}".encode() * 10 for i in range(500)]
