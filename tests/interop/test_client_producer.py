"""kgroups' own producer against the kgroups broker, checked with other clients."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from typing import Any

import pytest

from kgroups.client import Consumer, ConsumerRecord, Producer, TopicPartition
from kgroups.client.connection import BrokerConnection, ConnectionClosed

from broker_thread import BrokerThread
from interop.test_client_support import create_topic

pytestmark = pytest.mark.interop


def _read_all(bootstrap: str, topic: str, partitions: int) -> list[ConsumerRecord]:
    """Every record of the topic, read with our consumer."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest"})
    try:
        assigned = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(assigned)
        ends = consumer.end_offsets(assigned)
        records: list[ConsumerRecord] = []
        deadline = time.time() + 20
        while any(consumer.position(tp) < end for tp, end in ends.items()):
            assert time.time() < deadline, "the topic was not read to its end in time"
            records += consumer.poll(0.2)
        return records
    finally:
        consumer.close()


@pytest.fixture
def lost_produce_answers(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Break the connection right after the broker answered some Produce requests:
    the batch is stored, but the producer never hears so and must retry it.
    Yields the numbers (from 1) of the Produce requests whose answer is lost."""
    lose: list[int] = []
    seen = [0]
    original = BrokerConnection.send

    async def send(self: BrokerConnection, request: Any, **kwargs: Any) -> Any:
        response = await original(self, request, **kwargs)
        if type(request).__name__ == "ProduceRequest":
            seen[0] += 1
            if seen[0] in lose:
                await self.close()
                raise ConnectionClosed("answer lost (injected)")
        return response

    monkeypatch.setattr(BrokerConnection, "send", send)
    yield lose


@pytest.mark.parametrize("idempotent", [True, False])
def test_a_retried_batch_is_stored_once_with_idempotence(
    broker: BrokerThread, lost_produce_answers: list[int], idempotent: bool
) -> None:
    topic = f"idempotence-{idempotent}"
    create_topic(broker.bootstrap, topic, 1)
    lost_produce_answers += [2, 5]
    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "enable.idempotence": idempotent,
            "linger.ms": 1,
            "batch.size": 2000,
            "retry.backoff.ms": 10,
        }
    )
    values = [f"v{i:04d}".encode() for i in range(2000)]
    try:
        futures = [producer.send(topic, v) for v in values]
        producer.flush(30)
        offsets = [f.result(10).offset for f in futures]
    finally:
        producer.close()
    records = _read_all(broker.bootstrap, topic, 1)
    read = [r.value for r in records]
    if idempotent:
        assert read == values, (
            f"stored twice, lost or out of order: read {len(read)} from offset "
            f"{records[0].offset if records else None}, unknown offsets {offsets.count(-1)}"
        )
        # Each record's metadata names where it is, unless its batch was stored by
        # the attempt whose answer was lost (then the offset is unknown).
        known = [(o, v) for o, v in zip(offsets, values, strict=True) if o >= 0]
        assert len(known) > len(values) // 2
        assert all(records[o].value == v for o, v in known)
    else:
        # Without idempotence the broker cannot tell a retry from new data: this
        # is what the test above guards against.
        assert len(read) > len(values)
        assert set(read) == set(values)


def test_keyed_records_land_where_the_java_partitioner_puts_them(broker: BrokerThread) -> None:
    from confluent_kafka import Producer as ConfluentProducer

    topic = "keyed"
    create_topic(broker.bootstrap, topic, 6)
    keys = [f"key-{i}".encode() for i in range(200)]
    ours = Producer({"bootstrap.servers": broker.bootstrap})
    try:
        mine = {k: ours.send(topic, b"ours", key=k) for k in keys}
        ours.flush(20)
        placed = {k: f.result().partition for k, f in mine.items()}
    finally:
        ours.close()
    # librdkafka's murmur2_random is the Java client's keyed partitioner.
    theirs: dict[bytes, int] = {}
    confluent = ConfluentProducer(
        {"bootstrap.servers": broker.bootstrap, "partitioner": "murmur2_random"}
    )

    def delivered(error: Any, message: Any) -> None:
        assert error is None
        theirs[message.key()] = message.partition()

    for k in keys:
        confluent.produce(topic, b"theirs", key=k, on_delivery=delivered)
    assert confluent.flush(20) == 0
    assert placed == theirs
    assert len(set(placed.values())) == 6


@pytest.mark.parametrize("compression", ["gzip", "snappy", "lz4", "zstd"])
def test_compressed_batches_are_read_by_librdkafka(broker: BrokerThread, compression: str) -> None:
    from confluent_kafka import Consumer as ConfluentConsumer

    topic = f"compressed-{compression}"
    create_topic(broker.bootstrap, topic, 2)
    values = [f"{compression}-{i}".encode() * 10 for i in range(500)]
    producer = Producer({"bootstrap.servers": broker.bootstrap, "compression.type": compression})
    try:
        for v in values:
            producer.send(topic, v, headers=[("h", b"x")])
        producer.flush(20)
    finally:
        producer.close()
    consumer = ConfluentConsumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": topic, "auto.offset.reset": "earliest"}
    )
    got: list[bytes] = []
    try:
        consumer.subscribe([topic])
        deadline = time.time() + 20
        while time.time() < deadline:
            message = consumer.poll(0.1)
            if message is not None and not message.error():
                got.append(message.value())
                assert message.headers() == [("h", b"x")]
            if len(got) >= len(values):
                break
    finally:
        consumer.close()
    assert sorted(got) == sorted(values)
    # And our consumer reads them back too.
    assert sorted(r.value for r in _read_all(broker.bootstrap, topic, 2)) == sorted(values)


def test_keyless_records_stick_to_a_partition_for_a_batch(broker: BrokerThread) -> None:
    topic = "sticky"
    create_topic(broker.bootstrap, topic, 4)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "batch.size": 4096})
    try:
        futures = [producer.send(topic, b"x" * 100) for _ in range(400)]
        producer.flush(20)
        partitions = [f.result().partition for f in futures]
    finally:
        producer.close()
    switches = sum(1 for a, b in itertools.pairwise(partitions) if a != b)
    # About one switch per 4 KB of records (~33 records of ~120 bytes), not one per record.
    assert 5 <= switches <= 20
    assert len(set(partitions)) > 1
