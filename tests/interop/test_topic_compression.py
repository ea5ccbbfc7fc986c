"""A topic's compression.type: the broker stores produced batches in the
topic's codec (Kafka's LogValidator rebuild), and every client reads them."""

from __future__ import annotations

import asyncio
import itertools
import random
import time
from pathlib import Path

import pytest

from kgroups.records.batch import BatchHeader, decode_records, iter_batches
from kgroups.records.compression import GZIP, LZ4, NONE, ZSTD

from broker_thread import BrokerThread

pytestmark = pytest.mark.interop

COUNT = 300

Message = tuple[bytes | None, bytes | None, list[tuple[str, bytes]], int]


def _messages(count: int) -> list[Message]:
    base = int(time.time() * 1000) - 10_000
    return [
        (f"k{i}".encode(), f"value-{i}-".encode() * 20, [("h", str(i).encode())], base + i)
        for i in range(count)
    ]


def _create(bootstrap: str, name: str, configs: dict[str, str]) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, 1, 1, config=configs)])[name].result(20)


def _produce(bootstrap: str, topic: str, compression: str, **extra: object) -> list[Message]:
    from confluent_kafka import Producer

    sent = _messages(COUNT)
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "compression.type": compression,
            "linger.ms": 20,
            "enable.idempotence": True,
            **extra,
        }
    )
    errors: list[object] = []
    for key, value, headers, ts in sent:
        producer.produce(
            topic,
            key=key,
            value=value,
            headers=headers,
            timestamp=ts,
            on_delivery=lambda err, _msg: err and errors.append(err),
        )
    assert producer.flush(30) == 0
    assert errors == []
    return sent


def _stored(broker: BrokerThread, topic: str) -> list[tuple[BatchHeader, bytes]]:
    def read() -> bytes:
        assert broker.broker is not None
        plog = broker.broker.partitions.log(topic, 0)
        return bytes(plog.read(plog.log_start_offset, 1 << 30))

    chunk = broker.call(read)
    return [(h, chunk[p : p + h.size]) for p, h in iter_batches(chunk)]


def _consume_confluent(bootstrap: str, topic: str, count: int) -> list[Message]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    got: list[Message] = []
    deadline = time.time() + 30
    while len(got) < count and time.time() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        assert msg.error() is None, msg.error()
        got.append((msg.key(), msg.value(), list(msg.headers() or []), msg.timestamp()[1]))
    consumer.close()
    return got


def _consume_kafka_python(bootstrap: str, topic: str, count: int) -> list[Message]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    consumer.assign([TopicPartition(topic, 0)])
    consumer.seek_to_beginning()
    got: list[Message] = []
    deadline = time.time() + 30
    while len(got) < count and time.time() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            got += [(r.key, r.value, list(r.headers), r.timestamp) for r in records]
    consumer.close()
    return got


def _consume_aiokafka(bootstrap: str, topic: str, count: int) -> list[Message]:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def scenario() -> list[Message]:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
        await consumer.start()
        got: list[Message] = []
        try:
            consumer.assign([TopicPartition(topic, 0)])
            await consumer.seek_to_beginning()
            deadline = time.time() + 30
            while len(got) < count and time.time() < deadline:
                for records in (await consumer.getmany(timeout_ms=500)).values():
                    got += [(r.key, r.value, list(r.headers), r.timestamp) for r in records]
        finally:
            await consumer.stop()
        return got

    return asyncio.run(scenario())


def test_gzip_batches_are_stored_as_zstd_and_every_client_reads_them(tmp_path: Path) -> None:
    broker = BrokerThread(tmp_path / "data").start()
    try:
        _create(broker.bootstrap, "z", {"compression.type": "zstd"})
        sent = _produce(broker.bootstrap, "z", "gzip")
        stored = _stored(broker, "z")
        assert stored and {h.compression for h, _b in stored} == {ZSTD}
        # The producer's idempotence fields survive the rebuild: sequences run on.
        assert {h.producer_id for h, _b in stored} != {-1}
        sequences = [(h.base_sequence, h.records_count) for h, _b in stored]
        assert sequences[0][0] == 0
        assert all(a + n == b for (a, n), (b, _m) in itertools.pairwise(sequences))
        records = [r for _h, b in stored for r in decode_records(b)]
        assert [r.offset for r in records] == list(range(COUNT))
        assert [(r.key, r.value, list(r.headers), r.timestamp) for r in records] == sent

        assert _consume_confluent(broker.bootstrap, "z", COUNT) == sent
        assert _consume_kafka_python(broker.bootstrap, "z", COUNT) == sent
        assert _consume_aiokafka(broker.bootstrap, "z", COUNT) == sent
    finally:
        broker.stop()


