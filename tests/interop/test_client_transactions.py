"""kgroups' own transactional Producer and read_committed Consumer against a kgroups
broker: consume-transform-produce commits output and input offsets together, an
aborted transaction stays invisible, and a second producer with the same
transactional.id fences the first."""

from __future__ import annotations

import asyncio
import time

import pytest

from kgroups.client import (
    AsyncConsumer,
    AsyncProducer,
    Consumer,
    ConsumerGroupMetadata,
    ConsumerRecord,
    FatalTransactionError,
    OffsetAndMetadata,
    Producer,
    TopicPartition,
)
from kgroups.errors import KafkaError

from broker_thread import BrokerThread
from interop.test_client_support import create_topic, produce

pytestmark = pytest.mark.interop

OUT = TopicPartition("out", 0)


def _read(
    bootstrap: str, isolation: str, expected: int, topic: TopicPartition = OUT
) -> list[bytes]:
    """The values a fresh consumer reads from the start (and nothing more arrives)."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "isolation.level": isolation, "fetch.max.wait.ms": 50}
    )
    try:
        consumer.assign([topic])
        consumer.seek_to_beginning([topic])
        records: list[ConsumerRecord] = []
        deadline = time.monotonic() + 20
        while len(records) < expected and time.monotonic() < deadline:
            records += consumer.poll(0.2)
        end = time.monotonic() + 1
        while time.monotonic() < end:
            records += consumer.poll(0.2)
        return [r.value for r in records if r.value is not None]
    finally:
        consumer.close()


def _transactional(bootstrap: str, transactional_id: str) -> Producer:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id})
    producer.init_transactions(20)
    return producer


def test_consume_transform_produce_commits_output_and_offsets_together(
    broker: BrokerThread,
) -> None:
    bootstrap = broker.bootstrap
    create_topic(bootstrap, "in", 2)
    create_topic(bootstrap, "out", 1)
    produce(bootstrap, "in", [f"v{i}".encode() for i in range(10)])
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "ctp",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    producer = _transactional(bootstrap, "ctp-tx")
    try:
        consumer.subscribe(["in"])
        seen = 0
        deadline = time.monotonic() + 30
        while seen < 10 and time.monotonic() < deadline:
            records = consumer.poll(0.5)
            if not records:
                continue
            producer.begin_transaction()
            positions: dict[TopicPartition, OffsetAndMetadata] = {}
            for r in records:
                producer.send("out", r.value.upper() if r.value else None)
                positions[r.topic_partition] = OffsetAndMetadata(r.offset + 1)
            producer.send_offsets_to_transaction(positions, consumer.group_metadata())
            producer.commit_transaction(20)
            seen += len(records)
        assert seen == 10
        inputs = [TopicPartition("in", 0), TopicPartition("in", 1)]
        committed = consumer.committed(inputs)
        ends = consumer.end_offsets(inputs)
        assert {tp: c.offset if c else None for tp, c in committed.items()} == ends
    finally:
        producer.close()
        consumer.close()
    assert sorted(_read(bootstrap, "read_committed", 10)) == [f"V{i}".encode() for i in range(10)]


def test_an_aborted_transaction_and_its_offsets_stay_invisible(broker: BrokerThread) -> None:
    bootstrap = broker.bootstrap
    create_topic(bootstrap, "out", 1)
    create_topic(bootstrap, "in", 1)
    producer = _transactional(bootstrap, "abort-tx")
    try:
        producer.begin_transaction()
        producer.send("out", b"a1")
        producer.send("out", b"a2")
        producer.flush(20)  # stored in the log, then aborted
        producer.send_offsets_to_transaction(
            {TopicPartition("in", 0): 5}, ConsumerGroupMetadata("g-abort")
        )
        producer.abort_transaction(20)
        producer.begin_transaction()
        producer.send("out", b"c1")
        producer.commit_transaction(20)
    finally:
        producer.close()
    assert _read(bootstrap, "read_committed", 1) == [b"c1"]
    assert _read(bootstrap, "read_uncommitted", 3) == [b"a1", b"a2", b"c1"]
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": "g-abort"})
    try:
        assert reader.committed([TopicPartition("in", 0)]) == {TopicPartition("in", 0): None}
    finally:
        reader.close()


def test_a_second_producer_with_the_same_id_fences_the_first(broker: BrokerThread) -> None:
    bootstrap = broker.bootstrap
    create_topic(bootstrap, "out", 1)
    first = _transactional(bootstrap, "fence-tx")
    second: Producer | None = None
    try:
        first.begin_transaction()
        first.send("out", b"zombie")
        first.flush(20)
        second = _transactional(bootstrap, "fence-tx")  # aborts the first one's transaction
        late = first.send("out", b"late")  # the partition refuses the old epoch
        first.flush(20)
        assert isinstance(late.exception(0), FatalTransactionError)
        with pytest.raises(FatalTransactionError):
            first.commit_transaction(20)
        with pytest.raises(FatalTransactionError):
            first.begin_transaction()
        second.begin_transaction()
        second.send("out", b"alive")
        second.commit_transaction(20)
    finally:
        first.close()
        if second is not None:
            second.close()
    assert _read(bootstrap, "read_committed", 1) == [b"alive"]


def test_the_asyncio_editions_run_transactions(broker: BrokerThread) -> None:
    bootstrap = broker.bootstrap
    create_topic(bootstrap, "out", 1)

    async def scenario() -> list[bytes]:
        producer = AsyncProducer({"bootstrap.servers": bootstrap, "transactional.id": "async-tx"})
        try:
            await producer.init_transactions(20)
            await producer.begin_transaction()
            await producer.send("out", b"dropped")
            await producer.flush(20)  # in the log, then aborted
            unsent = await producer.send("out", b"never sent")
            await producer.abort_transaction(20)
            with pytest.raises(KafkaError, match="aborted"):
                await unsent
            await producer.begin_transaction()
            delivery = await producer.send("out", b"kept")
            await producer.commit_transaction(20)
            assert (await delivery).offset == 2  # after "dropped" and its abort marker
        finally:
            await producer.close()
        consumer = AsyncConsumer(
            {"bootstrap.servers": bootstrap, "isolation.level": "read_committed"}
        )
        try:
            consumer.assign([OUT])
            consumer.seek_to_beginning([OUT])
            records: list[ConsumerRecord] = []
            for _ in range(50):
                records += await consumer.poll(0.2)
                if records:
                    break
            assert await consumer.end_offsets([OUT]) == {OUT: 4}
            return [r.value for r in records if r.value is not None]
        finally:
            await consumer.close()

    assert asyncio.run(scenario()) == [b"kept"]
