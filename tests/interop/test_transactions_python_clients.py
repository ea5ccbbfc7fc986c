"""aiokafka's and kafka-python's transactional producers against the broker:
committed records reach read_committed consumers, aborted ones do not."""

from __future__ import annotations

import asyncio

import pytest

from broker_thread import BrokerThread

pytestmark = pytest.mark.interop


async def _aiokafka_round(bootstrap: str) -> list[bytes]:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic("o", 1, 1)])
    finally:
        await admin.close()
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id="aio")
    await producer.start()
    try:
        async with producer.transaction():
            await producer.send_and_wait("o", b"c1")
        await producer.begin_transaction()
        await producer.send_and_wait("o", b"aborted")
        await producer.abort_transaction()
        async with producer.transaction():
            await producer.send_and_wait("o", b"c2")
    finally:
        await producer.stop()
    from kafka import KafkaProducer

    sync_producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id="kp")
    try:
        sync_producer.init_transactions()
        sync_producer.begin_transaction()
        sync_producer.send("o", b"k1")
        sync_producer.commit_transaction()
    finally:
        sync_producer.close()
    consumer = AIOKafkaConsumer(
        "o",
        bootstrap_servers=bootstrap,
        isolation_level="read_committed",
        auto_offset_reset="earliest",
    )
    await consumer.start()
    got: list[bytes] = []
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 20
        while len(got) < 3 and loop.time() < deadline:
            batches = await consumer.getmany(timeout_ms=200)
            got += [m.value for messages in batches.values() for m in messages]
    finally:
        await consumer.stop()
    return got


def test_aiokafka_and_kafka_python_transactions(broker: BrokerThread) -> None:
    got = asyncio.run(_aiokafka_round(f"127.0.0.1:{broker.port}"))
    assert got == [b"c1", b"c2", b"k1"]