def test_uncompressed_topic_stores_a_compressed_producers_batches_plain(tmp_path: Path) -> None:
    broker = BrokerThread(tmp_path / "data").start()
    try:
        _create(broker.bootstrap, "plain", {"compression.type": "uncompressed"})
        sent = _produce(broker.bootstrap, "plain", "lz4")
        assert {h.compression for h, _b in _stored(broker, "plain")} == {NONE}
        assert _consume_confluent(broker.bootstrap, "plain", COUNT) == sent
    finally:
        broker.stop()


def test_producer_type_keeps_the_producers_codec(tmp_path: Path) -> None:
    broker = BrokerThread(tmp_path / "data").start()
    try:
        _create(broker.bootstrap, "as-sent", {})
        _create(broker.bootstrap, "named", {"compression.type": "producer"})
        for topic in ("as-sent", "named"):
            sent = _produce(broker.bootstrap, topic, "gzip")
            assert {h.compression for h, _b in _stored(broker, topic)} == {GZIP}
            assert _consume_confluent(broker.bootstrap, topic, COUNT) == sent
    finally:
        broker.stop()


def test_broker_compression_type_is_every_topics_default(tmp_path: Path) -> None:
    broker = BrokerThread(
        tmp_path / "data", compression_type="lz4", compression_lz4_level="12"
    ).start()
    try:
        _create(broker.bootstrap, "dflt", {})
        _create(broker.bootstrap, "own", {"compression.type": "producer"})
        sent = _produce(broker.bootstrap, "dflt", "none")
        _produce(broker.bootstrap, "own", "none")
        assert {h.compression for h, _b in _stored(broker, "dflt")} == {LZ4}
        assert {h.compression for h, _b in _stored(broker, "own")} == {NONE}
        assert _consume_kafka_python(broker.bootstrap, "dflt", COUNT) == sent
    finally:
        broker.stop()


def test_transactional_batches_keep_their_markers_and_bits(tmp_path: Path) -> None:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

    broker = BrokerThread(tmp_path / "data").start()
    try:
        _create(broker.bootstrap, "tx", {"compression.type": "zstd"})
        producer = Producer(
            {
                "bootstrap.servers": broker.bootstrap,
                "transactional.id": "tx-1",
                "compression.type": "snappy",
            }
        )
        producer.init_transactions(20)
        producer.begin_transaction()
        for i in range(50):
            producer.produce("tx", key=b"k", value=f"v{i}".encode(), headers=[("n", b"1")])
        producer.commit_transaction(20)

        stored = _stored(broker, "tx")
        data = [h for h, _b in stored if not h.is_control]
        markers = [h for h, _b in stored if h.is_control]
        assert data and all(h.is_transactional and h.compression == ZSTD for h in data)
        assert markers and all(h.compression == NONE for h in markers)

        consumer = Consumer(
            {
                "bootstrap.servers": broker.bootstrap,
                "group.id": "unused",
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
            }
        )
        consumer.assign([TopicPartition("tx", 0, OFFSET_BEGINNING)])
        got = []
        deadline = time.time() + 30
        while len(got) < 50 and time.time() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append((msg.value(), msg.headers()))
        consumer.close()
        assert got == [(f"v{i}".encode(), [("n", b"1")]) for i in range(50)]
    finally:
        broker.stop()


def test_big_batches_are_rebuilt_too(tmp_path: Path) -> None:
    # Payloads of 64 KiB and more are rebuilt on a worker thread before the append.
    from confluent_kafka import Producer

    broker = BrokerThread(tmp_path / "data").start()
    try:
        _create(broker.bootstrap, "big", {"compression.type": "zstd"})
        rng = random.Random(7)
        values = [rng.randbytes(100_000) + b"tail" * 10_000 for _ in range(5)]
        producer = Producer(
            {
                "bootstrap.servers": broker.bootstrap,
                "compression.type": "gzip",
                "linger.ms": 50,
                "message.max.bytes": 2_000_000,
            }
        )
        for i, value in enumerate(values):
            producer.produce("big", key=str(i).encode(), value=value)
        assert producer.flush(30) == 0
        stored = _stored(broker, "big")
        assert {h.compression for h, _b in stored} == {ZSTD}
        assert any(h.size >= 64 * 1024 for h, _b in stored)
        records = [r for _h, b in stored for r in decode_records(b)]
        assert [r.value for r in records] == values
        got = _consume_confluent(broker.bootstrap, "big", len(values))
        assert [value for _k, value, _h, _t in got] == values
    finally:
        broker.stop()
